"""Measures against batch size: the mean with its 95 % t-interval over seeds, each seed beside it, the values
the scorecard tested (at matched training loss where it did), the rescaling control left out; the
per-seed panels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from landscape.plotting.study.by_batch import draw_measures, draw_seeds, measured_keys, write_measures, write_seeds
from landscape.report.effects import t_interval

from synthetic_study import BATCHES, SEEDS, card, results


def test_the_t_interval_is_the_mean_plus_minus_t_times_the_standard_error():
    sample = [1.0, 2.0, 3.0, 4.0]
    found = t_interval(sample)
    low, high = stats.t.interval(0.95, 3, loc=2.5, scale=stats.sem(sample))
    assert (found.mean, found.n) == (2.5, 4)
    assert (found.low, found.high) == (pytest.approx(low), pytest.approx(high))
    assert found.high - found.mean == pytest.approx(3.182446 * math.sqrt(5 / 3) / 2, rel=1e-6)  # t(0.975, 3)·s/√n
    assert t_interval([1.0, 2.0, 3.0, 4.0, math.nan]) == found  # a missing value is no value
    alone = t_interval([7.0])
    assert alone.mean == 7.0 and math.isnan(alone.low) and math.isnan(alone.high)
    assert t_interval([0.0, 1.0], level=0.9).high == pytest.approx(0.5 + stats.t.ppf(0.95, 1) * 0.5)


def bars(ax) -> dict[float, tuple[float, float]]:
    """x -> (low, high) of the error bars drawn on ``ax``."""
    out = {}
    for collection in ax.collections:
        for segment in collection.get_segments():
            (x, low), (_, high) = segment
            out[round(float(x), 6)] = (float(low), float(high))
    return out


def test_each_panel_draws_the_t_interval_of_the_seeds_and_each_seed_beside_it():
    found = results()
    scored = card(found)
    fig = draw_measures(scored)
    ax = fig.axes[measured_keys(scored).index("test_error")]
    assert measured_keys(scored)[0] == "test_loss" and "train_loss" not in measured_keys(scored)
    drawn = bars(ax)
    assert sorted(drawn) == list(BATCHES)  # one recipe: each mean at its batch size
    for b in BATCHES:
        ci = t_interval([r["values"]["test_error"] for r in found if r["run"]["batch_size"] == b])
        assert drawn[b] == (pytest.approx(ci.low), pytest.approx(ci.high))
    seeds = [line for line in ax.lines if line.get_markersize() == 3.5]
    assert len(seeds) == len(BATCHES) * len(SEEDS)
    beside = [float(line.get_xdata()[0]) / b for line, b in zip(seeds, np.repeat(BATCHES, len(SEEDS)))]
    assert all(1.0 < ratio < 2**0.4 for ratio in beside)  # right of its mean, nearer it than the next batch
    assert "95 % t-interval" in fig.get_suptitle() and "τ = " in ax.get_title(loc="left")


def test_sharpness_is_drawn_at_matched_loss_where_the_scorecard_tested_it_so():
    found = results(mismatch=True)
    scored = card(found)
    assert scored.test("naive", "lambda_max").basis == "matched_loss"
    fig = draw_measures(scored)
    ax = fig.axes[measured_keys(scored).index("lambda_max")]
    assert "at matched train loss" in ax.get_title(loc="left")
    for b, (low, high) in bars(ax).items():
        matched = [r["values"]["lambda_max_matched"] for r in found if r["run"]["batch_size"] == b]
        assert (low + high) / 2 == pytest.approx(np.mean(matched))
    t = scored.test("naive", "lambda_max")
    assert f"τ = {t.tau:+.2f}" in ax.get_title(loc="left")


def test_the_rescaling_control_is_no_arm_of_the_figures():
    scored = card(results(control=True))
    assert any(r["control"] for r in scored.runs)
    for fig in (draw_measures(scored), draw_seeds(scored)):
        ax = fig.axes[0]
        assert "rescaled" not in " ".join(a.get_title(loc="left") for a in fig.axes)
        assert max(float(np.max(line.get_ydata())) for line in ax.lines if len(line.get_ydata())) < 40  # not 50×


def test_several_recipes_side_by_side_with_their_own_statistics():
    scored = card(results(recipes=("naive", "linear")))
    fig = draw_measures(scored)
    ax = fig.axes[measured_keys(scored).index("lambda_max")]
    assert len(bars(ax)) == 2 * len(BATCHES)  # two means per batch size, apart
    assert "naive: τ" in ax.get_title(loc="left") and "linear: τ" in ax.get_title(loc="left")
    assert [t.get_text() for t in fig.legends[0].texts] == ["naive", "linear"] + [f"seed {s}" for s in SEEDS]


def test_one_line_per_seed_through_its_values_across_batch_sizes():
    found = results()
    scored = card(found)
    fig = draw_seeds(scored)
    assert len(fig.axes) == len(scored.endpoints)
    ax = fig.axes[list(scored.endpoints).index("lambda_max")]
    lines = [line for line in ax.lines if len(line.get_xdata()) == len(BATCHES)]
    assert len(lines) == len(SEEDS)
    for seed, line in zip(SEEDS, lines):
        mine = sorted((r["run"]["batch_size"], r["values"]["lambda_max"]) for r in found if r["run"]["seed"] == seed)
        assert list(line.get_xdata()) == [b for b, _ in mine] and list(line.get_ydata()) == [v for _, v in mine]
    t = scored.test("naive", "lambda_max")
    assert f"τ = {t.tau:+.2f}" in ax.get_title(loc="left")
    assert [t.get_text() for t in fig.legends[0].texts] == [f"seed {s}" for s in SEEDS]


def test_the_figures_are_written_in_each_format(tmp_path):
    scored = card(results())
    paths = write_measures(scored, str(tmp_path / "m"), formats=("png", "pdf"), dpi=40)
    paths += write_seeds(scored, str(tmp_path / "s"), formats=("png", "pdf"), dpi=40)
    assert paths == [str(tmp_path / n) for n in ("m.png", "m.pdf", "s.png", "s.pdf")]
    assert all((tmp_path / n).stat().st_size > 1000 for n in ("m.png", "m.pdf", "s.png", "s.pdf"))
