"""The 3-D surface, cut open above its top level."""

from __future__ import annotations

import numpy as np
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

from landscape.io.surface_file import Surface
from landscape.plotting.levels import Style2D
from landscape.plotting.twod import draw_2d


def test_a_3d_surface_above_its_top_level_is_cut_open_not_pressed_flat():
    """Li et al.'s 3-D figures clip at a top level; a flat table top there would read as a plateau of the
    landscape.  The part above the cut is left out and the cut's rim drawn, on a refined grid."""
    x = y = np.linspace(-1, 1, 21)
    z = 20 * (x[:, None] ** 2 + y[None, :] ** 2)
    s = Surface("bowl.h5", x, y, {"train_loss": z}, np.ones_like(z, dtype=bool))
    fig = draw_2d([s], "surface", style=Style2D(vmin=0.5, vmax=10, vlevel=0.5))
    ax = fig.axes[0]
    polys = [c for c in ax.collections if isinstance(c, Poly3DCollection)]
    assert polys and "cut open above 10" in " ".join(t.get_text() for t in fig.texts)
    # mplot3d has no public getter for the 3-D faces; its private ones hold padding where
    # _invalid_vertices is set (whatever memory held, so it must be masked, not just filtered)
    heights = np.concatenate(
        [
            np.ma.MaskedArray(
                np.asarray(p._faces)[..., 2], np.broadcast_to(p._invalid_vertices, np.shape(p._faces)[:2])
            ).compressed()
            for p in polys
        ]
    )
    heights = heights[np.isfinite(heights)]  # the cells left out
    assert 9.5 < heights.max() <= 10 + 1e-9  # nothing above the cut
    assert np.isclose(heights, 10).mean() < 0.01  # and no flat lid at the cut's height
    assert len(ax.collections) > len(polys)  # the rim of the cut
    whole = draw_2d([s], "surface", style=Style2D(vmin=0.5, vmax=50))
    assert "cut" not in " ".join(t.get_text() for t in whole.texts)  # nothing cut, nothing said
