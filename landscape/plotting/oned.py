"""1-D loss curves: loss on the left axis, accuracy (or error) on a twin right axis.

Several surfaces are overlaid on the same axes, one colour per surface, as in
Li et al. (2018), Fig. 2/3 (e.g. small- vs large-batch minima along the same
kind of filter-normalized direction).  Training curves are solid, test curves
dashed; the loss is drawn thick and the accuracy thin, and a second legend says
so.  NaN (not computed) points are gaps.  The loss axis is logarithmic by default
where the losses drawn span more than two decades (``levels.log_scale``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..errors import InputError, UsageError
from ..io.surface_file import Surface
from . import axis_label, default_label, log_ticks, quantity_label, save
from .levels import AUTO, log_scale

SPLITS = ("train", "test", "both")
LINESTYLE = {"train": "-", "test": "--"}
LOSS_WIDTH, ACC_WIDTH = 2.0, 1.1
# One surface: the reference code's colours (loss blue, accuracy red) on coloured axes.
SINGLE_LOSS_COLOUR, SINGLE_ACC_COLOUR = "C0", "C3"


@dataclass(frozen=True)
class Style1D:
    """What a 1-D figure shows; every limit is optional (``None`` = automatic)."""

    split: str = "both"  # train, test, or both (test only where the file has it)
    error: bool = False  # plot 100 - accuracy instead of accuracy
    log: bool | str = AUTO  # log scale for the loss axis: True, False, or "auto" (where the losses span decades)
    xlim: tuple = (None, None)
    loss_lim: tuple = (None, None)
    acc_lim: tuple = (None, None)  # default 0-100 %: the full range, so figures compare at a glance
    title: str | None = None

    def __post_init__(self):
        for flags, pair in (
            (("xmin", "xmax"), self.xlim),
            (("loss_min", "loss_max"), self.loss_lim),
            (("acc_min", "acc_max"), self.acc_lim),
        ):
            for flag, value in zip(flags, pair):
                if value is not None and not math.isfinite(value):
                    raise UsageError(f"--{flag} {value}: expected a finite number")
        if not (isinstance(self.log, bool) or self.log == AUTO):
            raise UsageError(f"log {self.log!r}: expected True, False or {AUTO!r}")
        if self.split not in SPLITS:
            raise UsageError(f"split {self.split!r}: expected one of {', '.join(SPLITS)}")
        for flags, (lo, hi) in (
            (("xmin", "xmax"), self.xlim),
            (("loss_min", "loss_max"), self.loss_lim),
            (("acc_min", "acc_max"), self.acc_lim),
        ):
            if lo is not None and hi is not None and not lo < hi:
                raise UsageError(f"--{flags[0]} {lo:g} must be smaller than --{flags[1]} {hi:g}")
        lo, hi = self.acc_lim  # one limit alone is checked against the default range 0-100 %
        if lo is not None and hi is None and lo >= 100:
            raise UsageError(f"--acc_min {lo:g}: expected less than 100 (percent), or an --acc_max above it")
        if hi is not None and lo is None and hi <= 0:
            raise UsageError(f"--acc_max {hi:g}: expected more than 0 (percent), or an --acc_min below it")
        if self.log is True and self.loss_lim[0] is not None and self.loss_lim[0] <= 0:
            raise UsageError(f"--loss_min {self.loss_lim[0]:g} with --log: expected a positive value")


def splits_to_draw(surface: Surface, split: str) -> list[str]:
    """The splits of ``surface`` to draw; an explicit ``--split test`` needs test values."""
    wanted = ["train", "test"] if split == "both" else [split]
    present = [s for s in wanted if f"{s}_loss" in surface.values or f"{s}_acc" in surface.values]
    if split != "both" and not present:
        raise InputError(
            f"{surface.path} has no {split} values (it has {', '.join(sorted(surface.values))}); "
            f"expected {split}_loss or {split}_acc for --split {split}"
        )
    return present


def check_1d(surfaces: list[Surface]) -> None:
    """A 1-D figure takes 1-D surfaces with at least one computed point."""
    for s in surfaces:
        if s.ndim != 1:
            raise InputError(
                f"{s.path} is a 2-D surface ({len(s.x)}×{len(s.y)} points); "
                "expected a 1-D surface (draw 2-D ones with plot_2d)"
            )
        if not s.done.any():
            raise InputError(f"{s.path} has no computed points; expected at least one (is the run still going?)")


def draw_1d(
    surfaces: list[Surface], labels: list[str] | None = None, style: Style1D = Style1D(), colours: list | None = None
) -> Figure:
    """Overlay the curves of ``surfaces`` (1-D) in one figure; ``labels`` default to file names, ``colours``
    (one per surface) to matplotlib's cycle."""
    check_1d(surfaces)
    labels_given = labels is not None
    labels = list(labels) if labels is not None else [default_label(s.path) for s in surfaces]
    if len(labels) != len(surfaces):
        raise UsageError(f"got {len(labels)} labels for {len(surfaces)} surfaces; expected one label per surface")
    colours = list(colours) if colours is not None else [f"C{k % 10}" for k in range(len(surfaces))]
    if len(colours) != len(surfaces):
        raise UsageError(f"got {len(colours)} colours for {len(surfaces)} surfaces; expected one colour per surface")
    drawn = [s.values.get(f"{split}_loss") for s in surfaces for split in splits_to_draw(s, style.split)]
    log = log_scale(style.log, [v for v in drawn if v is not None], style.loss_lim[0])

    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    ax_loss = fig.add_subplot()
    has_acc = any(f"{s}_acc" in surf.values for surf in surfaces for s in splits_to_draw(surf, style.split))
    ax_acc = ax_loss.twinx() if has_acc else None
    single = len(surfaces) == 1
    drawn_splits = set()

    for surf, colour in zip(surfaces, colours):
        for split in splits_to_draw(surf, style.split):
            drawn_splits.add(split)
            loss, acc = surf.values.get(f"{split}_loss"), surf.values.get(f"{split}_acc")
            if loss is not None:
                _curve(ax_loss, surf.x, loss, SINGLE_LOSS_COLOUR if single else colour, split, LOSS_WIDTH)
            if acc is not None and ax_acc is not None:
                shown = 100.0 - acc if style.error else acc
                _curve(ax_acc, surf.x, shown, SINGLE_ACC_COLOUR if single else colour, split, ACC_WIDTH)

    _label_axes(ax_loss, ax_acc, surfaces, style, single, log)
    if single and labels_given:  # one curve set needs no legend entry; its label is the title
        ax_loss.set_title(labels[0])
    _legends(
        fig,
        labels if not single else [],
        colours,
        sorted(drawn_splits, key=SPLITS.index),
        ax_acc is not None,
        style,
        single,
    )
    if style.title:
        fig.suptitle(style.title)
    return fig


def _curve(ax, x, y, colour, split, width):
    # Lines break at NaN; on a partly computed surface an isolated computed point
    # would then be invisible, so such curves also get a dot at every point.
    partial = bool(np.isnan(y).any())
    ax.plot(
        x, y, color=colour, linestyle=LINESTYLE[split], linewidth=width, marker="." if partial else None, markersize=3
    )


def _label_axes(ax_loss, ax_acc, surfaces, style: Style1D, single: bool, log: bool) -> None:
    attrs = surfaces[0].attrs
    ax_loss.set_xlabel(axis_label(attrs, "x"))
    ax_loss.set_ylabel(quantity_label("loss", attrs) + (", log scale" if log else ""))
    if log:
        ax_loss.set_yscale("log")
        log_ticks(ax_loss.yaxis)
    ax_loss.set_xlim(*_limits(style.xlim, np.concatenate([s.x for s in surfaces])))
    from matplotlib.ticker import MaxNLocator  # -1, -0.5, 0, ...: legible in a paper's column too

    ax_loss.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    ax_loss.set_ylim(*style.loss_lim)
    ax_loss.grid(True, alpha=0.3)
    # The trained model (α = 0): a faint vertical line, so curves are read relative to it.
    lo, hi = ax_loss.get_xlim()
    if lo < 0 < hi:
        ax_loss.axvline(0.0, color="0.5", linewidth=0.8, linestyle=":", zorder=0)
    if ax_acc is not None:
        ax_acc.set_ylabel(quantity_label("err" if style.error else "acc"))
        lo, hi = style.acc_lim
        # By default a little room beyond 0 and 100 %, so a curve at 100 % is not hidden by the frame.
        ax_acc.set_ylim(lo if lo is not None else -2.0, hi if hi is not None else 102.0)
        ax_acc.set_yticks([t for t in range(0, 101, 20) if ax_acc.get_ylim()[0] <= t <= ax_acc.get_ylim()[1]])
        _align_zeros(ax_loss, ax_acc, style, log)
    if single:  # colour the axes like their curves, as only colour tells them apart
        ax_loss.yaxis.label.set_color(SINGLE_LOSS_COLOUR)
        ax_loss.tick_params(axis="y", colors=SINGLE_LOSS_COLOUR)
        if ax_acc is not None:
            ax_acc.yaxis.label.set_color(SINGLE_ACC_COLOUR)
            ax_acc.tick_params(axis="y", colors=SINGLE_ACC_COLOUR)


def _align_zeros(ax_loss, ax_acc, style: Style1D, log: bool) -> None:
    """Put loss 0 at the height of 0 % on the right axis, so that curves near the minimum do not
    seem to dip below zero (only when the loss axis is linear, its bottom free and the losses >= 0)."""
    if log or style.loss_lim[0] is not None:
        return
    bottom, top = ax_loss.get_ylim()
    low, high = ax_acc.get_ylim()
    if bottom >= 0 or top <= 0 or not low < 0 < high:
        return
    if min(np.nanmin(np.asarray(line.get_ydata(), float), initial=np.inf) for line in ax_loss.lines) < 0:
        return  # a loss below zero (a plug-in's) keeps the automatic limits
    share = -low / (high - low)  # where 0 % sits on the right axis
    ax_loss.set_ylim(-share / (1 - share) * top, top)


def _limits(given: tuple, x: np.ndarray) -> tuple:
    lo, hi = given
    return (float(np.min(x)) if lo is None else lo, float(np.max(x)) if hi is None else hi)


def _legends(fig, labels, colours, splits, has_acc: bool, style: Style1D, single: bool) -> None:
    """A legend below the axes (never hiding a curve): a column of surface colours, then
    one column per split saying what line style and width mean.  Columns are padded
    with blank entries because matplotlib fills a legend column by column."""

    def line(label, colour="0.2", style_="-", width=LOSS_WIDTH):
        return Line2D([], [], color=colour, linestyle=style_, linewidth=width, label=label)

    words = "error" if style.error else "accuracy"
    columns = [[line(label, colour) for label, colour in zip(labels, colours)]] if labels else []
    for split in splits:
        name = {"train": "training", "test": "test"}[split]
        column = [line(f"{name} loss (left)", SINGLE_LOSS_COLOUR if single else "0.2", LINESTYLE[split])]
        if has_acc:
            column.append(
                line(f"{name} {words} (right)", SINGLE_ACC_COLOUR if single else "0.2", LINESTYLE[split], ACC_WIDTH)
            )
        columns.append(column)
    rows = max(len(c) for c in columns)
    blank = Line2D([], [], alpha=0.0, label=" ")
    handles = [h for c in columns for h in c + [blank] * (rows - len(c))]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(columns), fontsize="small", frameon=False)


def write_1d(
    surfaces: list[Surface],
    out: str,
    labels: list[str] | None = None,
    formats=("png",),
    dpi: int = 150,
    style: Style1D = Style1D(),
    look=None,
    colours: list | None = None,
) -> tuple[list[str], Figure]:
    """Draw ``surfaces`` overlaid and write ``<out>_1d.<fmt>``; return (paths, figure)."""
    fig = draw_1d(surfaces, labels, style, colours)
    return save(fig, f"{out}_1d", formats, dpi, look), fig
