"""``plot-training``'s sharpness panel, from runs' logs alone: λmax against the step, and the stability
limit of the rate in force at each step (warm-up and decay included) as a dashed line."""

import json

import pytest

from landscape.plotting.training import draw
from landscape.train.recipes import stability_limit


def test_the_stability_limit_is_that_of_gradient_descent_on_a_quadratic():
    assert stability_limit(0.5) == pytest.approx(4.0)  # 2/η
    assert stability_limit(0.1, momentum=0.9) == pytest.approx(38.0)  # heavy ball: 2(1 + β)/η
    assert stability_limit(0.1, momentum=0.9, nesterov=True) == pytest.approx(38.0 / 2.8)  # (2 + 2β)/(η(1 + 2β))


def fake_run(folder, batch: int, rates: list[float], sharpness: list[float], momentum: float = 0.0, **stops):
    folder.mkdir(parents=True)
    identity = {"model": "m", "dataset": "d", "steps": 10 * len(rates), "momentum": momentum, "nesterov": False}
    identity |= stops
    (folder / "run.json").write_text(json.dumps({"done": True, "identity": identity}))
    lines = ["epoch,step,lr,train_acc,test_acc,lambda_max"]
    lines += [f"{i},{10 * i},{lr},90,80,{s}" for i, (lr, s) in enumerate(zip(rates, sharpness))]
    (folder / "log.csv").write_text("\n".join(lines) + "\n")
    return {"folder": str(folder), "done": True, "test_error": 20.0, "recipe": "linear", "batch_size": batch, "seed": 0}


def test_sharpness_is_drawn_against_the_step_with_the_limit_of_each_steps_rate(tmp_path):
    warmup = [0.1, 0.2, 0.4, 0.4]  # a warm-up: the limit falls as the rate rises
    rows = [
        fake_run(tmp_path / "small", 16, [0.1] * 4, [1.0, 2.0, 3.0, 3.5]),
        fake_run(tmp_path / "large", 1024, warmup, [1.0, 4.0, 5.0, 5.0], momentum=0.5),
    ]
    figure = draw(rows)
    assert len(figure.axes) == 3
    panel = figure.axes[2]
    assert panel.get_xlabel() == "optimizer step" and figure.axes[1].get_xlabel() == "optimizer step"
    lines = {tuple(line.get_ydata()): tuple(line.get_xdata()) for line in panel.get_lines()}
    assert lines[(1.0, 4.0, 5.0, 5.0)] == (0, 10, 20, 30)
    assert tuple(pytest.approx(stability_limit(lr, 0.5)) for lr in warmup) in [tuple(y) for y in lines]
    assert (20.0, 20.0, 20.0, 20.0) in lines  # 2/η at η = 0.1


def test_runs_without_lambda_max_keep_the_two_panels(tmp_path):
    row = fake_run(tmp_path / "plain", 16, [0.1, 0.1], ["nan", "nan"])
    assert len(draw([row]).axes) == 2


def test_a_budget_that_is_a_cap_says_what_stopped_the_runs(tmp_path):
    row = fake_run(tmp_path / "capped", 16, [0.1, 0.1], [1.0, 1.0], stop_loss=0.01)
    assert "steps ≤ 20, stopped at train loss ≤ 0.01" in draw([row]).get_suptitle()
    row = fake_run(tmp_path / "fixed", 16, [0.1, 0.1], [1.0, 1.0])
    assert draw([row]).get_suptitle().endswith("steps 20")
