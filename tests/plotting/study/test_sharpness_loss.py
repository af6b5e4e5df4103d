"""Sharpness against the training loss: the mean over seeds on a common grid of losses (closed form on
power laws), each run's points at its kept levels, and the figure's panels lettered per arm."""

import numpy as np
import pytest

from landscape.io.run_files import write_log
from landscape.plotting.study.sharpness_loss import adaptive_path, draw_sharpness_loss, mean_curve

from synthetic_study import card, results


def test_the_mean_of_power_laws_is_taken_on_the_losses_every_curve_covers():
    """λ = c·L^0.5 for c = 1 and 3, sampled at different losses: their mean is 2·L^0.5, within the range
    both cover (log-log interpolation is exact on a power law)."""
    a = [(x, 1.0 * x**0.5) for x in np.geomspace(1e-3, 1.0, 7)]
    b = [(x, 3.0 * x**0.5) for x in np.geomspace(2e-3, 0.5, 11)]
    x, y = mean_curve([a, b])
    assert x.min() == pytest.approx(2e-3) and x.max() == pytest.approx(0.5)
    assert y == pytest.approx(2.0 * x**0.5, rel=1e-9)
    assert [len(v) for v in mean_curve([a[:1]])] == [0, 0]  # one point: no curve


def test_a_runs_points_are_its_kept_levels_its_matched_level_and_its_final_weights():
    run = {
        "values": {"train_loss": 0.004, "adaptive_sharpness": 0.01, "train_loss_matched": 0.0099,
                   "adaptive_sharpness_matched": 0.02},
        "matched": {"level": 0.01},
        "path": [{"level": 0.1, "train_loss": 0.098, "adaptive_sharpness": 0.2},
                 {"level": 0.03, "train_loss": 0.029, "adaptive_sharpness": None}],
    }  # fmt: skip
    assert adaptive_path(run) == [(0.098, 0.2), (0.0099, 0.02), (0.004, 0.01)]  # the one without a value left out


def test_the_figure_has_a_column_per_arm_its_panels_lettered(tmp_path):
    found = results(recipes=("naive", "linear"), mismatch=True)
    for r in found:  # each run's log: λmax falling with the loss
        folder = tmp_path / r["run"]["name"]
        folder.mkdir()
        r["run"]["checkpoint"] = str(folder / "final.pt")
        rows = [
            {"epoch": s // 5, "step": s, "train_loss": 1.0 / (1 + s), "lambda_max": 5.0 / (1 + s) ** 0.5}
            for s in range(0, 50, 5)
        ]
        write_log(str(folder), rows)
    fig = draw_sharpness_loss(card(found))
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert len(fig.axes) == 4 and [t[:3] for t in titles] == ["(a)", "(b)", "(c)", "(d)"]
    assert titles[0].startswith("(a) naive: λmax along training") and "seeds (thin)" in titles[0]
    assert titles[1].startswith("(b) linear: λmax along training")
    assert all(ax.xaxis_inverted() for ax in fig.axes)
