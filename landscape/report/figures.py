"""The scorecard's figure: each measure against batch size, one panel per measure.

Per recipe, the mean over seeds with ±1 standard deviation as error bars, each seed a faint dot;
the batch axis in powers of two; each panel's corner gives Kendall's τ with batch size over all runs
and its permutation p-value, in bold when below the report's alpha.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from ..plotting import save
from .measures import BY_KEY

PANELS = (
    "test_error",
    "gap",
    "lambda_max",
    "trace",
    "epsilon_sharpness",
    "adaptive_sharpness",
    "average_rise",
    "surface_rise",
)
UNITS = {
    "test_error": "test error (%)",
    "gap": "test − train error (points)",
    "lambda_max": "λmax of the Hessian",
    "trace": "Hessian trace (Hutchinson)",
    "epsilon_sharpness": "Keskar ε-sharpness (%)",
    "adaptive_sharpness": "adaptive worst-case rise",
    "average_rise": "mean loss rise, random directions",
    "surface_rise": "mean loss rise on the 2-D grid",
}


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
            seeds = sorted({r["seed"] for r in mine})
            # each run beside the mean, not under it: seeds spread a little along the (log) batch axis
            xs = [r["batch_size"] * 2 ** (0.12 * (seeds.index(r["seed"]) - (len(seeds) - 1) / 2) + 0.25) for r in mine]
            ys = [r["values"][key] for r in mine]
            ax.scatter(xs, ys, s=12, color=colour, alpha=0.55, linewidths=0)
            groups = [g for g in card.groups if g.recipe == recipe]
            means = [g.stats[key][0] for g in groups]
            sds = [0.0 if math.isnan(g.stats[key][1]) else g.stats[key][1] for g in groups]
            ax.errorbar(
                [g.batch_size for g in groups],
                means,
                yerr=sds,
                color=colour,
                marker="o",
                markersize=4,
                capsize=3,
                linewidth=1.5,
                label=recipe,
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(batches, [str(b) for b in batches])
        ax.minorticks_off()
        c = card.correlations[key]["batch_size"]
        stats = "" if math.isnan(c.tau) else f"   τ = {c.tau:+.2f}, p = {c.p_value:.2g}"
        ax.set_title(
            BY_KEY[key].label + stats,
            fontsize=9,
            fontweight="bold" if not math.isnan(c.tau) and c.p_value < card.alpha else "normal",
        )
        ax.set_ylabel(UNITS[key], fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(PANELS) :]:
        ax.set_visible(False)
    for ax in axes[(rows - 1) * columns :]:
        ax.set_xlabel("batch size")
    if len(recipes) > 1:
        axes[0].legend(frameon=False, fontsize=8)
    seeds = sorted({r["seed"] for r in card.runs})
    pooled = f", {len(recipes)} recipes pooled" if len(recipes) > 1 else ""
    fig.suptitle(
        title
        or f"each measure against batch size: mean ± 1 s.d. over {len(seeds)} seed"
        f"{'s' * (len(seeds) > 1)}, dots beside it = runs; τ: Kendall with batch size over all runs{pooled} "
        f"(bold: p < {card.alpha:g})",
        fontsize=10,
    )
    return fig


def write_measures(
    card, stem: str, formats=("png", "pdf"), dpi: int = 150, title: str | None = None, look=None
) -> list[str]:
    return save(draw_measures(card, title), stem, formats, dpi, look, panels=len(PANELS))


__all__ = ["draw_measures", "write_measures", "PANELS"]
