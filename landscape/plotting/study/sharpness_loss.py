"""Sharpness against the training loss: the comparison at every loss level, not at one.

Cross-entropy's curvature shrinks as the loss falls, so "is the large batch sharper?" depends on where two
networks are compared; set against the training loss, every level is a comparison.  For each arm:

- λmax along training against the training loss at the same step (each run's ``log.csv``, logged with
  ``--curvature_every`` or ``--curvature_points``): each seed a thin line, the mean over seeds a thick one,
  one colour per batch size; the mean is taken on a common grid of losses (log scale) within the range
  every seed of the batch size covers, each seed's λmax interpolated in log-log;
- adaptive sharpness at the levels where each run kept its weights (``report --sharpness_path``), at its
  matched level and at its final weights: each seed's points joined thin, the mean at each kept level thick.

The loss axis runs from high to low, as training does.  Every panel is lettered and names its arm, what
its values are, and the seeds.
"""

from __future__ import annotations

import math
import os

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ...io.run_files import read_log
from ...report.matching import MATCHED
from .. import log_ticks, save
from ..palette import batch_colours, recipe_styles
from .by_batch import arms_of, compared

GRID = 40  # the mean's common losses per batch size


def lambda_path(run: dict) -> list[tuple[float, float]]:
    """(training loss, λmax) of every logged row of ``run``'s training that has both."""
    checkpoint = run.get("checkpoint") or ""
    rows = read_log(os.path.dirname(checkpoint)) if checkpoint else []
    out = []
    for r in rows:
        try:
            loss, lam = float(r["train_loss"]), float(r.get("lambda_max") or "nan")
        except (TypeError, ValueError):
            continue
        if math.isfinite(loss) and math.isfinite(lam) and loss > 0 and lam > 0:
            out.append((loss, lam))
    return out


def adaptive_path(run: dict, key: str = "adaptive_sharpness") -> list[tuple[float, float]]:
    """(training loss, ``key``) at every kept level of ``run``, at its matched level and its final weights."""
    return [(x, y) for x, y, _ in _kept(run, key)]


def _kept(run: dict, key: str = "adaptive_sharpness") -> list[tuple[float, float, str]]:
    """``adaptive_path``'s points with what they are: a kept level (``0.03``) or ``final``."""
    values = run.get("values") or {}
    points = [(p.get("train_loss"), p.get(key), f"{p.get('level'):g}") for p in run.get("path") or []]
    level = (run.get("matched") or {}).get("level")
    if level is not None:
        points.append((values.get(f"train_loss{MATCHED}"), values.get(f"{key}{MATCHED}"), f"{level:g}"))
    points.append((values.get("train_loss"), values.get(key), "final"))
    kept = {(float(a), float(b), c) for a, b, c in points if _finite(a) and _finite(b) and a > 0}
    return sorted(kept, reverse=True)


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def mean_curve(curves: list[list[tuple[float, float]]]) -> tuple[np.ndarray, np.ndarray]:
    """The mean over ``curves`` (each (loss, value) points) on ``GRID`` losses spaced evenly in log within
    the range every curve covers, each interpolated in log-log; empty where they share no range."""
    usable = [sorted(c) for c in curves if len(c) >= 2]
    if not usable:
        return np.array([]), np.array([])
    low = max(c[0][0] for c in usable)
    high = min(c[-1][0] for c in usable)
    if not low < high:
        return np.array([]), np.array([])
    grid = np.geomspace(low, high, GRID)
    values = [np.exp(np.interp(np.log(grid), np.log([x for x, _ in c]), np.log([y for _, y in c]))) for c in usable]
    return grid, np.mean(values, axis=0)


def draw_sharpness_loss(card) -> Figure:
    """Per arm (a column), λmax along training (top) and adaptive sharpness at the kept levels (bottom)
    against the training loss."""
    runs = compared(card)
    arms = arms_of(runs)
    batches = sorted({r["batch_size"] for r in runs})
    colours = batch_colours(batches)
    fig = Figure(figsize=(4.2 * len(arms), 7.0), layout="constrained")
    axes = fig.subplots(2, len(arms), squeeze=False)
    letters = "abcdefghijkl"
    seeds = sorted({r["seed"] for r in runs})
    for column, arm in enumerate(arms):
        mine = [r for r in runs if r["recipe"] == arm]
        rows = (("λmax along training", lambda_path), ("adaptive sharpness", adaptive_path))
        for row, (what, path_of) in enumerate(rows):
            ax = axes[row][column]
            for b in batches:
                curves = [path_of(r) for r in mine if r["batch_size"] == b]
                for c in curves:
                    if c:
                        ax.plot(*zip(*c), color=colours[b], linewidth=0.6, alpha=0.35,
                                marker="." if row else None, markersize=3)  # fmt: skip
                if row == 0:
                    x, y = mean_curve(curves)
                else:  # the kept levels are common to the runs: the mean at each one every seed has
                    x, y = _level_means([_kept(r) for r in mine if r["batch_size"] == b])
                if len(x):
                    ax.plot(x, y, color=colours[b], linewidth=2.2, marker="o" if row else None, markersize=4)
            loss_axes(ax)
            ax.set_xlabel("training loss (log scale; training goes →)")
            ax.set_ylabel("λmax of the Hessian" if row == 0 else "adaptive worst-case rise (ρ = 0.01)")
            words = "every logged step" if row == 0 else "kept levels and final weights"
            letter = letters[row * len(arms) + column]
            head = f"({letter}) {arm}: {what}\n{words}; {len(seeds)} seeds (thin), mean (thick)"
            ax.set_title(head, loc="left", fontsize="small")
    handles = [Line2D([], [], color=c, linewidth=2.2, label=f"batch {b}") for b, c in colours.items()]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False, fontsize="small")
    fig.suptitle("Sharpness against the training loss: at every level, is the large batch sharper?",
                 fontsize="medium")  # fmt: skip
    return fig


def loss_axes(ax) -> None:
    """Both axes logarithmic and labelled plainly, the training loss falling to the right as training goes."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_ticks(ax.xaxis)
    log_ticks(ax.yaxis)
    ax.invert_xaxis()
    ax.grid(alpha=0.3, which="both")


def _level_means(points: list[list[tuple[float, float, str]]]) -> tuple[list[float], list[float]]:
    """At each kept level (and the final weights) that every run has: the mean loss and the mean value."""
    keyed = [{tag: (x, y) for x, y, tag in p} for p in points if p]
    if not keyed:
        return [], []
    shared = set.intersection(*(set(k) for k in keyed))
    means = sorted((float(np.mean([k[t][0] for k in keyed])), float(np.mean([k[t][1] for k in keyed]))) for t in shared)
    return [m[0] for m in means], [m[1] for m in means]


def draw_lambda_means(ax, card, colours: dict) -> bool:
    """On ``ax``: per arm (line style) and batch size (colour) the mean over seeds of λmax against the
    training loss (``mean_curve``); False when no run logged λmax."""
    runs = compared(card)
    arms = arms_of(runs)
    styles = recipe_styles(arms)
    drawn = False
    for arm in arms:
        for b in sorted({r["batch_size"] for r in runs}):
            x, y = mean_curve([lambda_path(r) for r in runs if r["recipe"] == arm and r["batch_size"] == b])
            if len(x):
                ax.plot(x, y, styles[arm][0], color=colours[b], linewidth=1.6)
                drawn = True
    if drawn:
        loss_axes(ax)
        ax.set_xlabel("training loss (training goes →)")
        ax.set_ylabel("λmax (mean over seeds)")
    return drawn


def write_sharpness_loss(card, stem: str, formats=("png", "pdf"), dpi: int = 150, look=None) -> list[str]:
    if not any(lambda_path(r) or r.get("path") for r in compared(card)):
        return []
    fig = draw_sharpness_loss(card)
    return save(fig, stem, formats, dpi, look, panels=len(fig.axes))


__all__ = [
    "draw_lambda_means",
    "draw_sharpness_loss",
    "write_sharpness_loss",
    "lambda_path",
    "adaptive_path",
    "mean_curve",
]
