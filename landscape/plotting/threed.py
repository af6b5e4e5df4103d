"""A 2-D surface drawn in 3-D, cut open above its top level rather than pressed flat.

One diverged corner would flatten the picture; so the surface above the top contour level is left
out (a hole with a dark rim), and the cut is drawn on a finer grid so that its edge follows the level.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize

from .levels import CMAP

FINE = 100  # a cut 3-D surface is drawn on this many points per side (mplot3d draws at most 100)


def _finer(X, Y, Z):
    """``Z`` interpolated (bilinearly) onto a ``FINE`` × ``FINE`` grid over the same square; +inf kept
    as above everything, NaN (not computed) spreading to the cells around it."""
    from scipy.interpolate import RegularGridInterpolator

    xs, ys = X[0, :], Y[:, 0]
    big = np.where(np.isposinf(Z), np.finfo(float).max / 4, Z)
    fx, fy = np.linspace(xs[0], xs[-1], FINE), np.linspace(ys[0], ys[-1], FINE)
    FX, FY = np.meshgrid(fx, fy)
    FZ = RegularGridInterpolator((ys, xs), big)(np.stack([FY.ravel(), FX.ravel()], axis=1)).reshape(FX.shape)
    return FX, FY, FZ


def draw_surface(ax, X, Y, Z, levels, norm, log):
    lo, hi = levels[0], levels[-1]
    # Cut at the top level so one diverged corner does not flatten the picture, and show the cut
    # for what it is: the surface above it is left out (a hole with a dark rim), not pressed flat
    # into a table top that reads as a plateau of the landscape.  NaN (not computed) and -inf are
    # holes too; +inf (diverged) is above any cut.
    i, j = np.unravel_index(np.argmin(np.hypot(X, Y)), X.shape)
    centre = float(Z[i, j]) if np.hypot(X[i, j], Y[i, j]) < 1e-9 else math.nan  # the trained model, if on the grid
    if np.any(np.isposinf(Z) | (np.isfinite(Z) & (Z > hi))) and max(Z.shape) < FINE:
        X, Y, Z = _finer(X, Y, Z)  # the cut's edge follows the level, not the grid's coarse steps
    if not log:  # below the lowest level the surface goes on down: only the top is cut
        finite = Z[np.isfinite(Z)]
        lo = min(lo, float(finite.min())) if finite.size else lo
    above = np.isposinf(Z) | (np.isfinite(Z) & (Z > hi))
    Zc = np.where(np.isfinite(Z) & ~above, np.maximum(Z, lo), np.nan)
    rim = np.where(np.isposinf(Z), np.finfo(float).max, np.where(np.isfinite(Z), Z, np.nan))
    if log:  # mplot3d has no log z axis; plot log10 and colour by the same log norm
        Zc, lo, hi = np.log10(Zc), np.log10(lo), np.log10(hi)
        rim = np.log10(np.clip(rim, 1e-300, None))
        colours = Normalize(lo, hi)
    else:
        colours = norm
    ax.computed_zorder = False  # keep the origin marker above the surface
    # Every grid cell up to 100 per side; finer grids are subsampled, or a 201 x 201
    # surface becomes 40,000 polygons: a slow, 10 MB PDF that looks the same.
    ax.plot_surface(
        X,
        Y,
        Zc,
        cmap=CMAP,
        norm=colours,
        rcount=min(X.shape[0], 100),
        ccount=min(X.shape[1], 100),
        linewidth=0,
        antialiased=False,
        zorder=1,
    )
    ax.set_zlim(lo, hi)
    clipped = bool(above.any())
    if clipped and np.isfinite(rim).sum() >= 4:  # the rim of the cut, drawn at its height
        ax.contour(
            X,
            Y,
            np.nan_to_num(rim, nan=-np.inf),
            levels=[hi],
            zdir="z",
            offset=hi,
            colors="0.15",
            linewidths=1.0,
            zorder=2,
        )
    if log:  # the z axis is log10 of the values; the colour bar shows the values themselves
        ax.set_zlabel("log₁₀")
    if (
        math.isfinite(centre)
        and levels[0] <= centre <= levels[-1]
        or (math.isfinite(centre) and not log and centre <= levels[-1])
    ):
        ax.scatter(
            [0.0],
            [0.0],
            [np.log10(centre) if log else centre],
            marker="*",
            s=90,
            c="white",
            edgecolors="black",
            linewidths=0.8,
            zorder=10,
            depthshade=False,
        )
    ax.set_box_aspect((np.ptp(X), np.ptp(Y), 0.7 * max(np.ptp(X), np.ptp(Y))))  # α and β to scale
    return ScalarMappable(norm=norm, cmap=CMAP), clipped  # the colour bar shows the values, also with --log
