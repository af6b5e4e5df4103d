"""The Hessian's spectral density (stochastic Lanczos quadrature, ``curvature.density``) as a figure.

Eigenvalues of a trained network's Hessian span orders of magnitude on both sides of zero (a bulk
near zero, a few large outliers, small negative ones), so the eigenvalue axis is symmetric-log (linear
within ±``linthresh``) and the density axis logarithmic, as Ghorbani et al. (2019) draw it.  The
quadrature's nodes are marked below the curve.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from . import save


def draw(densities: dict, sigma: float | None = None, title: str | None = None) -> Figure:
    """``densities``: label -> ``Density``; one curve each on shared axes."""
    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.subplots()
    nodes = np.concatenate([d.nodes[d.weights > 0] for d in densities.values()])
    low, high = float(nodes.min()), float(nodes.max())
    span = max(high - low, 1e-12)
    sigma = sigma or 0.01 * span
    grid = np.concatenate([np.linspace(low - 5 * sigma, high + 5 * sigma, 4000), nodes])
    grid.sort()
    linthresh = max(sigma, 1e-3 * max(abs(low), abs(high)))
    curves = {label: density.smoothed(grid, sigma) for label, density in densities.items()}
    floor = 1e-7 * max(float(values.max()) for values in curves.values())  # seven decades below the peak
    for i, (label, density) in enumerate(densities.items()):
        ax.plot(
            grid,
            np.maximum(curves[label], floor),
            color=f"C{i}",
            label=f"{label} ({density.runs} × {density.steps} Lanczos steps)",
        )
        marked = density.nodes[density.weights > 1e-6]
        ax.plot(marked, np.full(len(marked), floor * 1.5), "|", color=f"C{i}", markersize=8)
    ax.set_xscale("symlog", linthresh=linthresh)
    ax.set_yscale("log")
    ax.set_ylim(floor, None)
    # plain numbers, not mathtext powers of ten (as the other figures; and no math fonts needed)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.0e}" if v < 0.01 or v >= 1e4 else f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(f"eigenvalue of the Hessian (symmetric log, linear within ±{linthresh:.2g})")
    ax.set_ylabel(f"density (Gaussian width {sigma:.2g})")
    ax.grid(alpha=0.3, which="both")
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(title or "spectral density by stochastic Lanczos quadrature", fontsize=10)
    fig.tight_layout()
    return fig


def write_density(densities: dict, stem: str, formats=("png", "pdf"), dpi: int = 150, title: str | None = None):
    return save(draw(densities, title=title), stem, formats, dpi)


__all__ = ["draw", "write_density"]
