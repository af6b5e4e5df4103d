"""The generalization gap against each sharpness measure: does the sharper network generalize worse?

One panel per sharpness measure of the scorecard (``Measure.sharpness``) with values: x the measure, y the
gap (test − train error, points; one y axis for every panel), each run a point coloured by its batch size
(``plotting.palette``, as in every figure of the report), its marker by its seed, filled for the first
recipe and hollow (then half-filled) for the others.  The values are those the scorecard tested
(``figures.tested``: at a matched training loss where it did so).  The x axis is logarithmic where the
measure is positive and spans more than a decade.  The title gives the scorecard's τ of the gap with the
measure among runs of the same batch size (``stats.within``, the "τ gap" column): a measure that follows
the gap only across batch sizes may be the batch size measured twice, and the points' colours show it.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ...report.catalogue import BY_KEY, MEASURES
from ...report.stats import GAP
from .. import log_ticks, save
from ..levels import spans_decades
from ..palette import NEUTRAL, batch_colours, recipe_styles, seed_markers
from .by_batch import LETTERS, MATCHED_WORDS, UNITS, arms_of, columns_for, compared, lettered, seed_handles, tested

COLUMNS, WIDTH = 4, 2.9  # panels per row at most, and their width (inches)


def _panels(card) -> list[str]:
    """The sharpness measures with at least one finite value."""
    runs = compared(card)
    return [m.key for m in MEASURES if m.sharpness and any(_finite(r["values"].get(m.key)) for r in runs)]


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


def _title(card, key: str, arms: list[str], basis: str) -> str:
    lines = [BY_KEY[key].label + (f" ({MATCHED_WORDS})" if basis == "matched_loss" else "")]
    for arm in arms:
        t = card.test(arm, key, GAP)
        if t is not None and math.isfinite(t.tau):
            head = "" if len(arms) == 1 else f"{arm}: "
            lines.append(f"{head}τ gap = {t.tau:+.2f}, p = {t.p_value:.2g}")
    return "\n".join(lines)


def draw_gap(card, title: str | None = None, columns: int = COLUMNS) -> Figure:
    runs = compared(card)
    keys = _panels(card)
    arms, batches = arms_of(runs), sorted({r["batch_size"] for r in runs})
    colours, markers, styles = batch_colours(batches), seed_markers(r["seed"] for r in runs), recipe_styles(arms)
    columns = min(columns, len(keys))
    rows = math.ceil(len(keys) / columns)
    fig = Figure(figsize=(WIDTH * columns, 2.7 * rows + 1.0), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharey=True).ravel()
    for ax, key in zip(axes, keys):
        xs, basis = [], "trained"
        for arm in arms:
            mine = [r for r in runs if r["recipe"] == arm]
            x, basis = tested(mine, key)
            y, _ = tested(mine, "gap")
            for r, u, v in zip(mine, x, y):
                if not (math.isfinite(u) and math.isfinite(v)):
                    continue
                ax.plot(
                    u,
                    v,
                    markers[r["seed"]],
                    color=colours[r["batch_size"]],
                    fillstyle=styles[arm][1],
                    markersize=6,
                    mew=1.1,
                    alpha=0.9,
                )
                xs.append(u)
        if spans_decades([xs], decades=1.0):
            ax.set_xscale("log")
            log_ticks(ax.xaxis)
        ax.set_xlabel(UNITS.get(key, key))
        ax.set_title(_title(card, key, arms, basis), fontsize="small")
        lettered(ax, LETTERS[keys.index(key)])
        ax.grid(alpha=0.3)
        ax.yaxis.set_tick_params(labelleft=True)
    for ax in axes[len(keys) :]:
        ax.set_visible(False)
    for row in range(rows):
        axes[row * columns].set_ylabel("gap: test − train error (points)")
    handles = [Line2D([], [], color=c, marker="o", linestyle="none", label=f"batch {b}") for b, c in colours.items()]
    handles += seed_handles(markers)
    if len(arms) > 1:
        handles += [
            Line2D(
                [],
                [],
                color=NEUTRAL,
                marker="o",
                linestyle="none",
                fillstyle=styles[a][1],
                label=f"{a} ({styles[a][2]})",
            )
            for a in arms
        ]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3 * columns), frameon=False)
    fig.suptitle(
        title
        or "The generalization gap against each sharpness measure, one point per run;\nτ gap: Kendall's τ "
        "of gap and measure among runs of the same batch size (exploratory).",
        fontsize="medium",
    )
    return fig


def write_gap(card, stem: str, formats=("png", "pdf"), dpi: int = 150, look=None) -> list[str]:
    """``<stem>.<fmt>``; nothing when no sharpness measure or no gap has a value."""
    runs = compared(card)
    if not _panels(card) or not any(_finite(r["values"].get("gap")) for r in runs):
        return []
    return save(
        draw_gap(card, columns=columns_for(look, COLUMNS, WIDTH)), stem, formats, dpi, look, panels=len(_panels(card))
    )


__all__ = ["draw_gap", "write_gap"]
