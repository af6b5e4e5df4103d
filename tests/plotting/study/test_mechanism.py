"""The mechanism's figure from run folders whose λmax logs are known: a lettered panel per batch size
(gradient descent first) with each run's curve in its rate's colour and each rate's limit 2(1 + β)/η
dashed and labelled; a last panel of each run's plateau as a share of its limit against the rate; the
rates' colours from viridis (the plateaus themselves: tests/report/test_mechanism.py)."""

import numpy as np
import pytest
from matplotlib import colormaps

from landscape.io.run_files import write_log, write_run
from landscape.plotting.study.mechanism import LIMIT_COLOUR, draw_mechanism, rate_colours, write_mechanism
from landscape.report.mechanism import plateau

RUNS = [  # name, λmax every 50 steps, rate, batch (1,000: the whole training set)
    ("gd_lr0.4_s0", [1.0, 5.0, 9.5, 9.5], 0.4, 1000),  # limit 2(1 + 0.9)/0.4 = 9.5: at it
    ("gd_lr0.4_s1", [1.0, 5.0, 9.4, 9.6], 0.4, 1000),
    ("gd_lr0.8_s0", [1.0, 4.0, 4.75, 4.75], 0.8, 1000),  # limit 4.75
    ("gd_lr0.8_s1", [1.0, 4.0, 4.8, 4.7], 0.8, 1000),
    ("sgd_b256_lr0.4_s0", [1.0, 2.0, 3.0, 3.0], 0.4, 256),  # 3 / 9.5 of its limit
]


@pytest.fixture
def study(tmp_path):
    folders = {}
    for name, values, lr, batch in RUNS:
        folder = tmp_path / name
        folder.mkdir()
        write_log(str(folder), [{"epoch": i, "step": 50 * i, "lr": lr, "phase": "rate 0", "train_loss": 0.1,
                                 "train_acc": 90.0, "lambda_max": v} for i, v in enumerate(values)])  # fmt: skip
        write_run(str(folder), {"identity": {"momentum": 0.9, "nesterov": False, "batch_size": batch,
                                             "loss_name": "mse"}})  # fmt: skip
        folders[name] = str(folder)
    return [plateau(f) for f in folders.values()], folders


def curves(ax):
    return [line for line in ax.lines if line.get_linestyle() == "-"]


def test_a_lettered_panel_per_batch_size_with_each_run_and_each_rate_s_limit(study):
    table, folders = study
    fig = draw_mechanism(table, folders, full=1000)
    gd, sgd, share = fig.axes
    assert gd.get_title(loc="left") == "(a) full-batch gradient descent\nMSE, β = 0.9, 2 seed(s) a rate"
    assert sgd.get_title(loc="left") == "(b) SGD, batch 256\nMSE, β = 0.9, 1 seed(s) a rate"
    assert share.get_title(loc="left").startswith("(c) the plateau as a share of its limit")
    colours = rate_colours([0.4, 0.8])
    drawn = curves(gd)
    assert [list(line.get_ydata()) for line in drawn] == [values for _, values, _, b in RUNS if b == 1000]
    assert list(drawn[0].get_xdata()) == [0, 50, 100, 150]
    assert [line.get_color() for line in drawn] == [colours[0.4], colours[0.4], colours[0.8], colours[0.8]]
    limits = [line for line in gd.lines if line.get_linestyle() == "--"]
    assert [line.get_ydata()[0] for line in limits] == pytest.approx([9.5, 4.75])
    assert {line.get_color() for line in limits} == {LIMIT_COLOUR}
    assert [t.get_text() for t in gd.texts] == ["2(1+β)/η, η = 0.4", "2(1+β)/η, η = 0.8"]
    assert gd.get_yscale() == "log" and gd.get_xlabel() == "optimizer step"
    assert [t.get_text() for t in sgd.texts] == ["2(1+β)/η, η = 0.4"] and len(curves(sgd)) == 1


def test_the_last_panel_sets_each_plateau_against_its_rate(study):
    table, folders = study
    share = draw_mechanism(table, folders, full=1000).axes[-1]
    points = [line for line in share.lines if len(line.get_xdata()) == 1]
    assert [line.get_marker() for line in points] == ["o"] * 4 + ["s"]  # circles: gradient descent
    assert [line.get_xdata()[0] for line in points] == [0.4, 0.4, 0.8, 0.8, 0.4]
    assert [line.get_ydata()[0] for line in points] == pytest.approx([1.0, 1.0, 1.0, 1.0, 3.0 / 9.5])
    assert share.get_xscale() == "log" and [t.get_text() for t in share.get_xticklabels()] == ["0.4", "0.8"]
    assert share.get_ylim() == (0.0, 1.3)
    assert [t.get_text() for t in share.get_legend().texts] == [
        "full-batch gradient descent", "SGD, batch 256", "at the limit (±15%)", "η = 0.4", "η = 0.8"]  # fmt: skip


def test_without_the_training_set_s_size_every_batch_is_sgd_and_the_figure_is_written(study, tmp_path):
    table, folders = study
    titles = [ax.get_title(loc="left").split("\n")[0] for ax in draw_mechanism(table, folders).axes[:-1]]
    assert titles == ["(a) SGD, batch 1000", "(b) SGD, batch 256"]
    paths = write_mechanism(table, folders, str(tmp_path / "mechanism"), formats=("png",), dpi=40, full=1000)
    assert paths == [str(tmp_path / "mechanism.png")] and (tmp_path / "mechanism.png").stat().st_size > 0


def test_rates_take_viridis_from_dark_to_light_in_order():
    colours = rate_colours([1.6, 0.4, 0.8, 0.4])
    assert list(colours) == [0.4, 0.8, 1.6]
    assert np.allclose(
        [colours[0.4], colours[0.8], colours[1.6]], [colormaps["viridis"](s) for s in (0.15, 0.475, 0.8)]
    )
    assert rate_colours([0.1]) == {0.1: colormaps["viridis"](0.15)}
