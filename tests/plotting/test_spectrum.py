"""Spectral densities side by side: one Gaussian width and the same axes in every panel."""

from __future__ import annotations

import numpy as np
import pytest

from landscape.curvature.density import Density
from landscape.plotting.spectrum import FLOOR, common_sigma, draw, draw_panels, from_record


def density(nodes, seed=0) -> Density:
    """Two runs of quadrature over ``nodes`` with random weights summing to 1."""
    rng = np.random.default_rng(seed)
    nodes = np.array([nodes, np.asarray(nodes) * 1.01])
    weights = rng.random(nodes.shape)
    return Density(nodes, weights / weights.sum(axis=1, keepdims=True), nodes.shape[1], 2, 2 * nodes.shape[1])


def test_a_record_gives_back_the_density():
    d = density([-0.1, 0.0, 0.2, 3.0])
    back = from_record({**d.record(), "dtype": "float32"})
    assert np.array_equal(back.nodes, d.nodes) and np.array_equal(back.weights, d.weights)
    assert (back.steps, back.runs, back.products) == (d.steps, d.runs, d.products)


def test_panels_share_one_smoothing_width_and_the_same_limits():
    # a narrow spectrum in one panel, a wide one in the other: widths chosen per panel would differ 100-fold
    narrow = {"batch 16": density([-0.01, 0.0, 0.02, 0.5]), "batch 1024": density([0.0, 0.1, 0.3, 1.0], 1)}
    wide = {"batch 16": density([-1.0, 0.0, 2.0, 50.0], 2)}
    fig = draw_panels({"naive": narrow, "linear": wide})
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in axes] == ["naive", "linear"]
    assert axes[0].get_xlim() == axes[1].get_xlim() and axes[0].get_ylim() == axes[1].get_ylim()
    sigma = common_sigma([*narrow.values(), *wide.values()])
    assert sigma == pytest.approx(0.01 * (50.5 - -1.01))  # the span of every panel's nodes
    peak = max(float(d.smoothed(axes[0].lines[0].get_xdata(), sigma).max()) for d in [*narrow.values(), *wide.values()])
    for ax, densities in zip(axes, (narrow, wide)):
        curves = [line for line in ax.lines if line.get_linestyle() == "-"]
        assert len(curves) == len(densities)
        for line, d in zip(curves, densities.values()):
            x = np.asarray(line.get_xdata())
            assert np.allclose(line.get_ydata(), np.maximum(d.smoothed(x, sigma), FLOOR * peak))
    assert f"{sigma:.2g}" in axes[0].get_ylabel()
    colours = {
        tuple(line.get_color()) if not isinstance(line.get_color(), str) else line.get_color()
        for ax in axes
        for line in ax.lines[:1]
    }
    assert len(colours) == 1  # "batch 16" has the same colour in both panels


def test_one_panel_as_before():
    fig = draw({"network": density([-0.1, 0.0, 0.2, 3.0])})
    assert len([ax for ax in fig.axes if ax.lines]) == 1
