"""The mechanism's figure: λmax along training against the stability limit of each rate.

One panel per batch size of the mechanism's runs (gradient descent on the whole training set, SGD at a
batch): λmax against the optimizer step, one colour per rate (viridis, not the batch sizes' plasma: here
the rate is what varies), each seed a line; each rate's limit 2(1 + β)/η as a grey dashed line, labelled.
A last panel sets each run's plateau as a share of its limit against the rate (``report.mechanism``),
with the band within which a run is "at the limit".  Every panel is lettered and says its runs.
"""

from __future__ import annotations

import math

from matplotlib import colormaps
from matplotlib.figure import Figure

from ...io.run_files import read_log
from ...losses import LOSS_WORDS
from ...report.mechanism import AT_LIMIT, Plateau
from .. import save

LIMIT_COLOUR = "0.45"  # the limits: neutral, never a rate's or a batch size's colour


def rate_colours(rates) -> dict[float, tuple]:
    ordered = sorted(set(rates))
    steps = [0.15 + 0.65 * i / max(1, len(ordered) - 1) for i in range(len(ordered))]
    return {r: colormaps["viridis"](s) for r, s in zip(ordered, steps)}


def _group(p: Plateau, full: int | None) -> str:
    return "full-batch gradient descent" if full and p.batch_size >= full else f"SGD, batch {p.batch_size}"


def draw_mechanism(table: list[Plateau], folders: dict[str, str], full: int | None = None) -> Figure:
    """The figure of ``table`` (one ``Plateau`` per run; ``folders``: run name -> its folder, for the
    logs); ``full``: the training set's size (a batch that large is gradient descent)."""
    groups: dict[str, list[Plateau]] = {}
    for p in sorted(table, key=lambda p: -p.batch_size):
        groups.setdefault(_group(p, full), []).append(p)
    colours = rate_colours(p.lr for p in table)
    panels = len(groups) + 1
    fig = Figure(figsize=(4.0 * panels, 3.6), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False).ravel()
    letters = "abcdefgh"
    for i, (ax, (title, runs)) in enumerate(zip(axes, groups.items())):
        for p in runs:
            rows = [r for r in read_log(folders[p.run]) if r.get("lambda_max") not in (None, "", "nan")]
            steps = [int(r["step"]) for r in rows]
            ax.plot(steps, [float(r["lambda_max"]) for r in rows], color=colours[p.lr], linewidth=1.1, alpha=0.85)
        for lr in sorted({p.lr for p in runs}):
            limit = next(p.limit for p in runs if p.lr == lr)
            ax.axhline(limit, color=LIMIT_COLOUR, linestyle="--", linewidth=0.9)
            ax.annotate(f"2(1+β)/η, η = {lr:g}", (1.0, limit), xycoords=("axes fraction", "data"),
                        ha="right", va="bottom", fontsize="x-small", color=LIMIT_COLOUR)  # fmt: skip
        seeds = len(runs) // max(1, len({p.lr for p in runs}))
        loss = LOSS_WORDS.get(runs[0].loss_name, runs[0].loss_name) or "the run's loss"
        ax.set_title(f"({letters[i]}) {title}\n{loss}, β = {runs[0].momentum:g}, {seeds} seed(s) a rate",
                     fontsize="small", loc="left")  # fmt: skip
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("λmax of the training loss")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    ax = axes[-1]
    for name, runs in groups.items():
        marker = "o" if name.startswith("full") else "s"
        for p in runs:
            if math.isfinite(p.fraction):
                ax.plot(p.lr, p.fraction, marker, color=colours[p.lr], markersize=6, alpha=0.9)
        ax.plot([], [], marker, color="0.3", linestyle="none", label=name)
    ax.axhspan(1 - AT_LIMIT, 1 + AT_LIMIT, color="0.85", zorder=0, label=f"at the limit (±{AT_LIMIT:.0%})")
    ax.axhline(1.0, color=LIMIT_COLOUR, linestyle="--", linewidth=0.9)
    ax.set_xscale("log", base=2)
    rates = sorted({p.lr for p in table})
    ax.set_xticks(rates, [f"{r:g}" for r in rates])
    ax.minorticks_off()
    ax.set_ylim(0, max(1.3, max((p.fraction for p in table if math.isfinite(p.fraction)), default=1) * 1.1))
    ax.set_xlabel("learning rate η")
    ax.set_ylabel("plateau of λmax / 2(1 + β)/η")
    ax.set_title(f"({letters[len(groups)]}) the plateau as a share of its limit\n(median after the rise, each run)",
                 fontsize="small", loc="left")  # fmt: skip
    for lr, colour in colours.items():  # the rates' colours, as in the other panels
        ax.plot([], [], "o", color=colour, linestyle="none", label=f"η = {lr:g}")
    ax.legend(fontsize="x-small", frameon=False, loc="lower left", ncols=2)
    ax.grid(alpha=0.3)
    return fig


def write_mechanism(table, folders, stem: str, formats=("png", "pdf"), dpi: int = 150, full=None, look=None):
    fig = draw_mechanism(table, folders, full)
    return save(fig, stem, formats, dpi, look, panels=len(fig.axes))


__all__ = ["draw_mechanism", "write_mechanism", "rate_colours"]
