"""2-D maps of one quantity: labelled contour lines, filled contours, a 3-D surface (``threed``).

Several surfaces become side-by-side panels of one figure sharing the same levels
and colour scale, so they compare by eye (as Li et al. 2018 compare ResNet-56 with
and without skip connections).  Orientation: a file stores ``[i, j]`` at
``(x[i], y[j])``; matplotlib wants rows along the vertical axis, so ``plot_arrays``
transposes once, here and nowhere else (the reference code's double transposition
scrambled non-square grids).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.colors import ListedColormap, LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..errors import InputError, UsageError
from ..io.surface_file import Surface
from ..surface import quantities
from . import axis_label, default_label, log_ticks, plain_number, quantity_label, save
from .levels import CMAP, Style2D, level_format, levels_for
from .threed import draw_surface

KINDS = ("contour", "contourf", "surface")
SUFFIX = {"contour": "2dcontour", "contourf": "2dcontourf", "surface": "3dsurface"}
# Contour lines on white: drop viridis' pale yellow end, which would be invisible.
LINE_CMAP = ListedColormap(CMAP(np.linspace(0.0, 0.85, 256)))
LABELLED_LINES = 8  # clabel at most this many levels, or labels cover the lines
ABOVE = "0.9"  # the shade of values above the top contour level


# --------------------------------------------------------------------------- data


def available(surface: Surface) -> list[str]:
    """Quantities ``surface`` can show: stored ones, and those drawn from them (``*_err`` = 100 - ``*_acc``)."""
    names = sorted(surface.values)
    return names + [n.replace("_acc", "_err") for n in names if n.endswith("_acc")]


def quantity(surface: Surface, name: str) -> np.ndarray:
    """Values of ``name`` on ``surface`` in file order ``[i, j]`` (NaN where not computed)."""
    if name in surface.values:
        return surface.values[name]
    source = quantities.derived(name)
    if source is not None and source[0] in surface.values:
        return source[1](surface.values[source[0]])
    raise InputError(f"{surface.path} has no quantity {name!r}; expected one of {', '.join(available(surface))}")


def plot_arrays(surface: Surface, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X, Y, Z`` as matplotlib draws them: ``Z[j, i]`` is the value at ``(X[j, i], Y[j, i]) = (x[i], y[j])``."""
    X, Y = np.meshgrid(surface.x, surface.y, indexing="xy")  # shape (ny, nx)
    return X, Y, quantity(surface, name).T


def check_2d(surfaces: list[Surface], name: str) -> None:
    """A 2-D figure takes 2-D surfaces that have ``name`` and at least one computed point."""
    for s in surfaces:
        if s.ndim != 2:
            raise InputError(
                f"{s.path} is a 1-D surface ({len(s.x)} points); expected a 2-D surface (draw 1-D ones with plot_1d)"
            )
        if len(s.x) < 2 or len(s.y) < 2:
            raise InputError(f"{s.path} has a {len(s.x)}×{len(s.y)} grid; expected at least 2×2 points to draw")
        if not s.done.any():
            raise InputError(f"{s.path} has no computed points; expected at least one (is the run still going?)")
        quantity(s, name)


# --------------------------------------------------------------------------- drawing


def draw_2d(
    surfaces: list[Surface],
    kind: str,
    name: str = "train_loss",
    labels: list[str] | None = None,
    style: Style2D = Style2D(),
    trajectories: list | None = None,
) -> Figure:
    """One figure of ``kind`` (contour, contourf, surface): a panel per surface, shared levels and colours.

    Panel titles are the ``labels`` when given, or the file names when there are several panels.
    """
    if kind not in KINDS:
        raise UsageError(f"plot kind {kind!r}: expected one of {', '.join(KINDS)}")
    check_2d(surfaces, name)
    if labels is not None and len(labels) != len(surfaces):
        raise UsageError(f"got {len(labels)} labels for {len(surfaces)} surfaces; expected one label per surface")
    if labels is None and len(surfaces) > 1:
        labels = [default_label(s.path) for s in surfaces]

    arrays = [plot_arrays(s, name) for s in surfaces]
    # "auto": log where the values span decades; never for an accuracy, whose best values (near 100 %)
    # a log scale would squeeze together
    log = style.uses_log([z for _, _, z in arrays]) and (style.log is True or not name.endswith("_acc"))
    levels = levels_for([z for _, _, z in arrays], style.vmin, style.vmax, style.vlevel, log)
    norm = LogNorm(levels[0], levels[-1]) if log else Normalize(levels[0], levels[-1])
    extend = _extend(np.concatenate([z.ravel() for _, _, z in arrays]), levels)
    words = quantity_label(name, surfaces[0].attrs)

    n = len(surfaces)
    columns = min(n, style.columns or n)
    rows = math.ceil(n / columns)
    width = 4.6 if kind == "surface" else 4.0
    fig = Figure(figsize=(width * columns + 1.0, 4.0 * rows), layout="constrained")
    axes, mappable, cut = [], None, False
    for k, (surf, (X, Y, Z)) in enumerate(zip(surfaces, arrays)):
        if kind == "surface":
            ax = fig.add_subplot(rows, columns, k + 1, projection="3d")  # not Axes3D(fig): blank on matplotlib >= 3.6
            mappable, was_cut = draw_surface(ax, X, Y, Z, levels, norm, log)
            cut = cut or was_cut
            ax.set(xlabel="α", ylabel="β")  # long labels collide in 3-D; the 2-D figures carry them
        else:
            ax = fig.add_subplot(rows, columns, k + 1)
            mappable = _contours(ax, X, Y, Z, levels, norm, log, extend, filled=kind == "contourf")
            _mark_origin(ax, surf, filled=kind == "contourf")
            if np.isclose(np.ptp(surf.x), np.ptp(surf.y)):
                ax.set_aspect("equal")
            ax.set(xlabel=axis_label(surf.attrs, "x"), ylabel=axis_label(surf.attrs, "y"))
            if trajectories is not None and trajectories[k] is not None:
                _trajectory(ax, trajectories[k])
        for axis in (ax.xaxis, ax.yaxis):  # -1, -0.5, 0, ... rather than crowded -1.00, -0.75, ...
            axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
        if labels is not None:
            ax.set_title(labels[k])
        axes.append(ax)

    if kind == "contour":  # lines carry their own labels; say once what they measure
        above = f"; grey: above {plain_number(levels[-1])}" if extend in ("max", "both") else ""
        scale = ", spaced by factors (log scale)" if log else ""
        fig.text(
            0.5, 0.0, f"contours of {words}{scale}; + = trained model{above}", ha="center", va="top", fontsize="small"
        )
    else:
        bar = fig.colorbar(
            mappable, ax=axes, shrink=0.8 if kind == "contourf" else 0.6, pad=0.02 if kind == "contourf" else 0.03
        )
        if log:
            log_ticks(bar.ax.yaxis)
        bar.set_label(words + (" (log scale)" if log else ""))
        if kind == "surface":  # said once for every panel, where no axis label can collide with it
            what = f"; cut open above {plain_number(levels[-1])}: the surface above is left out" if cut else ""
            fig.text(0.5, 0.0, f"☆ = trained model{what}", ha="center", va="top", fontsize="small")
    if style.title:
        fig.suptitle(style.title)
    return fig


def _extend(Z: np.ndarray, levels: np.ndarray) -> str:
    """Which ends of the levels the data pass: drawn in the end colours, triangles on the colour bar."""
    low, high = bool(np.any(Z < levels[0])), bool(np.any(Z > levels[-1]))  # NaN compares False
    return "both" if low and high else "min" if low else "max" if high else "neither"


def _contours(ax, X, Y, Z, levels, norm, log, extend: str, filled: bool):
    Zm = np.ma.masked_invalid(Z)  # NaN (not computed) and inf (diverged) are left blank
    if filled:
        # ``extend`` comes from all panels' data, so every panel fills values beyond
        # the levels the same way and one colour bar fits all.
        cf = ax.contourf(X, Y, Zm, levels=levels, cmap=CMAP, norm=norm, extend=extend)
        # Thin lines on the fill help read the shape where colours are close.
        ax.contour(X, Y, Zm, levels=levels, colors="k", linewidths=0.3, alpha=0.35)
        return cf
    if extend in ("max", "both"):  # above the top level: shaded, or it would look like the empty basin
        ax.contourf(X, Y, Zm, levels=[levels[-1], np.inf], colors=[ABOVE], zorder=0)
    cs = ax.contour(X, Y, Zm, levels=levels, cmap=LINE_CMAP, norm=norm, linewidths=1.0)
    labelled, spots = _label_spots(cs, levels[:: int(np.ceil(len(levels) / LABELLED_LINES))], X, Y, Z, log)
    if labelled:
        ax.clabel(cs, labelled, manual=spots, inline=True, fontsize=7, fmt=level_format(np.array(labelled), log))
    return cs


def _label_spots(cs, wanted, X, Y, Z, log: bool) -> tuple[list[float], list[tuple[float, float]]]:
    """One label per level, placed where it is readable.

    matplotlib's automatic placement labels every piece of every level, which piles
    labels up where lines crowd (a diverging corner).  Here each level gets one
    label, chosen greedily among the points of its lines: far from labels already
    placed and from the trained model's cross, away from the frame, and where
    neighbouring lines are not too close (line spacing = level step / gradient, in
    log10 with --log).  Coordinates are scaled to the unit square.
    """
    x0, dx = X.min(), np.ptp(X) or 1.0
    y0, dy = Y.min(), np.ptp(Y) or 1.0
    # Gradient in unit-square coordinates; NaN (not computed) counts as crowded.
    with np.errstate(divide="ignore", invalid="ignore"):
        Zs = np.log10(Z) if log else Z
    gy, gx = np.gradient(np.where(np.isfinite(Zs), Zs, np.nan), Y[:, 0] - y0, X[0] - x0)
    steepness = np.hypot(gx * dx, gy * dy)
    levels = np.log10(cs.levels) if log else np.asarray(cs.levels)
    step = float(np.min(np.diff(levels))) if len(levels) > 1 else 1.0
    labelled, spots = [], []
    avoid = [(0.0, 0.0)]  # the trained model's cross
    for level in wanted:
        match = np.flatnonzero(np.isclose(cs.levels, level))
        pieces = [seg for seg in cs.allsegs[match[0]] if len(seg) > 1] if match.size else []
        if not pieces:
            continue
        points = np.concatenate(pieces)
        points = points[:: max(1, len(points) // 300)]
        u, v = (points[:, 0] - x0) / dx, (points[:, 1] - y0) / dy
        border = np.minimum.reduce([u, 1 - u, v, 1 - v])
        score = np.minimum(2.0 * border, 0.5)
        su, sv = np.array(avoid + spots).T
        nearest = np.hypot(u[:, None] - (su[None] - x0) / dx, v[:, None] - (sv[None] - y0) / dy).min(axis=1)
        score = score * np.clip(nearest / 0.15, 0.0, 1.0)
        score = np.where(np.hypot(u - (0.0 - x0) / dx, v - (0.0 - y0) / dy) < 0.08, 0.0, score)  # not on the cross
        col = np.clip(np.searchsorted(X[0], points[:, 0]), 0, X.shape[1] - 1)
        row = np.clip(np.searchsorted(Y[:, 0], points[:, 1]), 0, Y.shape[0] - 1)
        spacing = step / np.maximum(steepness[row, col], 1e-12)
        score = score * np.clip(np.nan_to_num(spacing, nan=0.0) / 0.06, 0.0, 1.0)
        best = int(np.argmax(score))
        if score[best] < 0.01:  # only room on top of another label or the frame: better unlabelled
            continue
        labelled.append(float(level))
        spots.append((float(points[best, 0]), float(points[best, 1])))
    return labelled, spots


def _trajectory(ax, path) -> None:
    """The optimizer's path (a ``directions.Trajectory``) over the contours: every checkpoint a dot,
    some labelled with their epoch; the axes say how much of the path's variance each one holds, and a
    note what a random walk of as many steps would show (Antognini & Sohl-Dickstein 2018)."""
    xy = np.asarray(path.coordinates)
    ax.plot(xy[:, 0], xy[:, 1], "-", color="crimson", linewidth=1.3, zorder=6)
    ax.plot(xy[:, 0], xy[:, 1], "o", color="crimson", markersize=2.5, zorder=6)
    wanted = sorted({0, len(xy) - 1, *np.linspace(0, len(xy) - 1, 6).round().astype(int).tolist()})
    span = max(float(np.ptp(xy[:, 0])), float(np.ptp(xy[:, 1])), 1e-300)
    shown = []
    for i in wanted:  # no label on top of another: the last epochs often crowd the minimum
        if all(np.hypot(*(xy[i] - xy[j])) > 0.04 * span for j in shown) or i == len(xy) - 1:
            shown = [j for j in shown if np.hypot(*(xy[i] - xy[j])) > 0.04 * span] + [i]
    for i in shown:
        ax.annotate(
            str(path.labels[i]), xy[i], textcoords="offset points", xytext=(4, 3), fontsize=7, color="crimson", zorder=7
        )
    ax.set_xlabel(f"PC1 ({100 * path.explained[0]:.1f} % of the path's variance)")
    ax.set_ylabel(f"PC2 ({100 * path.explained[1]:.1f} % of the path's variance)")
    ax.set_aspect("equal", adjustable="datalim")  # both axes are distances in weight space
    ax.annotate(
        f"path of {len(xy)} checkpoints, labelled with epochs; a random walk of as many steps: "
        f"PC1 {100 * path.random_walk[0]:.0f} %, PC2 {100 * path.random_walk[1]:.0f} %",
        xy=(0.0, 1.0),
        xycoords="axes fraction",
        xytext=(0, 4),
        textcoords="offset points",
        fontsize=6.5,
        color="0.3",
        va="bottom",
    )


def _mark_origin(ax, surf: Surface, filled: bool) -> None:
    """A thin cross at (0, 0), the trained model, when the grid contains it: white on the filled map
    (whose basin is dark), black over contour lines; thin and hollow, so the basin under it shows."""
    if surf.x.min() <= 0 <= surf.x.max() and surf.y.min() <= 0 <= surf.y.max():
        ax.plot(
            0.0,
            0.0,
            marker="+",
            markersize=9,
            markeredgewidth=0.9,
            color="white" if filled else "black",
            linestyle="none",
            zorder=5,
        )


def write_2d(
    surfaces: list[Surface],
    out: str,
    name: str = "train_loss",
    kinds=KINDS,
    labels: list[str] | None = None,
    formats=("png",),
    dpi: int = 150,
    style: Style2D = Style2D(),
    trajectories: list | None = None,
    look=None,
) -> tuple[list[str], list[Figure]]:
    """Write ``<out>_<name>_2dcontour|_2dcontourf|_3dsurface.<fmt>`` for ``kinds``; return (paths, figures)."""
    paths, figures = [], []
    for kind in kinds:
        fig = draw_2d(surfaces, kind, name, labels, style, trajectories)
        paths += save(fig, f"{out}_{name}_{SUFFIX[kind]}", formats, dpi, look, len(surfaces))
        figures.append(fig)
    return paths, figures
