"""The scorecard's figure: each measure against batch size, one panel per measure.

Per recipe, the mean over seeds with ±1 standard deviation as error bars, each seed a faint dot;
the batch axis in powers of two; each panel's corner gives Kendall's τ with batch size over all runs
and its permutation p-value, in bold when below the report's alpha.
"""
from __future__ import annotations

import math

from matplotlib.figure import Figure

from ..report.measures import BY_KEY
from . import save

PANELS = ("test_error", "gap", "lambda_max", "trace", "epsilon_sharpness", "adaptive_sharpness", "average_rise",
          "surface_rise")
UNITS = {"test_error": "test error (%)", "gap": "test − train error (points)", "lambda_max": "λmax of the Hessian",
         "trace": "Hessian trace (Hutchinson)", "epsilon_sharpness": "Keskar ε-sharpness (%)",
         "adaptive_sharpness": "adaptive worst-case rise", "average_rise": "mean loss rise, random directions",
         "surface_rise": "mean loss rise on the 2-D grid"}


def draw_measures(card, title: str | None = None) -> Figure:
    recipes = list(dict.fromkeys(r["recipe"] for r in card.runs))
    batches = sorted({r["batch_size"] for r in card.runs})
    columns = 4
    rows = math.ceil(len(PANELS) / columns)
    fig = Figure(figsize=(3.3 * columns, 2.9 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, key in zip(axes, PANELS):
        for i, recipe in enumerate(recipes):
            colour = f"C{i}"
            mine = [r for r in card.runs if r["recipe"] == recipe]
            xs = [r["batch_size"] for r in mine]
            ys = [r["values"][key] for r in mine]
            ax.scatter(xs, ys, s=14, color=colour, alpha=0.4, linewidths=0)
            groups = [g for g in card.groups if g.recipe == recipe]
            means = [g.stats[key][0] for g in groups]
            sds = [0.0 if math.isnan(g.stats[key][1]) else g.stats[key][1] for g in groups]
            ax.errorbar([g.batch_size for g in groups], means, yerr=sds, color=colour, marker="o", markersize=4,
                        capsize=3, linewidth=1.5, label=recipe)
        ax.set_xscale("log", base=2)
        ax.set_xticks(batches, [str(b) for b in batches])
        ax.minorticks_off()
        ax.set_title(BY_KEY[key].label, fontsize=10)
        ax.set_ylabel(UNITS[key], fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        c = card.correlations[key]["batch_size"]
        if not math.isnan(c.tau):
            ax.text(0.03, 0.95, f"τ = {c.tau:+.2f}, p = {c.p_value:.2g}", transform=ax.transAxes, va="top",
                    fontsize=8, fontweight="bold" if c.p_value < card.alpha else "normal",
                    bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    for ax in axes[len(PANELS):]:
        ax.set_visible(False)
    for ax in axes[(rows - 1) * columns:]:
        ax.set_xlabel("batch size")
    if len(recipes) > 1:
        axes[0].legend(frameon=False, fontsize=8)
    seeds = sorted({r["seed"] for r in card.runs})
    fig.suptitle(title or f"each measure against batch size: mean ± 1 s.d. over {len(seeds)} seed"
                 f"{'s' * (len(seeds) > 1)}, dots = runs; τ: Kendall with batch size (bold: p < {card.alpha:g})",
                 fontsize=10)
    return fig


def write_measures(card, stem: str, formats=("png", "pdf"), dpi: int = 150, title: str | None = None,
                   look=None) -> list[str]:
    return save(draw_measures(card, title), stem, formats, dpi, look, panels=len(PANELS))


__all__ = ["draw_measures", "write_measures", "PANELS"]
