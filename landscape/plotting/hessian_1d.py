"""The training loss along a random filter-normalized direction beside the same along the Hessian's top
eigenvector: how far a random slice (Li et al. 2018) is from the steepest one.

A random direction of millions of weights is nearly orthogonal to the few directions of high curvature,
so its curve shows the bulk of the spectrum; the top eigenvector shows λmax.  Two panels sharing the loss
axis (logarithmic where the losses span decades, ``levels.log_scale``), one curve per network in the
colours the caller gives (a report: one per batch size).  Along a unit eigenvector the loss of a quadratic
rises as λ t² / 2: drawn dotted, so a reader sees where the network leaves its quadratic basin.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ..io.surface_file import Surface
from . import quantity_label, save
from .levels import AUTO, log_axis, log_scale

QUANTITY = "train_loss"
RANDOM_WORDS = "α along a random filter-normalized direction\n(α = 1: each filter moved by its own norm)"


def hessian_words(scale: str) -> str:
    """The x label of the eigenvector's panel from the direction's ``scale`` (``details.hessian_1d``)."""
    if scale == "unit":
        return "t along the top Hessian eigenvector v₁, ‖v₁‖ = 1\n(t = distance moved in weight space)"
    return f"t along the top Hessian eigenvector\n(direction scaled: {scale})"


def curves(ax, surfaces: list[Surface], colours: list, log: bool) -> None:
    """The training loss of each of ``surfaces`` on ``ax``, NaN (not computed) left as gaps."""
    for surface, colour in zip(surfaces, colours):
        ax.plot(surface.x, surface.values[QUANTITY], color=colour, linewidth=1.5)
    if log:
        ax.set_yscale("log")
        log_axis(ax.yaxis, [s.values[QUANTITY] for s in surfaces])
    ax.axvline(0.0, color="0.5", linewidth=0.8, linestyle=":", zorder=0)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))  # -1, -0.5, 0, ...
    ax.grid(alpha=0.3)


def quadratic(ax, surfaces: list[Surface], eigenvalues: list[float], colours: list) -> None:
    """L(0) + λ t² / 2 for each network: the loss of its quadratic model along a unit eigenvector."""
    for surface, lam, colour in zip(surfaces, eigenvalues, colours):
        centre = surface.values[QUANTITY][np.argmin(np.abs(surface.x))]
        if np.isfinite(lam) and np.isfinite(centre):
            ax.plot(surface.x, centre + 0.5 * lam * surface.x**2, ":", color=colour, linewidth=1.0)


def limits(random: list[Surface], hessian: list[Surface]) -> tuple[float, float]:
    """Loss limits from the curves only (the quadratic model may run far above them)."""
    values = np.concatenate([s.values[QUANTITY] for s in (*random, *hessian)])
    finite = values[np.isfinite(values)]
    return float(finite.min()), float(finite.max())


def draw(
    random: list[Surface],
    hessian: list[Surface],
    labels: list[str],
    colours: list,
    eigenvalues: list[float] | None = None,
    scale: str = "unit",
    log=AUTO,
    title: str | None = None,
) -> Figure:
    """Two panels: ``random`` (left) and ``hessian`` (right) surfaces, one per network, in ``colours``."""
    fig = Figure(figsize=(9.6, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    log = log_scale(log, [s.values[QUANTITY] for s in (*random, *hessian)])
    curves(left, random, colours, log)
    curves(right, hessian, colours, log)
    low, high = limits(random, hessian)
    if eigenvalues is not None and scale == "unit":
        quadratic(right, hessian, eigenvalues, colours)
    if log:
        left.set_ylim(low / 1.5, high * 1.5)
    else:
        pad = 0.05 * (high - low)
        left.set_ylim(low - pad, high + pad)
    loss = quantity_label(QUANTITY, random[0].attrs if random else {})
    left.set_ylabel(loss + (", log scale" if log else ""))
    left.set_xlabel(RANDOM_WORDS)
    right.set_xlabel(hessian_words(scale))
    left.set_title("(a) random direction", loc="left")
    right.set_title("(b) top Hessian eigenvector", loc="left")
    names = [
        label + (f" (λ₁ = {lam:.3g})" if eigenvalues is not None and np.isfinite(lam) else "")
        for label, lam in zip(labels, eigenvalues if eigenvalues is not None else [np.nan] * len(labels))
    ]
    handles = [Line2D([], [], color=c, linewidth=1.5, label=n) for c, n in zip(colours, names)]
    if eigenvalues is not None and scale == "unit":
        handles.append(Line2D([], [], color="0.3", linestyle=":", label="L(0) + λ₁ t² / 2 (quadratic model)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False, fontsize="small")
    fig.suptitle(title or "training loss along a random direction and along the steepest one", fontsize="medium")
    return fig


def write(
    random, hessian, stem: str, labels, colours, eigenvalues=None, scale="unit", formats=("png",), dpi=150, look=None
) -> list[str]:
    """Write ``<stem>.<fmt>`` for each format; return the paths."""
    return save(draw(random, hessian, labels, colours, eigenvalues, scale), stem, formats, dpi, look, panels=2)


__all__ = ["draw", "write", "curves", "hessian_words", "RANDOM_WORDS"]
