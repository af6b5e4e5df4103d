"""The scorecard's figure: each measure against batch size, one panel per measure.

Per recipe, the mean over seeds with ±1 standard deviation as error bars, each seed a faint dot;
the batch axis in powers of two; with one recipe, each panel's title gives Kendall's τ with batch size
and its p-value by permutation within seeds (``stats.trend``), with Holm's adjustment for an endpoint,
in bold when an endpoint's adjusted p-value is below the report's alpha.
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
        t = card.test(recipes[0], key) if len(recipes) == 1 else None
        shown = t is not None and not math.isnan(t.tau)
        stats = f"   τ = {t.tau:+.2f}, p = {t.p_value:.2g}" if shown else ""
        if shown and t.endpoint:
            stats += f" (Holm {t.p_holm:.2g})"
        ax.set_title(
            BY_KEY[key].label + stats,
            fontsize=9,
            fontweight="bold" if shown and t.endpoint and t.p_holm < card.alpha else "normal",
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
    tau = (
        "; τ: Kendall with batch size, p by permutation within seeds, Holm-adjusted for the endpoints "
        f"(bold: an endpoint with Holm p < {card.alpha:g})"
        if len(recipes) == 1
        else f"; {len(recipes)} recipes, tested apart: see the table"
    )
    fig.suptitle(
        title
        or f"each measure against batch size: mean ± 1 s.d. over {len(seeds)} seed"
        f"{'s' * (len(seeds) > 1)}, dots beside it = runs{tau}",
        fontsize=10,
    )
    return fig


def write_measures(
    card, stem: str, formats=("png", "pdf"), dpi: int = 150, title: str | None = None, look=None
) -> list[str]:
    return save(draw_measures(card, title), stem, formats, dpi, look, panels=len(PANELS))


__all__ = ["draw_measures", "write_measures", "PANELS"]
