"""Keskar et al. (2017), Fig. 3: loss and error along the line from the small-batch to the large-batch
network, drawn from the record of ``<name>_interpolation.json`` alone (``report.interpolation``).

One column per recipe.  Top row: the loss on a log axis (between and beyond the two minima it spans
decades); bottom row: the error in %.  Training solid, test dashed; each seed a thin line in its own
colour (the same seed, the same colour, in every panel), the mean over seeds bold and black; α = 0 and
α = 1, the two trained networks, faint vertical lines named by their batch sizes above the panel.  The
legend stands below the panels, never over a curve.  The rows share their y axis, so recipes compare.
"""

from __future__ import annotations

import numpy as np
from matplotlib import rcParams
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from . import save
from .levels import log_axis

STYLE = {"train": "-", "test": "--"}
WORDS = {"train": "training", "test": "test"}
ROWS = (("loss", "loss (log scale)"), ("error", "error (%)"))
THIN, BOLD = 0.7, 1.8  # times the look's line width: seeds, and the mean (or a recipe's only seed)


def _values(pair: dict, key: str) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in pair[key]], dtype=np.float64)


def _has(pairs: list[dict], key: str) -> bool:
    return any(np.isfinite(_values(p, key)).any() for p in pairs)


def draw_interpolation(record: dict, title: str | None = None) -> Figure:
    """The figure of an interpolation record (at least one pair)."""
    pairs = record["pairs"]
    if not pairs:
        raise ValueError("an interpolation record without pairs has nothing to draw")
    alphas = np.asarray(record["alphas"], dtype=np.float64)
    recipes = list(dict.fromkeys(p["recipe"] for p in pairs))
    seeds = sorted({p["seed"] for p in pairs})
    colour = {seed: f"C{k % 10}" for k, seed in enumerate(seeds)}
    splits = [s for s in ("train", "test") if _has(pairs, f"{s}_loss") or _has(pairs, f"{s}_error")]
    losses = np.concatenate([_values(p, f"{s}_loss") for p in pairs for s in splits])
    log = bool(np.nanmin(losses) > 0)  # a loss of 0 or below (a plug-in's) keeps a linear axis
    width = rcParams["lines.linewidth"]

    fig = Figure(figsize=(max(3.4 * len(recipes) + 0.6, 4.6), 5.6), layout="constrained")
    axes = fig.subplots(2, len(recipes), sharex=True, sharey="row", squeeze=False)
    averaged = False
    for column, recipe in enumerate(recipes):
        mine = [p for p in pairs if p["recipe"] == recipe]
        for row, (metric, _) in enumerate(ROWS):
            ax = axes[row, column]
            for split in splits:
                curves = [_values(p, f"{split}_{metric}") for p in mine]
                alone = len(curves) == 1
                for p, curve in zip(mine, curves):
                    thickness = (BOLD if alone else THIN) * width
                    ax.plot(alphas, curve, color=colour[p["seed"]], linestyle=STYLE[split], linewidth=thickness)
                if not alone:  # NaN where a seed has no value: the mean is of every seed or none
                    ax.plot(alphas, np.mean(curves, axis=0), color="k", linestyle=STYLE[split], linewidth=BOLD * width)
                    averaged = True
            for end in (0.0, 1.0):
                ax.axvline(end, color="0.5", linewidth=0.8, linestyle=":", zorder=0)
            ax.grid(True, alpha=0.3)
        top = axes[0, column]
        ends = top.secondary_xaxis("top")
        ends.set_xticks([0.0, 1.0], [f"batch {mine[0]['batch_from']}", f"batch {mine[0]['batch_to']}"])
        ends.tick_params(length=0)
        top.set_title(f"({'abcdefgh'[column]}) {recipe}, final weights ({len(mine)} seed{'s' * (len(mine) > 1)})",
                      loc="left")  # fmt: skip
        axes[1, column].set_xlabel("α   (0: smallest batch, 1: largest batch)")
    if log:
        axes[0, 0].set_yscale("log")
        log_axis(axes[0, 0].yaxis, [losses])
    for row, (_, label) in enumerate(ROWS):
        axes[row, 0].set_ylabel(label if row or log else "loss")
    axes[0, 0].set_xlim(alphas[0], alphas[-1])
    axes[0, 0].xaxis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 5, 10]))  # -0.5, 0, 0.5, ...

    seed_width = (THIN if averaged else BOLD) * width  # as drawn: thin beside a mean, bold alone
    handles = [Line2D([], [], color=colour[s], linewidth=seed_width, label=f"seed {s}") for s in seeds]
    if averaged:
        handles.append(Line2D([], [], color="k", linewidth=BOLD * width, label="mean over seeds"))
    handles += [Line2D([], [], color="0.3", linestyle=STYLE[s], linewidth=width, label=WORDS[s]) for s in splits]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), frameon=False)
    fig.suptitle(
        title
        or "From the small-batch to the large-batch network:\n"
        "w(α) = (1 − α) w_small + α w_large (Keskar et al. 2017, Fig. 3)"
    )
    return fig


def write_interpolation(
    record: dict, stem: str, formats=("png", "pdf"), dpi: int = 150, look=None, title: str | None = None
) -> list[str]:
    """Draw ``record`` and write ``<stem>.<fmt>`` for each format; return the paths written."""
    recipes = len({p["recipe"] for p in record["pairs"]})
    return save(draw_interpolation(record, title), stem, formats, dpi, look, panels=2 * recipes)


__all__ = ["draw_interpolation", "write_interpolation"]
