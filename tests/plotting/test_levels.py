"""Contour levels: the reference code's arange when given, round and robust when chosen."""

from __future__ import annotations

import numpy as np
import pytest

from landscape.plotting.levels import levels_for


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
