"""The Hessian's spectral density (stochastic Lanczos quadrature, ``curvature.density``) as a figure.

Eigenvalues of a trained network's Hessian span orders of magnitude on both sides of zero (a bulk
near zero, a few large outliers, small negative ones), so the eigenvalue axis is symmetric-log (linear
within ±``linthresh``) and the density axis logarithmic, as Ghorbani et al. (2019) draw it.  The
quadrature's nodes are marked below the curve.

Densities compared side by side (``draw_panels``: one panel per recipe of a study, one curve per batch
size) are smoothed by one Gaussian width and drawn on one grid, with the same axis limits in every panel:
a width chosen per panel would make a narrower bulk look taller for that reason alone.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullFormatter

from ..curvature.density import Density
from . import save

FLOOR = 1e-7  # the density axis ends seven decades below the highest peak
WIDTH = 0.01  # the default Gaussian width: this share of the span of all the nodes


def from_record(record: dict) -> Density:
    """A ``Density`` from its ``record()`` (as a report's ``details.density`` holds it; other keys ignored)."""
    return Density(
        nodes=np.asarray(record["nodes"], dtype=float),
        weights=np.asarray(record["weights"], dtype=float),
        steps=int(record["steps"]),
        runs=int(record["runs"]),
        products=int(record["products"]),
    )


def common_sigma(densities) -> float:
    """One Gaussian width for all ``densities``: ``WIDTH`` of the span of all their weighted nodes."""
    nodes = np.concatenate([d.nodes[d.weights > 0] for d in densities])
    return WIDTH * max(float(nodes.max() - nodes.min()), 1e-12)


def draw_panels(
    panels: dict, sigma: float | None = None, colours: dict | None = None, title: str | None = None
) -> Figure:
    """``panels``: panel title -> {label -> ``Density``}; one curve per label, one colour per label in every
    panel (``colours``: label -> colour; default matplotlib's cycle), one Gaussian width ``sigma`` (default
    ``common_sigma``), one grid and the same axis limits in all panels."""
    every = [d for densities in panels.values() for d in densities.values()]
    labels = list(dict.fromkeys(label for densities in panels.values() for label in densities))
    if colours:  # the legend in the colours' order (a report's: by batch size)
        labels = [label for label in colours if label in labels] + [label for label in labels if label not in colours]
    colours = {**{label: f"C{i % 10}" for i, label in enumerate(labels)}, **(colours or {})}
    nodes = np.concatenate([d.nodes[d.weights > 0] for d in every])
    low, high = float(nodes.min()), float(nodes.max())
    sigma = sigma or common_sigma(every)
    grid = np.concatenate([np.linspace(low - 5 * sigma, high + 5 * sigma, 4000), nodes])
    grid.sort()
    linthresh = max(sigma, 1e-3 * max(abs(low), abs(high)))
    curves = {(p, label): d.smoothed(grid, sigma) for p, densities in panels.items() for label, d in densities.items()}
    floor = FLOOR * max(float(c.max()) for c in curves.values())
    fig = Figure(figsize=(0.6 + 4.6 * len(panels), 4.0), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False, sharex=True, sharey=True)[0]
    for ax, (name, densities) in zip(axes, panels.items()):
        for label, density in densities.items():
            ax.plot(grid, np.maximum(curves[(name, label)], floor), color=colours[label], linewidth=1.2)
            marked = density.nodes[density.weights > 1e-6]
            ax.plot(marked, np.full(len(marked), floor * 1.5), "|", color=colours[label], markersize=8)
        ax.set_xscale("symlog", linthresh=linthresh)
        ax.set_yscale("log")
        # plain numbers, not mathtext powers of ten (as the other figures; and no math fonts needed)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.0e}" if v < 0.01 or v >= 1e4 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"Hessian eigenvalue (symmetric log, linear within ±{linthresh:.2g})")
        ax.grid(alpha=0.3)
        if name:
            ax.set_title(name)
    for ax in axes:  # the same limits everywhere: the grid's ends, and the floor to above the highest peak
        ax.set_xlim(grid[0], grid[-1])
        ax.set_ylim(floor, 3.0 * floor / FLOOR)
    axes[0].set_ylabel(f"spectral density (Gaussian width {sigma:.2g})")
    steps = sorted({(d.runs, d.steps) for d in every})
    what = "; ".join(f"{runs} × {n} Lanczos steps" for runs, n in steps)
    handles = [Line2D([], [], color=colours[label], linewidth=1.2, label=label) for label in labels]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(labels), 6), frameon=False)
    fig.suptitle(
        title or f"spectral density by stochastic Lanczos quadrature ({what}; ticks: the quadrature's nodes)",
        fontsize="medium",
    )
    return fig


def draw(densities: dict, sigma: float | None = None, title: str | None = None) -> Figure:
    """``densities``: label -> ``Density``; one curve each on shared axes."""
    return draw_panels({"": densities}, sigma, title=title)


def write_density(densities: dict, stem: str, formats=("png", "pdf"), dpi: int = 150, title: str | None = None):
    return save(draw(densities, title=title), stem, formats, dpi)


def write_panels(
    panels: dict, stem: str, colours: dict | None = None, formats=("png", "pdf"), dpi: int = 150, look=None
) -> list[str]:
    return save(draw_panels(panels, colours=colours), stem, formats, dpi, look, panels=len(panels))


__all__ = ["draw", "draw_panels", "write_density", "write_panels", "from_record", "common_sigma"]
