"""Figures of training sweeps, drawn from manifests and the runs' ``log.csv`` alone (no model is loaded).

Left: the final test error against the batch size (log scale), one line per recipe, the mean over
seeds with error bars of one standard deviation and each seed as a faint dot: the picture of
Goyal et al. (2017, Fig. 1) and Keskar et al. (2017), where the naive recipe's error climbs at large
batch and the others stay flat.  Middle: the test error per epoch of each run (the mean over seeds),
one colour per batch size and one line style per recipe.

Right, where the runs logged it (``train --curvature_every``): λmax of the training loss against the
optimizer step, the mean over seeds, with the stability limit of the rate in force at each step as a
dashed line of the same colour (warm-up and decay included): 2/η for gradient descent, 2(1 + β)/η with
heavy-ball momentum β, (2 + 2β)/(η(1 + 2β)) with Nesterov's (the step sizes above which gradient descent
on a quadratic of curvature λ diverges; Cohen et al. 2021).  Sharpness meeting its line is the edge of
stability; a curve below its line is a batch whose gradient noise keeps it flatter.
"""

from __future__ import annotations

import math
import os

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ..errors import InputError
from ..io.run_files import read_log, read_run
from ..train.recipes import stability_limit
from . import log_ticks, save
from .look import invalid_mathtext, plain_text
from .palette import batch_colours

STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2)))  # one per recipe
LIMIT = "0.45"  # the stability limits: neutral, never a batch size's colour


def _in_steps(folder: str) -> bool:
    """Whether a run's budget is in optimizer steps (its curves are then drawn against the step)."""
    return bool((read_run(folder) or {}).get("identity", {}).get("steps"))


def _curve(folder: str, by_step: bool = False) -> list[tuple[int, float]]:
    """(epoch or step, test error %) of one run's log; the training error where the run has no test set."""
    rows = read_log(folder)
    out = []
    for r in rows:
        acc = float(r["test_acc"]) if r.get("test_acc") not in (None, "", "nan") else float(r.get("train_acc") or "nan")
        if math.isfinite(acc):  # a row without an accuracy (or an edited one) draws nothing
            out.append((int(r["step"] if by_step else r["epoch"]), 100.0 - acc))
    return out


def sharpness_curve(folder: str, by_step: bool = True) -> list[tuple[float, float, float]]:
    """(step, or epoch where ``by_step`` is false, λmax, the stability limit at that step's rate) of every
    row of a run's log with a λmax.  Epochs are fractional: the step over the run's steps per epoch, so
    runs of equal epochs and very unequal steps (a learning rate that follows the batch) share an axis."""
    rows = read_log(folder)
    identity = (read_run(folder) or {}).get("identity", {})
    momentum, nesterov = float(identity.get("momentum", 0.0)), bool(identity.get("nesterov", False))
    last = rows[-1] if rows else {}
    per_epoch = int(last.get("step") or 0) / int(last.get("epoch") or 1) if not by_step else 1.0
    out = []
    for r in rows:
        value, lr = float(r.get("lambda_max") or "nan"), float(r.get("lr") or "nan")
        if not (math.isfinite(value) and math.isfinite(lr) and lr > 0):  # no λmax logged (or not a number)
            continue
        limit = stability_limit(lr, momentum, nesterov)
        out.append((int(r["step"]) / (per_epoch or 1.0) if not by_step else int(r["step"]), value, limit))
    return out


def _what(done: list[dict]) -> str:
    """Model, data set and budget of the runs (and the train loss that stopped them), from their records:
    one line for the figure."""

    seen = {}
    for r in done:
        identity = (read_run(r["folder"]) or {}).get("identity", {})
        for key in ("model", "dataset"):
            seen.setdefault(key, set()).add(identity.get(key, "?"))
        budget = ("steps", identity["steps"]) if identity.get("steps") else ("epochs", identity.get("epochs", "?"))
        stops = [f"train {what} ≤ {identity[f'stop_{what}']:g}" for what in ("loss", "error")
                 if identity.get(f"stop_{what}") is not None]  # fmt: skip
        if stops:  # the budget a cap: the run stops where its training reaches the level
            budget = (budget[0], f"≤ {budget[1]}, stopped at {' or '.join(stops)}")
        seen.setdefault(budget[0], set()).add(budget[1])
    words = [
        f"{key} " + (" / ".join(map(str, sorted(values, key=str))) if len(values) < 4 else "(mixed)")
        for key, values in seen.items()
    ]
    mixed = [key for key, values in seen.items() if len(values) > 1]
    return ", ".join(words) + (f"  — note: the runs differ in {' and '.join(mixed)}" if mixed else "")


def draw(rows: list[dict], title: str | None = None, mathtext: bool = False) -> Figure:
    rows = list({os.path.realpath(r["folder"]): r for r in rows}.values())  # a sweep given twice counts once
    done = [r for r in rows if r["done"] and not math.isnan(r["test_error"])]
    if not done:
        raise InputError("the manifests list no finished run with a test error: nothing to draw")
    recipes = list(dict.fromkeys(r["recipe"] for r in done))
    batches = sorted({r["batch_size"] for r in done})
    by_step = any(_in_steps(r["folder"]) for r in done)  # equal steps: the curves against the step
    curves = {id(r): sharpness_curve(r["folder"], by_step) for r in done}
    sharp = {
        (recipe, b): [curves[id(r)] for r in done if (r["recipe"], r["batch_size"]) == (recipe, b) and curves[id(r)]]
        for recipe in recipes
        for b in batches
    }
    panels = 3 if any(sharp.values()) else 2
    fig = Figure(figsize=(5.5 * panels, 4.8))
    left, right, *third = fig.subplots(1, panels)
    for i, recipe in enumerate(recipes):
        colour = f"C{i}"
        xs, means, stds = [], [], []
        for b in batches:
            errors = [r["test_error"] for r in done if r["recipe"] == recipe and r["batch_size"] == b]
            if not errors:
                continue
            left.scatter([b] * len(errors), errors, s=22, color=colour, alpha=0.45, linewidths=0)
            xs.append(b)
            means.append(float(np.mean(errors)))
            stds.append(float(np.std(errors, ddof=1)) if len(errors) > 1 else 0.0)
        seeds = len({r["seed"] for r in done if r["recipe"] == recipe})
        left.errorbar(
            xs,
            means,
            yerr=stds,
            color=colour,
            marker="o",
            capsize=3,
            linewidth=1.8,
            label=f"{recipe} ({seeds} seed{'s' * (seeds > 1)})",
        )
    left.set_xscale("log", base=2)
    left.set_xticks(batches, [str(b) for b in batches])
    left.set_xlabel("batch size")
    left.set_ylabel("final test error (%)")
    left.set_title("test error against batch size (mean ± 1 s.d. over seeds)", fontsize=10)
    left.grid(alpha=0.3)
    left.legend(frameon=False)

    colour_of = batch_colours(batches)  # the report's colours: one per batch size, the smallest darkest
    for i, recipe in enumerate(recipes):
        for b in batches:
            curves = [_curve(r["folder"], by_step) for r in done if r["recipe"] == recipe and r["batch_size"] == b]
            curves = [c for c in curves if c]
            if not curves:
                continue
            length = min(len(c) for c in curves)
            epochs = [e for e, _ in curves[0][:length]]
            mean = np.mean([[v for _, v in c[:length]] for c in curves], axis=0)
            right.plot(epochs, mean, STYLES[i % len(STYLES)], color=colour_of[b], linewidth=1.3)
    right.set_yscale("log")
    log_ticks(right.yaxis)
    right.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    right.set_xlabel("optimizer step" if by_step else "epoch")
    right.set_ylabel("test error (%)")
    right.set_title("test error during training (mean over seeds)", fontsize=10)
    right.grid(alpha=0.3, which="both")
    handles = [Line2D([], [], color=colour_of[b], label=f"batch {b}") for b in batches]
    handles += [Line2D([], [], color="0.3", linestyle=STYLES[i % len(STYLES)], label=r) for i, r in enumerate(recipes)]
    right.legend(handles=handles, frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if third:
        draw_sharpness(third[0], sharp, recipes, colour_of, by_step)
    arms = ", ".join(f"{r} ({len({x['seed'] for x in done if x['recipe'] == r})} seeds)" for r in recipes)
    for ax, letter, weights in zip([left, right, *third], "abc", ("final weights", "along training", "along training")):
        ax.set_title(f"({letter}) {ax.get_title()}\n{arms}, {weights}", fontsize=10, loc="left")
        ax.set_title("")  # the centred title moved into the lettered one
    if "adaptive" in recipes:
        left.text(
            0.99, 0.02, "adaptive: at its first batch", transform=left.transAxes, ha="right", fontsize=7, color="0.4"
        )
    what = _what(done)
    fig.suptitle(title or what, fontsize=11)
    fig.text(0.5, 0.005, what if title else "", ha="center", fontsize=8, color="0.35")
    if not mathtext:  # before the layout measures the texts: a $ from a recipe or --title is a dollar sign
        plain_text(fig)
    try:
        fig.tight_layout(rect=(0, 0.03, 1, 1))
    except ValueError as exc:  # mathtext the user asked for that does not parse
        if not mathtext:
            raise
        raise invalid_mathtext(exc) from None
    return fig


def draw_sharpness(ax, sharp: dict, recipes: list[str], colour_of: dict, by_step: bool = True) -> None:
    """λmax against the step (or epoch) per (recipe, batch), the mean over seeds; each stability limit once,
    grey and dashed, labelled with its rate (a limit is a rate's, not a batch size's: batches that share a
    rate share it)."""
    highest, drawn = [], {}
    for (recipe, b), curves in sharp.items():
        if not curves:
            continue
        length = min(len(c) for c in curves)
        steps = [step for step, _, _ in curves[0][:length]]
        mean = np.mean([[v for _, v, _ in c[:length]] for c in curves], axis=0)
        style = STYLES[recipes.index(recipe) % len(STYLES)]
        ax.plot(steps, mean, style, color=colour_of[b], linewidth=1.4)
        limits = [limit for _, _, limit in curves[0][:length]]
        key = tuple(round(v, 9) for v in limits)
        if key not in drawn:  # the rate logged at a row held over the steps before it: a step at each change
            ax.plot(steps, limits, color=LIMIT, linewidth=0.9, linestyle=(0, (4, 3)), drawstyle="steps-pre")
            drawn[key] = (steps[-1], limits[-1])
        highest.append(max(float(np.max(mean)), min(limits)))
    for x, limit in drawn.values():  # each limit named by the value it holds at its end
        ax.annotate(  # below its line: above it, on a low panel, the name ran out of the axes
            f"2(1+β)/η = {limit:.3g}", (x, limit), xytext=(0, -2), textcoords="offset points", ha="right",
            va="top", fontsize=7, color=LIMIT,
        )  # fmt: skip
    ax.set_yscale("log")
    if highest:  # a limit that leaps after a decay of the rate does not squash the curves
        ax.set_ylim(top=1.5 * max(highest))
    log_ticks(ax.yaxis)
    ax.set_xlabel("optimizer step" if by_step else "epoch")
    ax.set_ylabel("λmax of the training loss")
    ax.set_title("sharpness along training, the mean over seeds\n(grey dashed: the stability limit of the rate)",
                 fontsize=10)  # fmt: skip
    ax.grid(alpha=0.3, which="both")


def write_training(
    rows: list[dict], stem: str, formats=("png", "pdf"), dpi: int = 150, title: str | None = None, look=None
) -> list[str]:
    folder = os.path.dirname(stem)
    if folder:
        os.makedirs(folder, exist_ok=True)
    figure = draw(rows, title, mathtext=bool(look and look.mathtext))
    return save(figure, stem, formats, dpi, look, panels=len(figure.axes))


__all__ = ["draw", "write_training", "draw_sharpness", "sharpness_curve"]
