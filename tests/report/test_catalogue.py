"""The catalogue every table, figure and verdict reads its words from: each scorecard measure once, each
with a definition and a citation, the sharpness measures named after those of ``curvature.sharpness``,
and only measures of the minimum's shape weighed as sharpness."""

import pytest

from landscape.curvature import fisher_rao
from landscape.curvature import sharpness as searches
from landscape.report.catalogue import BY_KEY, MEASURES, SHARPNESS, definition


def test_every_measure_is_listed_once_and_found_by_its_key():
    keys = [m.key for m in MEASURES]
    assert len(keys) == len(set(keys)) == 17
    assert list(BY_KEY) == keys and all(BY_KEY[m.key] is m for m in MEASURES)
    assert {m.invariant for m in MEASURES} <= {"yes", "layer-wise", "no"}


def test_each_sharpness_key_names_a_measure_of_the_searches_module_and_takes_its_words():
    assert set(SHARPNESS.values()) == set(searches.MEASURES)  # every search reported, none twice
    for key, name in SHARPNESS.items():
        assert BY_KEY[key].sharpness
        assert definition(key) == searches.DEFINITIONS[name]
    assert definition("adaptive_sharpness") == (
        "max f(w + δ) − f(w) over |δᵢ| ≤ ρ |wᵢ| (worst case, ℓ∞)",
        "Kwon et al. 2021 (ASAM); Andriushchenko et al. 2023",
    )


def test_the_other_measures_have_their_own_words_and_an_unknown_key_has_none():
    assert definition("gap") == ("test error − train error, in points", "")
    assert definition("lambda_max")[1] == "Keskar et al. 2017" and definition("trace")[1] == "Hutchinson 1990"
    assert definition("fisher_rao") == (fisher_rao.DEFINITION, fisher_rao.CITATION)
    assert all(definition(m.key)[0] for m in MEASURES)  # no measure reported without its definition
    with pytest.raises(KeyError):
        definition("sharpness")


def test_only_the_shape_of_the_minimum_is_weighed_as_sharpness():
    outcomes = {"train_loss", "test_loss", "train_error", "test_error", "gap", "noise_scale"}
    assert {m.key for m in MEASURES if not m.sharpness} == outcomes  # training's results, not a shape
    assert BY_KEY["lambda_max"].invariant == "no" and BY_KEY["adaptive_sharpness"].invariant == "yes"
