"""2-D maps: several surfaces as panels of one figure with one scale, log by default where it spans decades;
the trained model marked without hiding its basin."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import LogNorm

from landscape.io.surface_file import Surface
from landscape.plotting.levels import Style2D
from landscape.plotting.twod import draw_2d


def test_several_files_as_a_grid_of_panels_with_one_scale():
    x = y = np.linspace(-1, 1, 5)
    bowls = [
        Surface(
            f"b{k}.h5", x, y, {"train_loss": (k + 1) * (x[:, None] ** 2 + y[None, :] ** 2)}, np.ones((5, 5), dtype=bool)
        )
        for k in range(3)
    ]
    fig = draw_2d(bowls, "contourf", style=Style2D(columns=2))
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    rows = sorted({round(ax.get_position().y0, 3) for ax in panels})
    assert len(panels) == 3 and len(rows) == 2  # 2 + 1 panels in two rows
    assert len({tuple(ax.collections[0].get_array().shape) for ax in panels}) >= 1
    levels = {tuple(np.round(ax.collections[0].levels, 9)) for ax in panels}
    assert len(levels) == 1  # one set of levels for all


def bowl(low: float, name="b.h5") -> Surface:
    x = y = np.linspace(-1, 1, 9)
    values = {"train_loss": low + 40 * (x[:, None] ** 2 + y[None, :] ** 2), "train_acc": np.full((9, 9), 90.0)}
    return Surface(name, x, y, values, np.ones((9, 9), dtype=bool))


def test_levels_are_spaced_by_factors_by_default_where_the_loss_spans_decades():
    deep, shallow = bowl(0.002), bowl(5.0)
    fill = draw_2d([deep], "contourf").axes[0].collections[0]
    assert isinstance(fill.norm, LogNorm) and np.allclose(
        np.diff(np.log10(fill.levels)), np.diff(np.log10(fill.levels))[0]
    )
    assert not isinstance(draw_2d([shallow], "contourf").axes[0].collections[0].norm, LogNorm)
    assert not isinstance(draw_2d([deep], "contourf", style=Style2D(log=False)).axes[0].collections[0].norm, LogNorm)
    assert not isinstance(draw_2d([deep], "contourf", "train_acc").axes[0].collections[0].norm, LogNorm)
    lines = draw_2d([deep], "contour")
    assert "log scale" in lines.texts[0].get_text() and "+ = trained model" in lines.texts[0].get_text()


def test_the_trained_model_is_a_thin_cross_that_leaves_the_basin_visible():
    for kind, colour in (("contourf", "white"), ("contour", "black")):
        ax = draw_2d([bowl(0.002)], kind).axes[0]
        (mark,) = [line for line in ax.lines if line.get_marker() != "None"]
        assert mark.get_marker() == "+" and mark.get_color() == colour and mark.get_markersize() <= 10
        assert (mark.get_xdata()[0], mark.get_ydata()[0]) == (0.0, 0.0)
