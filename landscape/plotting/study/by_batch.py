"""The scorecard's figures of measures against batch size: ``draw_measures`` (one panel per measure) and
``draw_seeds`` (the endpoints, one line per seed).

Per recipe, the mean over seeds with its 95 % t-interval (mean ± t₀.₉₇₅,ₙ₋₁ · s / √n, ``t_interval``: an
interval for the mean over seeds, which ±1 standard deviation is not), each seed's value beside it; the
batch axis in powers of two, one colour per batch size (``plotting.palette``) as in every figure of the
report. Each panel shows the values the scorecard tested (``matching.values_of``): at the arm's matched
training loss where its runs carry ``<key>_matched``, and the panel says so. Each title gives Kendall's
τ with batch size and its p-value by permutation within seeds (``stats.trend``), with Holm's adjustment
for an endpoint, in bold when an endpoint's adjusted p-value is below the report's alpha. The per-seed
panels show the within-seed trends that permutation test compares. The runs of the rescaling control are
no arm of the study and are left out.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ...report.catalogue import BY_KEY, MEASURES
from ...report.effects import t_interval
from ...report.matching import has_matched, values_of
from .. import log_ticks, save
from ..levels import spans_decades
from ..palette import NEUTRAL, batch_colours, recipe_styles, seed_markers

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
    "train_loss": "training loss",
    "test_loss": "test loss",
    "train_error": "training error (%)",
    "test_error": "test error (%)",
    "gap": "test − train error (points)",
    "lambda_max": "λmax of the Hessian",
    "trace": "Hessian trace (Hutchinson)",
    "relative_flatness": "relative flatness κ_Tr",
    "fisher_rao": "Fisher–Rao norm",
    "epsilon_sharpness": "Keskar ε-sharpness (%)",
    "adaptive_sharpness": "adaptive worst-case rise (loss)",
    "adaptive_l2_sharpness": "adaptive ℓ2 worst-case rise (loss)",
    "adaptive_average": "mean rise, adaptive noise (loss)",
    "m_sharpness": "m-sharpness (loss rise)",
    "average_rise": "mean rise, random directions (loss)",
    "surface_rise": "mean rise on the 2-D grid (loss)",
    "noise_scale": "noise scale B_simple (samples)",
}
RESCALED = "rescaled"  # the recipe of the rescaling control's runs
MATCHED_WORDS = "at matched train loss"
LEVEL = 0.95


def compared(card) -> list[dict]:
    """The runs of the study's arms: the rescaling control's are left out."""
    return [r for r in card.runs if not r.get("control") and r["recipe"] != RESCALED]


def arms_of(runs: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["recipe"] for r in runs))


def tested(runs: list[dict], key: str) -> tuple[list[float], str]:
    """One arm's values of ``key`` as the scorecard tests them, and their basis (``matching.values_of``)."""
    return values_of(runs, key, has_matched(runs))


def batch_axis(ax, batches: list[int]) -> None:
    """A batch-size axis in powers of two, ticked at the study's batch sizes."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(batches, [str(b) for b in batches])
    ax.minorticks_off()
    ax.set_xlim(batches[0] / 2**0.5, batches[-1] * 2**0.6)


def measure_label(key: str, basis: str) -> str:
    """A measure's label with the weights its values are of: matched training loss, or the final weights."""
    return BY_KEY[key].label + (f" ({MATCHED_WORDS})" if basis == "matched_loss" else " (final weights)")


def stats_line(card, arm: str, key: str) -> tuple[str, bool]:
    """τ with batch size, its p (and Holm's for an endpoint) of one arm; and whether to set it in bold."""
    t = card.test(arm, key)
    if t is None or math.isnan(t.tau):
        return "", False
    words = f"τ = {t.tau:+.2f}, p = {t.p_value:.2g}" + (f" (Holm {t.p_holm:.2g})" if t.endpoint else "")
    return words, bool(t.endpoint and t.p_holm < card.alpha)


def draw_by_batch(ax, card, key: str, colours: dict | None = None) -> None:
    """One measure against batch size on ``ax``, titled: per arm the mean with its t-interval, each seed
    beside it, the values the scorecard tested (``tested``)."""
    runs = compared(card)
    arms, batches = arms_of(runs), sorted({r["batch_size"] for r in runs})
    colours = colours or batch_colours(batches)
    markers, styles = seed_markers(r["seed"] for r in runs), recipe_styles(arms)
    seeds = sorted(markers)
    bases, drawn = {}, []
    for i, arm in enumerate(arms):
        mine = [r for r in runs if r["recipe"] == arm]
        values, bases[arm] = tested(mine, key)
        centre = 0.5 * (i - (len(arms) - 1) / 2) / max(len(arms) - 1, 1)  # arms side by side (log2 units)
        means = []
        for b in batches:
            here = [(r, v) for r, v in zip(mine, values) if r["batch_size"] == b]
            for r, v in here:  # each seed beside the mean, not under it
                j = seeds.index(r["seed"])
                shift = centre + 0.12 + (0.16 * j / (len(seeds) - 1) if len(seeds) > 1 else 0.0)
                ax.plot(b * 2**shift, v, markers[r["seed"]], color=colours[b], alpha=0.55, markersize=3.5, mew=0)
            ci = t_interval([v for _, v in here])
            if math.isnan(ci.mean):
                continue
            x = b * 2**centre
            means.append((x, ci.mean))
            error = [[ci.mean - ci.low], [ci.high - ci.mean]] if ci.n > 1 else None
            ax.errorbar(x, ci.mean, yerr=error, fmt="none", ecolor=colours[b], elinewidth=1.4, capsize=3, zorder=3)
            ax.plot(x, ci.mean, "o", color=colours[b], markersize=5, fillstyle=styles[arm][1], zorder=4, mew=1.2)
            drawn += [v for _, v in here] + ([ci.low, ci.high] if ci.n > 1 else [])
        if means:
            xs, ys = zip(*means)
            ax.plot(xs, ys, styles[arm][0], color=NEUTRAL, linewidth=1.0, zorder=2)
    batch_axis(ax, batches)
    if spans_decades([drawn]):  # a measure spanning decades (a trace of 40 and of 4000) on a log axis
        ax.set_yscale("log")
        log_ticks(ax.yaxis)
    ax.set_ylabel(UNITS.get(key, BY_KEY[key].label))
    ax.grid(alpha=0.3)
    shared = set(bases.values())
    text = measure_label(key, shared.pop() if len(shared) == 1 else "final")
    words = {arm: stats_line(card, arm, key) for arm in arms}
    for arm, (line, _) in words.items():
        mixed = len(set(bases.values())) > 1 and bases[arm] == "matched_loss"
        head = f"{arm}: " if len(arms) > 1 else ""
        if line or mixed:
            text += f"\n{head}{line}" + (f" ({MATCHED_WORDS})" if mixed else "")
    ax.set_title(text, fontsize="small", fontweight="bold" if any(b for _, b in words.values()) else "normal")


def recipe_handles(arms: list[str]) -> list[Line2D]:
    styles = recipe_styles(arms)
    return [
        Line2D([], [], color=NEUTRAL, linestyle=styles[a][0], marker="o", fillstyle=styles[a][1], label=a) for a in arms
    ]


def seed_handles(seeds) -> list[Line2D]:
    return [
        Line2D([], [], color="0.45", marker=m, linestyle="none", markersize=5, label=f"seed {s}")
        for s, m in seed_markers(seeds).items()
    ]


def columns_for(look, most: int = 4, width: float = 3.3) -> int:
    """Panels per row: ``most``, or as many as the look's page width holds at its font size (a panel
    ``width`` inches wide at 10 pt), so that titles and labels keep their size against the panels when
    ``save`` fits the figure to a paper's two columns."""
    if look is None or not look.two:
        return most
    return max(1, min(most, int(look.two // (width * (look.font or 10) / 10))))


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def lettered(ax, letter: str) -> None:
    """Put ``(letter)`` before the title ``ax`` already has, on the left."""
    text, weight = ax.get_title(), ax.title.get_fontweight()
    ax.set_title("")
    ax.set_title(f"({letter}) {text}", loc="left", fontsize="small", fontweight=weight)


def measured_keys(card) -> list[str]:
    """Every measure with a value in some compared run, in the catalogue's order but the training loss."""
    runs = compared(card)
    return [
        m.key
        for m in MEASURES
        if m.key != "train_loss" and any(math.isfinite(r["values"].get(m.key, math.nan)) for r in runs)
    ]


def draw_measures(card, title: str | None = None, keys=None, columns: int = 4) -> Figure:
    """Every measured key (``measured_keys``; or ``keys``) against batch size, a panel each, lettered; the
    measures not measured are named under the title with why (the report's ``skip``)."""
    keys = list(keys) if keys is not None else measured_keys(card)
    runs = compared(card)
    arms, batches = arms_of(runs), sorted({r["batch_size"] for r in runs})
    columns = min(columns, len(keys))
    rows = math.ceil(len(keys) / columns)
    fig = Figure(figsize=(3.3 * columns, (3.0 if columns > 2 else 2.4) * rows + 0.9), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharex=True).ravel()
    colours = batch_colours(batches)
    seeds = len({r["seed"] for r in runs})
    for ax, key, letter in zip(axes, keys, LETTERS):
        draw_by_batch(ax, card, key, colours)
        ax.set_title(ax.get_title() + f"\n{', '.join(arms)}; {seeds} seeds")
        lettered(ax, letter)
    for ax in axes[len(keys) :]:
        ax.set_visible(False)
    for ax in axes[: len(keys)][-columns:]:
        ax.set_xlabel("batch size")
        ax.xaxis.set_tick_params(labelbottom=True)
    handles = (recipe_handles(arms) if len(arms) > 1 else []) + seed_handles(r["seed"] for r in runs)
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False)
    several = len({r["seed"] for r in runs}) > 1
    interval = (
        "the mean over seeds with its 95 % t-interval\n(t with n − 1 degrees of freedom, n seeds at that batch size)"
        if several
        else "one seed: its value, no interval"
    )
    skipped = [BY_KEY[k].label for k in (card.settings.get("skip") or []) if k in BY_KEY]
    missing = f"\nNot measured: {', '.join(skipped)} (the report's skip: the study's budget)." if skipped else ""
    fig.suptitle(
        title
        or f"Each measure against batch size, per recipe: {interval};\nbeside it, each seed's value. τ: Kendall's "
        "τ with batch size, p by permutation within seeds,\nHolm-adjusted over the endpoints "
        f"(bold: an endpoint with Holm p < {card.alpha:g}).{missing}",
        fontsize="medium",
    )
    return fig


def draw_seeds(card, title: str | None = None) -> Figure:
    """Per endpoint and arm, the measure against batch size with one line per seed: the within-seed
    trends whose order the permutation test compares (one row per arm, the rows sharing each y axis)."""
    runs = compared(card)
    arms, batches = arms_of(runs), sorted({r["batch_size"] for r in runs})
    keys = list(card.endpoints)
    colours, markers = batch_colours(batches), seed_markers(r["seed"] for r in runs)
    fig = Figure(figsize=(3.4 * len(keys) + 0.4, 2.9 * len(arms) + 0.9), layout="constrained")
    axes = fig.subplots(len(arms), len(keys), squeeze=False, sharex=True, sharey="col")
    for row, arm in enumerate(arms):
        mine = [r for r in runs if r["recipe"] == arm]
        for col, key in enumerate(keys):
            ax = axes[row, col]
            values, basis = tested(mine, key)
            for seed in sorted({r["seed"] for r in mine}):
                points = sorted((r["batch_size"], v) for r, v in zip(mine, values) if r["seed"] == seed)
                points = [(b, v) for b, v in points if math.isfinite(v)]
                if not points:
                    continue
                xs, ys = zip(*points)
                ax.plot(xs, ys, "-", color=NEUTRAL, linewidth=0.9, alpha=0.7, zorder=2)
                for b, v in points:
                    ax.plot(b, v, markers[seed], color=colours[b], markersize=6, mec=NEUTRAL, mew=0.5, zorder=3)
            batch_axis(ax, batches)
            ax.grid(alpha=0.3)
            words, bold = stats_line(card, arm, key)
            head = f"{arm}: " if len(arms) > 1 else ""
            seeds = len({r["seed"] for r in mine})
            ax.set_title(
                head + measure_label(key, basis) + f"\n{seeds} seeds" + (f"; {words}" if words else ""),
                fontsize="small",
                fontweight="bold" if bold else "normal",
            )
            lettered(ax, LETTERS[row * len(keys) + col])
            ax.set_ylabel(UNITS.get(key, BY_KEY[key].label))
            if row == len(arms) - 1:
                ax.set_xlabel("batch size")
    handles = [
        Line2D([], [], color=NEUTRAL, marker=m, linestyle="-", linewidth=0.9, label=f"seed {s}")
        for s, m in markers.items()
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 8), frameon=False)
    fig.suptitle(
        title
        or "the endpoints per seed: one line per seed across batch sizes (the order the permutation "
        "test within seeds compares); τ and p as in the scorecard",
        fontsize="medium",
    )
    return fig


def write_measures(
    card, stem: str, formats=("png", "pdf"), dpi: int = 150, title: str | None = None, look=None
) -> list[str]:
    return save(draw_measures(card, title, columns=columns_for(look)), stem, formats, dpi, look, panels=len(PANELS))


def write_seeds(card, stem: str, formats=("png", "pdf"), dpi: int = 150, look=None) -> list[str]:
    if not compared(card):
        return []
    return save(draw_seeds(card), stem, formats, dpi, look, panels=2)


__all__ = [
    "draw_measures",
    "draw_seeds",
    "draw_by_batch",
    "write_measures",
    "write_seeds",
    "columns_for",
    "compared",
    "tested",
    "PANELS",
    "UNITS",
]
