"""Training to a target: the stop rule ends a run at the first evaluation that meets it (its budget the
cap), a run that spends its budget first is named as not at a minimum, and the weights are kept where
the training loss first falls to each level, with where they were taken."""

import json
import math

import pytest
import torch

from landscape.errors import ConfigError
from landscape.models import build_model
from landscape.train import targets
from landscape.train.config import TrainRun

from .test_job_budget import MLP, log

FLAGS = [*MLP, "--batch_size", "64", "--eval_every", "5"]


def record(folder) -> dict:
    return json.loads((folder / "run.json").read_text())


def loss_of(checkpoint) -> float:
    """The training loss of a checkpoint's weights on the run's data, evaluated afresh."""
    from landscape.data import load_named

    train = load_named("mnist1d_400").train
    model = build_model("mnist1d_mlp")
    model.load_state_dict(torch.load(checkpoint, weights_only=True)["state_dict"])
    model.eval()
    with torch.no_grad():
        return float(torch.nn.functional.cross_entropy(model(train.inputs), train.targets))


def test_the_stop_rule_ends_the_run_at_the_first_evaluation_that_meets_it(tmp_path, cli):
    out = tmp_path / "run"
    done = cli("train", [*FLAGS, "--steps", "2000", "--stop_loss", "1.0", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    rows = log(out)
    losses = [float(r["train_loss"]) for r in rows]
    assert losses[-1] <= 1.0 and all(v > 1.0 for v in losses[:-1])  # stopped at the first row below it
    assert int(rows[-1]["step"]) < 2000 and "its rule met at step" in done.stdout
    found = record(out)
    assert found["done"] and found["minimum"]["reached"] and found["minimum"]["rule"] == "train loss <= 1"
    assert targets.not_at_minimum(found) is None
    again = cli("train", [*FLAGS, "--steps", "2000", "--stop_loss", "1.0", "--out", str(out)])
    assert again.returncode == 0 and "already trained (its rule (train loss <= 1) met)" in again.stdout
    assert len(log(out)) == len(rows)


def test_a_run_whose_budget_ends_first_is_not_at_a_minimum(tmp_path, cli):
    out = tmp_path / "run"
    done = cli("train", [*FLAGS, "--steps", "20", "--stop_error", "0", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    found = record(out)
    assert found["done"] and not found["minimum"]["reached"] and found["minimum"]["step"] == 20
    why = targets.not_at_minimum(found)
    assert why.startswith("not at a minimum: its budget ended at step 20") and "train error <= 0 %" in why
    assert "note: not at a minimum" in done.stdout


def test_the_weights_are_kept_where_the_loss_first_falls_to_each_level(tmp_path, cli):
    """Each level's file holds the weights of the first evaluation at or below it: evaluated afresh they
    give the logged loss, and the evaluation before was above the level."""
    out = tmp_path / "run"
    done = cli("train", [*FLAGS, "--steps", "200", "--save_at_loss", "1.5", "1.0", "0.001", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    crossings = record(out)["crossings"]
    assert [c["level"] for c in crossings] == [1.5, 1.0]  # 0.001 never reached: no file
    rows = {int(r["step"]): r for r in log(out)}
    steps = sorted(rows)
    for c in crossings:
        assert (out / c["file"]).exists() and c["file"] == targets.crossing_name(c["level"])
        row = rows[c["step"]]
        assert c["train_loss"] == pytest.approx(float(row["train_loss"]), rel=1e-5) and c["train_loss"] <= c["level"]
        before = steps[steps.index(c["step"]) - 1]
        assert float(rows[before]["train_loss"]) > c["level"]
        assert loss_of(out / c["file"]) == pytest.approx(c["train_loss"], rel=1e-4)
        assert c["phase"] == "rate 0" and c["lr"] == pytest.approx(0.05)
        meta = torch.load(out / c["file"], weights_only=True)["meta"]
        assert meta["crossing"] == c and meta["step"] == c["step"]
    assert not (out / targets.crossing_name(0.001)).exists()


def test_targets_are_checked_where_they_are_given():
    with pytest.raises(ConfigError, match="stop_loss"):
        TrainRun(stop_loss=0)
    with pytest.raises(ConfigError, match="stop_error"):
        TrainRun(stop_error=100)
    with pytest.raises(ConfigError, match="save_at_loss"):
        TrainRun(save_at_loss=(0.1, -1))
    with pytest.raises(ConfigError, match="save_at_loss"):
        TrainRun(save_at_loss=(math.inf,))
    assert TrainRun(save_at_loss=(0.1, 0.3, 0.1)).save_at_loss == (0.3, 0.1)


def test_near_a_target_the_loss_is_checked_after_every_step_so_the_kept_weights_are_the_first_below_it(tmp_path, cli):
    """With no evaluation due for hundreds of steps the targets are checked on their own: every
    ``target_every`` steps, and after every step once the loss is within ``NEAR`` of a pending level, so
    the weights kept at a crossing lie just below it; a row is written there and at the end only."""
    out = tmp_path / "run"
    flags = [
        *MLP,
        "--lr",
        "0.02",
        "--batch_size",
        "64",
        "--eval_every",
        "1000",
        "--steps",
        "300",
        "--target_every",
        "25",
        "--milestones",
    ]
    done = cli("train", [*flags, "--save_at_loss", "1.2", "0.9", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    crossings = record(out)["crossings"]
    assert [c["level"] for c in crossings] == [1.2, 0.9]
    for c in crossings:
        assert 0.95 * c["level"] < c["train_loss"] <= c["level"], c
        assert c["step"] % 25 != 0 or c["step"] == 0  # found by a check after a single step, not the coarse one
    assert [int(r["step"]) for r in log(out)] == [c["step"] for c in crossings] + [300]


def test_the_next_check_is_one_step_on_when_the_loss_nears_a_pending_target():
    crossed = [{"level": 0.5}]
    assert targets.next_check(100, 0.3, (0.5, 0.1), crossed, None, 10) == 110  # 0.1 far below: every 10
    assert targets.next_check(100, 0.119, (0.5, 0.1), crossed, None, 10) == 101  # within 1.2x of 0.1
    assert targets.next_check(100, 0.05, (), [], 0.045, 10) == 101  # near the stop loss
    assert targets.next_check(100, float("nan"), (0.1,), [], None, 10) == 110
