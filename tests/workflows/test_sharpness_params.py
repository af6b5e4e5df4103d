"""The sharpness measures' settings as command parameters: one field per setting of ``SharpnessConfig``
but its seed, with that setting's default, listed under one heading and the search methods as choices;
the configuration made of them carries every value and the command's seed, and is checked there."""

import dataclasses

import pytest

from landscape.curvature.search import METHODS
from landscape.curvature.sharpness import SharpnessConfig
from landscape.errors import ConfigError
from landscape.workflows.curvature import CurvatureParams
from landscape.workflows.report import ReportParams
from landscape.workflows.sharpness_params import GROUP, SharpnessParams


def test_one_field_per_setting_with_the_measures_own_default_under_one_heading():
    fields = {f.name: f for f in dataclasses.fields(SharpnessParams)}
    defaults = {f.name: f.default for f in dataclasses.fields(SharpnessConfig) if f.name != "seed"}
    assert {name: f.default for name, f in fields.items()} == defaults  # the seed is the command's own
    assert {f.metadata["group"] for f in fields.values()} == {GROUP} == {"sharpness measures"}
    assert fields["method"].metadata["choices"] == METHODS
    for command in (CurvatureParams, ReportParams):  # both commands that make the measures take them all
        assert set(fields) <= {f.name for f in dataclasses.fields(command)}


def test_the_configuration_carries_every_value_and_the_seed_given():
    params = SharpnessParams(rho=0.05, rho_l2=0.2, eta=0.01, epsilon=0.002, subspace=10, radius=0.25,
                             directions=4, draws=5, m=32, method="lbfgsb", iterations=7, restarts=2,
                             extensions=1, search_tol=0.05)  # fmt: skip
    config = params.sharpness_config(seed=11)
    assert config == SharpnessConfig(0.05, 0.2, 0.01, 0.002, 10, 0.25, 4, 5, 32, "lbfgsb", 7, 2, 0.05, 1, 11)
    assert SharpnessParams().sharpness_config(seed=0) == SharpnessConfig()


def test_bad_values_are_refused_by_the_measures_own_checks():
    with pytest.raises(ConfigError, match="rho=-0.1: expected a positive number"):
        SharpnessParams(rho=-0.1).sharpness_config(seed=0)
    with pytest.raises(ConfigError, match="draws=1: expected at least 2 draws"):
        SharpnessParams(draws=1).sharpness_config(seed=0)
