"""Contour levels: the reference code's arange when given, round and robust when chosen; the scale, log
by default where the values span more than two decades."""

from __future__ import annotations

import numpy as np
import pytest

from landscape.errors import UsageError
from landscape.plotting.levels import Style2D, levels_for, log_scale, spans_decades


def test_given_levels_follow_the_reference_arange():
    levels = levels_for([np.array([[0.0, 20.0]])], vmin=0.1, vmax=10, vlevel=0.5)
    assert levels == pytest.approx(np.arange(0.1, 10 + 1e-9, 0.5))


def test_automatic_levels_are_round_and_ignore_a_diverged_corner():
    a, b = np.meshgrid(np.linspace(-1, 1, 41), np.linspace(-1, 1, 31))
    bowl = 0.2 + a**2 + b**2
    levels = levels_for([bowl])
    assert 12 <= len(levels) <= 30 and levels[0] <= bowl.min() and levels[-1] >= 0.9 * bowl.max()
    bowl[-3:, -3:] = 1e4  # a diverged corner
    levels = levels_for([bowl])
    assert levels[-1] < 10 and 12 <= len(levels) <= 30


def test_log_levels_are_evenly_spaced_in_log():
    levels = levels_for([np.array([0.01, 0.1, 5.0, 50.0])], log=True)
    assert (levels > 0).all() and np.allclose(np.diff(np.log10(levels)), np.diff(np.log10(levels))[0])


@pytest.mark.parametrize(
    "values, log",
    [
        ([0.003, 0.2, 45.0], True),  # a basin of 0.003 under a rim of 45: four decades
        ([0.5, 3.0, 49.0], False),  # under two decades
        ([0.1, 10.0], False),  # exactly two decades: not more than two
        ([0.1, 10.01], True),
        ([0.0, 0.001, 50.0], False),  # a loss of exactly 0 has no logarithm
        ([-1.0, 0.01, 50.0], False),  # a plug-in's negative loss
        ([np.nan, 0.01, np.inf, 5.0], True),  # not computed and diverged points do not decide
        ([np.nan, np.nan], False),
    ],
)
def test_auto_scale_is_log_exactly_where_positive_values_span_more_than_two_decades(values, log):
    assert spans_decades([np.array(values)]) is log
    assert log_scale("auto", [np.array(values)]) is log
    assert log_scale(True, [np.array(values)]) is True and log_scale(False, [np.array(values)]) is False


def test_auto_scale_looks_at_every_panel_and_at_a_given_lower_limit():
    assert log_scale("auto", [np.array([0.01, 0.05]), np.array([[2.0, 9.0]])])  # decades across two panels
    assert not log_scale("auto", [np.array([0.01, 9.0])], lowest=0.0)  # --loss_min 0: linear
    style = Style2D()
    assert style.log == "auto" and style.uses_log([np.array([0.001, 50.0])])
    assert not Style2D(vlevel=0.5).uses_log([np.array([0.001, 50.0])])  # a step in loss units: linear
    assert not Style2D(log=False).uses_log([np.array([0.001, 50.0])])
    assert Style2D(log=True).uses_log([np.array([1.0, 2.0])])
    with pytest.raises(UsageError, match="expected True, False or 'auto'"):
        Style2D(log="sometimes")


def test_auto_scale_judges_the_values_within_the_limits_given():
    spike = np.array([1.0, 2.0, 6.0, 1e4])  # one diverged corner far above --vmax
    assert Style2D().uses_log([spike])
    assert not Style2D(vmax=6.0).uses_log([spike])  # 1 to 6 drawn: linear
    assert Style2D(vmin=0.01).uses_log([np.array([0.5, 3.0])]) is False
