"""The scorecard from made-up measurements whose answer is known: groups, verdict words, tables."""

import csv
import io
import math

import numpy as np
import pytest

from landscape.report import tables
from landscape.report.measures import MEASURES
from landscape.report.scorecard import build

BATCHES, SEEDS = (16, 64, 256, 1024), (0, 1, 2)


def results(rising=("lambda_max", "trace"), falling=(), seed=0):
    """12 runs: ``rising`` measures grow with the batch, ``falling`` shrink, the rest are noise."""
    rng = np.random.default_rng(seed)
    out = []
    for b in BATCHES:
        for s in SEEDS:
            level = math.log2(b)
            values = {m.key: float(rng.standard_normal()) for m in MEASURES}
            values.update(train_error=0.0, test_error=1.0 + level / 4 + 0.01 * s)
            values["gap"] = values["test_error"] - values["train_error"]
            for key in rising:
                values[key] = level + 0.1 * rng.standard_normal()
            for key in falling:
                values[key] = -level + 0.1 * rng.standard_normal()
            out.append(
                {
                    "run": {"name": f"sgd_b{b}_s{s}", "recipe": "sgd", "batch_size": b, "seed": s},
                    "values": values,
                    "errors": {"trace": 0.5},
                }
            )
    return out


def test_groups_hold_mean_and_sd_over_seeds():
    card = build(results())
    assert [(g.recipe, g.batch_size, g.seeds) for g in card.groups] == [("sgd", b, [0, 1, 2]) for b in BATCHES]
    g = card.groups[-1]
    assert g.stats["test_error"] == (pytest.approx(1.0 + 10 / 4 + 0.01), pytest.approx(0.01), 3)


def test_verdict_names_the_measures_that_separate_and_those_that_do_not():
    card = build(results(rising=("lambda_max", "trace"), falling=("surface_rise",)))
    v = card.verdict
    assert card.correlations["lambda_max"]["batch_size"].p_value < 0.05
    assert "Test error rises with batch size" in v
    assert "larger at large batch: λmax (τ = +" in v and "trace (τ = +" in v
    assert "smaller at large batch: 2-D rise (τ = -" in v
    assert "Not separating them: " in v and "ε-sharpness (τ = " in v
    assert "Tracking the generalization gap across runs: λmax" in v


def test_verdict_says_no_when_no_measure_separates_the_batch_sizes():
    v = build(results(rising=())).verdict
    assert "No sharpness measure separates the batch sizes at p < 0.05." in v
    assert "No sharpness measure tracks the generalization gap" in v


def test_one_batch_size_has_nothing_to_compare():
    one = [r for r in results() if r["run"]["batch_size"] == 64]
    assert "no batch size to compare" in build(one).verdict


def test_too_few_runs_for_any_p_below_alpha_is_said():
    few = [r for r in results() if r["run"]["batch_size"] in (16, 1024) and r["run"]["seed"] < 2]
    v = build(few).verdict
    assert "smallest p-value any order of 4 runs can reach is 0.33" in v


def test_tables_carry_every_number():
    card = build(results())
    rows = list(csv.DictReader(io.StringIO(tables.groups_csv(card))))
    assert [int(r["batch_size"]) for r in rows] == list(BATCHES)
    assert float(rows[0]["lambda_max_mean"]) == pytest.approx(card.groups[0].stats["lambda_max"][0], rel=1e-5)
    runs = list(csv.DictReader(io.StringIO(tables.runs_csv(card))))
    assert len(runs) == 12 and float(runs[0]["trace_stderr"]) == 0.5
    corr = list(csv.DictReader(io.StringIO(tables.correlations_csv(card))))
    assert {r["measure"] for r in corr} == {m.key for m in MEASURES}

    md = tables.markdown(card, description="12 runs.")
    table = [line for line in md.splitlines() if line.startswith("| sgd |")]
    assert len(table) == 4 and all(line.count("|") == len(MEASURES) + 4 for line in table)
    assert " ± " in table[0] and "**Verdict.**" in md and "**+" in md  # significant τ in bold

    tex = tables.latex(card)
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == 2
    body = [line for line in tex.splitlines() if line.startswith("sgd &")]
    assert len(body) == 4 and all(line.count("&") == len(MEASURES) + 2 for line in body)
    assert r"\pm" in body[0] and r"$\mathbf{+" in tex and "e-0" not in tex  # 1e-05 as 1\times10^{-5}
    assert tables.tex_number(3.6e-05) == r"3.6\times10^{-5}" and tables.tex_number(math.nan) == "--"


def test_left_out_runs_and_runs_away_from_a_minimum_are_said():
    runs = results()
    runs[0]["values"]["train_error"] = 18.0
    card = build(runs, left_out=["sgd_b2048_s0"])
    assert "Caution: 1 of 12 runs have a training error above 1 % (sgd_b16_s0)" in card.verdict
    assert "Left out (not finished): sgd_b2048_s0." in tables.markdown(card)
    assert "% Left out (not finished): sgd_b2048_s0" in tables.latex(card)
    assert card.record()["left_out"] == ["sgd_b2048_s0"]


def test_missing_values_are_dashes():
    assert tables.plus_minus(math.nan, math.nan) == "–" and tables.plus_minus(1.0, math.nan) == "1"
    assert tables.plus_minus(0.12345, 0.0123) == "0.123 ± 0.012"
    assert tables.plus_minus(2.25, 0.0017) == "2.2500 ± 0.0017"  # the mean to the spread's precision
    assert tables.plus_minus(13.0, 3.5) == "13.0 ± 3.5" and tables.plus_minus(2.0, 0.0) == "2 ± 0"
