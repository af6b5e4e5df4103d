"""The report's summary page (``<name>_summary.{png,pdf}``, A4 landscape): what a reader takes in at a glance.

(a) the test error against batch size per recipe, the mean over seeds with its 95 % t-interval;
(b) λmax along training against the stability limit of the rate, 2(1 + β)/η (Cohen et al. 2021), from the
    runs' ``log.csv`` (``plotting.training``), for the first recipe;
(c) Keskar et al.'s (2017) interpolation between a small- and a large-batch minimum, from
    ``<figures>/<name>_interpolation.json`` where the report wrote it;
(d) the sharpness endpoints against batch size, at matched training loss where the scorecard tested them so;
(e) the training loss along a random direction and along the top Hessian eigenvector;
(f) the verdict.

A panel without data is left out and the letters follow the panels drawn.  One colour per batch size, as
in every figure of the report (``plotting.palette``).  The page keeps its A4 size in every ``--style``
(its fonts follow the style).
"""

from __future__ import annotations

import json
import math
import os
import textwrap

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ...report.catalogue import BY_KEY
from ...report.minimum import not_at_minimum
from ...report.runs import Run, describe
from ...report.stats import ANY
from ...report.verdict import smallest_p
from .. import hessian_1d, log_ticks, save
from ..levels import log_axis, log_scale
from ..look import use
from ..palette import NEUTRAL, batch_colours
from ..training import draw_sharpness, sharpness_curve
from .by_batch import arms_of, compared, draw_by_batch, recipe_handles
from .sharpness_loss import draw_lambda_means, lambda_path
from .surfaces import hessian_pairs, studied

A4 = (11.69, 8.27)  # inches, landscape
ROOM = 4  # columns of panels in a row of the page
LINE = 0.13  # inches: a line of the verdict
WIDTH = 190  # characters per line of the verdict
LETTERS = "abcdefgh"


def interpolation(path: str) -> dict | None:
    """The interpolation record at ``path`` (None when absent or holding no pair)."""
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        found = json.load(handle)
    return found if found.get("pairs") else None


def training_curves(results: list[dict]) -> dict:
    """(recipe, batch) -> each seed's (step, λmax, stability limit) rows, for the first recipe's runs
    whose ``log.csv`` holds λmax."""
    mine = studied(results)
    if not mine:
        return {}
    first = mine[0]["run"]["recipe"]
    sharp = {}
    for result in mine:
        run = result["run"]
        if run["recipe"] != first or not run.get("checkpoint"):
            continue
        rows = sharpness_curve(os.path.dirname(run["checkpoint"]))
        if rows:
            sharp.setdefault((first, run["batch_size"]), []).append(rows)
    return dict(sorted(sharp.items(), key=lambda item: item[0][1]))


def sharpness_keys(card) -> list[str]:
    """The endpoints that are sharpness measures (λmax when none is)."""
    return [k for k in card.endpoints if BY_KEY[k].sharpness] or ["lambda_max"]


def _name(key: str) -> str:
    return BY_KEY[key].label.replace(" %", "").replace(" (points)", "")


def _titled(ax, letter: str, text: str) -> None:
    ax.set_title(f"({letter}) {text}", loc="left", fontsize="small")


def _left(ax, letter: str | None = None) -> None:
    """Move a title already set (a panel drawn by another module) to the left, after ``letter``."""
    text = ax.get_title()
    ax.set_title("")
    ax.set_title((f"({letter}) " if letter else "") + text, loc="left", fontsize="small")


def _values(pair: dict, key: str) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in pair.get(key) or []], dtype=float)


def _interpolation_panel(fig, spec, record: dict, colours: dict, letter: str) -> None:
    """The first recipe's pairs: each seed thin, the mean over seeds bold; train solid, test dashed; the two
    trained networks (α = 0 and 1) marked in their batch sizes' colours."""
    ax = fig.add_subplot(spec)
    alphas = np.asarray(record["alphas"], dtype=float)
    recipe = record["pairs"][0]["recipe"]
    pairs = [p for p in record["pairs"] if p["recipe"] == recipe]
    drawn = []
    for key, style in (("train_loss", "-"), ("test_loss", "--")):
        curves = [c for c in (_values(p, key) for p in pairs) if c.size == alphas.size and np.isfinite(c).any()]
        if not curves:
            continue
        for curve in curves:
            ax.plot(alphas, curve, style, color=NEUTRAL, linewidth=0.7, alpha=0.6)
        mean = np.mean(curves, axis=0)
        ax.plot(alphas, mean, style, color="black", linewidth=1.6)
        for at, batch in ((0.0, pairs[0].get("batch_from")), (1.0, pairs[0].get("batch_to"))):
            near = int(np.argmin(np.abs(alphas - at)))
            if batch in colours:
                ax.plot(at, mean[near], "o", color=colours[batch], markersize=6, zorder=4, mec="black", mew=0.5)
        drawn += curves
    if log_scale("auto", drawn):
        ax.set_yscale("log")
        log_axis(ax.yaxis, drawn)
    for end in (0.0, 1.0):
        ax.axvline(end, color="0.5", linewidth=0.8, linestyle=":", zorder=0)
    small, large = pairs[0].get("batch_from"), pairs[0].get("batch_to")
    ax.set_xlabel(f"α in (1 − α) θ₀ + α θ₁; 0: batch {small}, 1: batch {large}")
    ax.set_ylabel("loss" + (" (log scale)" if ax.get_yscale() == "log" else ""))
    ax.grid(alpha=0.3)
    ax.legend(
        handles=[
            Line2D([], [], color="black", linestyle="-", label="train"),
            Line2D([], [], color="black", linestyle="--", label="test"),
        ],
        fontsize="x-small",
        frameon=False,
        loc="upper center",
        ncols=2,
    )
    seeds = len({p["seed"] for p in pairs})
    _titled(ax, letter, f"interpolation, {recipe} ({seeds} seed{'s' * (seeds > 1)}; bold: mean)")


def _hessian_panel(fig, spec, pairs: list, colours: dict, letter: str) -> None:
    left, right = spec.subgridspec(1, 2, wspace=0.05).subplots(sharey=True)
    random = [r for _, r, _ in pairs]
    along = [h for _, _, h in pairs]
    shades = [colours[result["run"]["batch_size"]] for result, _, _ in pairs]
    log = log_scale("auto", [s.values[hessian_1d.QUANTITY] for s in (*random, *along)])
    hessian_1d.curves(left, random, shades, log)
    hessian_1d.curves(right, along, shades, log)
    left.set_xlabel("α, random filter-normalized direction", fontsize="x-small")
    right.set_xlabel("t, unit top Hessian eigenvector", fontsize="x-small")
    left.set_ylabel("training loss" + (" (log scale)" if log else ""))
    _titled(left, letter, "loss along a random direction | the top eigenvector")


def glance(card, name: str) -> list[str]:
    """The verdict in a few lines, from the same test records as ``verdict``: per arm, each endpoint's τ,
    Holm-adjusted p and paired difference; whether the runs were compared at matched loss; what the design
    can show at best; the runs not at a minimum.  The full verdict is in ``<name>.md``."""
    runs = compared(card)
    family = sum(1 for t in card.confirmatory() if math.isfinite(t.p_holm))
    lines = []
    for arm in arms_of(runs):
        mine = [r for r in runs if r["recipe"] == arm]
        words, starred = [], False
        for key in card.endpoints:
            t = card.test(arm, key)
            if t is None or not math.isfinite(t.tau):
                continue
            shown = math.isfinite(t.p_holm) and t.p_holm < card.alpha
            f = card.test(arm, key, ANY)  # a non-monotone difference, as the verdict words it
            other = not shown and f is not None and math.isfinite(f.p_holm) and f.p_holm < card.alpha
            move = ("rises" if t.tau > 0 else "falls") if shown else "no difference shown"
            if other:
                move = f"differs, not monotonically (Friedman Holm p = {f.p_holm:.2g})"
            effect = (
                f"; {t.large} − {t.small}: {t.difference:+.3g} [{t.ci_low:.3g}, {t.ci_high:.3g}]"
                if math.isfinite(t.ci_low)
                else ""
            )
            matched = "*" if t.basis == "matched_loss" else ""
            starred = starred or bool(matched)
            words.append(f"{_name(key)}{matched} {move} (τ = {t.tau:+.2f}, Holm p = {t.p_holm:.2g}{effect})")
        lines.append(f"{arm}: " + ("; ".join(words) if words else "no endpoint could be tested"))
        level = (card.settings.get("matched") or {}).get(arm) or {}
        if starred and level.get("level") is not None:
            lines.append(f"    {arm}: *: at matched train loss {level['level']:g} ({len(mine)} networks)")
    best = min(smallest_p([r for r in runs if r["recipe"] == a], card.permutations, card.seed) for a in arms_of(runs))
    if best >= card.alpha or (family and best * family >= card.alpha):
        lines.append(
            f"The smallest p-value this design can reach is {best:.2g} ({min(1.0, best * max(family, 1)):.2g} after "
            f"Holm over {family} tests): more seeds or batch sizes are needed before a difference can be shown."
        )
    away = not_at_minimum(card)
    if away:
        lines.append(f"Caution: {len(away)} of {len(runs)} compared networks are not at a minimum (see the flags).")
    lines.append(f"Endpoints Holm-adjusted over {family} tests at alpha {card.alpha:g}; the full verdict: {name}.md")
    return [wrapped for line in lines for wrapped in textwrap.wrap(line, width=WIDTH, subsequent_indent="    ")]


def _verdict_panel(ax, card, name: str, letter: str) -> None:
    ax.axis("off")
    lines = glance(card, name)
    ax.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", fontsize="small", transform=ax.transAxes)
    _titled(ax, letter, "verdict at a glance")


def _test_error_panel(fig, spec, card, colours: dict, letter: str) -> None:
    ax = fig.add_subplot(spec)
    draw_by_batch(ax, card, "test_error", colours)
    _left(ax, letter)
    ax.set_xlabel("batch size")


def _training_panel(fig, spec, curves: dict, colours: dict, letter: str) -> None:
    ax = fig.add_subplot(spec)
    recipe = next(iter(curves))[0]
    draw_sharpness(ax, curves, [recipe], colours)
    ax.set_title("")
    log_ticks(ax.yaxis)  # 0.5, 1, 2, 5, ... as on the other panels
    ax.grid(False, which="minor")
    _titled(ax, letter, f"λmax along training, {recipe}; dashed: 2(1 + β)/η")


def _sharpness_panel(fig, spec, card, keys: list[str], colours: dict, letters) -> None:
    """One panel per sharpness measure, each with its own letter (``letters``: the figure's, in order)."""
    axes = spec.subgridspec(1, len(keys)).subplots(squeeze=False, sharex=True)[0]
    for ax, key in zip(axes, keys):
        draw_by_batch(ax, card, key, colours)
        _left(ax, next(letters))
        ax.set_xlabel("batch size")


def _loss_panel(fig, spec, card, colours: dict, letter: str) -> None:
    ax = fig.add_subplot(spec)
    draw_lambda_means(ax, card, colours)
    arms = arms_of(compared(card))
    _titled(ax, letter, f"λmax against the training loss ({', '.join(arms)}; line style: arm)")


def rows_of(widths: list[int], room: int = ROOM) -> list[list[int]]:
    """Panels (their widths, in columns) packed into rows of ``room`` columns, in order, none split."""
    rows = [[]]
    for i, width in enumerate(widths):
        if rows[-1] and sum(widths[j] for j in rows[-1]) + width > room:
            rows.append([])
        rows[-1].append(i)
    return rows


def draw_summary(results: list[dict], card, out: str, interpolation_record: dict | None, name: str) -> Figure:
    runs = compared(card)
    arms, batches = arms_of(runs), sorted({r["batch_size"] for r in runs})
    colours = batch_colours(batches)
    curves = training_curves(results)
    pairs = hessian_pairs(results, out)
    keys = sharpness_keys(card)
    # each panel takes its letters from the figure's, in order (the sharpness panel one per measure)
    panels = [(1, lambda fig, spec, letters: _test_error_panel(fig, spec, card, colours, next(letters)))]
    if curves:
        panels.append((1, lambda fig, spec, letters: _training_panel(fig, spec, curves, colours, next(letters))))
    if interpolation_record:
        panels.append(
            (
                1,
                lambda fig, spec, letters: _interpolation_panel(
                    fig, spec, interpolation_record, colours, next(letters)
                ),
            )
        )
    panels.append((len(keys), lambda fig, spec, letters: _sharpness_panel(fig, spec, card, keys, colours, letters)))
    if any(lambda_path(r) for r in runs):
        panels.append((1, lambda fig, spec, letters: _loss_panel(fig, spec, card, colours, next(letters))))
    if pairs:
        panels.append((2, lambda fig, spec, letters: _hessian_panel(fig, spec, pairs, colours, next(letters))))
    rows = rows_of([width for width, _ in panels])
    # A4 landscape; a page of one row of panels (few sources) is shorter rather than stretched.  The
    # verdict takes the height of its lines, the panels share the rest.
    height = A4[1] if len(rows) > 1 else 0.62 * A4[1]
    verdict = LINE * (len(glance(card, name)) + 2)
    fig = Figure(figsize=(A4[0], height), layout="constrained")
    panel = (height - verdict - 1.0) / len(rows)  # 1 in: the title and the legend
    grid = fig.add_gridspec(len(rows) + 1, 1, height_ratios=(*[panel] * len(rows), verdict))
    letters = iter(LETTERS)
    for row, members in zip(grid, rows):
        cells = row.subgridspec(1, len(members), width_ratios=[panels[i][0] for i in members])
        for cell, i in zip(cells, members):
            panels[i][1](fig, cell, letters)
    _verdict_panel(fig.add_subplot(grid[len(rows)]), card, name, next(letters))
    handles = [Line2D([], [], color=c, marker="o", linestyle="none", label=f"batch {b}") for b, c in colours.items()]
    if len(arms) > 1:
        handles += recipe_handles(arms)
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False, fontsize="small")
    target = (results[0].get("target") or {}) if results else {}
    what = describe([Run(**r["run"]) for r in studied(results)]) if results else ""
    fig.suptitle(
        f"{target.get('model', '')} on {target.get('dataset', '')}: {what}\n"
        + (
            "(against batch size: the mean over seeds with its 95 % t-interval, each seed beside it)"
            if len({r["seed"] for r in runs}) > 1
            else "(one seed: each value alone, no interval)"
        ),
        fontsize="medium",
    )
    return fig


def write_summary(results: list[dict], card, out: str, stem: str, formats=("png", "pdf"), style="default") -> list[str]:
    """``<stem>_summary.<fmt>``; reads ``<stem>_interpolation.json`` when it is there.  Drawn in ``style``."""
    if not compared(card):
        return []
    record = interpolation(f"{stem}_interpolation.json")
    with use(style) as look:
        fig = draw_summary(results, card, out, record, os.path.basename(stem))
        return save(fig, f"{stem}_summary", formats, look.dpi or 150)


__all__ = ["draw_summary", "write_summary", "interpolation", "training_curves", "A4"]
