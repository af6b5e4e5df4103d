"""The gap against each sharpness measure: a panel per measure with values, one point per run coloured by
its batch size, the scorecard's within-batch τ in the title, a log x axis only where the measure spans
more than a decade."""

from __future__ import annotations

import math

import numpy as np

from landscape.plotting.palette import batch_colours
from landscape.plotting.study.gap import draw_gap, write_gap
from landscape.report.catalogue import MEASURES
from landscape.report.stats import GAP

from synthetic_study import BATCHES, SEEDS, card, results

SHARP = [m.key for m in MEASURES if m.sharpness]


def panels(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_one_panel_per_sharpness_measure_with_the_gap_on_one_axis():
    found = results()
    for r in found:
        r["values"]["fisher_rao"] = math.nan  # a measure not computed: no panel
    scored = card(found)
    fig = draw_gap(scored)
    axes = panels(fig)
    assert len(axes) == len(SHARP) - 1
    assert len({ax.get_ylim() for ax in axes}) == 1  # the gap shares its axis
    ax = axes[SHARP.index("lambda_max")]
    points = [line for line in ax.lines if line.get_marker() not in (None, "None")]
    assert len(points) == len(BATCHES) * len(SEEDS)
    colours = batch_colours(BATCHES)
    for line, r in zip(points, found):
        assert line.get_xdata()[0] == r["values"]["lambda_max"] and line.get_ydata()[0] == r["values"]["gap"]
        assert line.get_color() == colours[r["run"]["batch_size"]]
    t = scored.test("naive", "lambda_max", GAP)
    assert f"τ gap = {t.tau:+.2f}, p = {t.p_value:.2g}" in ax.get_title(loc="left")


def test_a_measure_spanning_decades_gets_a_log_axis_and_one_within_a_decade_does_not():
    found = results()
    for k, r in enumerate(found):
        r["values"]["trace"] = 10.0 ** (k % 4)  # 1 to 1000
        r["values"]["lambda_max"] = 2.0 + 0.1 * k  # 2 to 4.6
    axes = panels(draw_gap(card(found)))
    assert axes[SHARP.index("trace")].get_xscale() == "log"
    assert axes[SHARP.index("lambda_max")].get_xscale() == "linear"


def test_recipes_are_told_apart_by_fill_and_the_control_is_left_out():
    found = results(recipes=("naive", "linear"), control=True)
    fig = draw_gap(card(found))
    ax = panels(fig)[SHARP.index("lambda_max")]
    fills = [line.get_fillstyle() for line in ax.lines if line.get_marker() not in (None, "None")]
    assert fills.count("full") == fills.count("none") == len(BATCHES) * len(SEEDS)  # no third: the control
    assert "naive: τ gap" in ax.get_title(loc="left") and "linear: τ gap" in ax.get_title(loc="left")
    legend = [t.get_text() for t in fig.legends[0].texts]
    assert legend == [f"batch {b}" for b in BATCHES] + [f"seed {s}" for s in SEEDS] + [
        "naive (filled)",
        "linear (hollow)",
    ]


def test_written_when_there_is_a_gap_and_skipped_without(tmp_path):
    found = results()
    paths = write_gap(card(found), str(tmp_path / "g"), formats=("png", "pdf"), dpi=40)
    assert paths == [str(tmp_path / "g.png"), str(tmp_path / "g.pdf")] and (tmp_path / "g.png").stat().st_size > 0
    for r in found:
        r["values"]["gap"] = np.nan  # no test set
    assert write_gap(card(found), str(tmp_path / "none"), formats=("png",), dpi=40) == []
