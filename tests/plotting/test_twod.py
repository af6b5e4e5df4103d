"""2-D maps: several surfaces as panels of one figure with one scale."""

from __future__ import annotations

import numpy as np

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
