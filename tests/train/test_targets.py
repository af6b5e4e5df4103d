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
    # the final weights are those where the loss first reached the stop loss (its crossing), within 5 %
    stop = next(c for c in found["crossings"] if c["level"] == 1.0)
    final, kept = (torch.load(out / f, weights_only=True)["state_dict"] for f in ("final.pt", stop["file"]))
    assert all(torch.equal(final[k], kept[k]) for k in final)
    assert 0.95 <= loss_of(out / "final.pt") <= 1.0 and found["minimum"]["step"] == stop["step"] == found["step"]
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
    """Each level's file holds the weights of the first step at or below it, found among the steps since
    the last check: evaluated afresh they give the recorded loss, within 5 % below the level."""
    out = tmp_path / "run"
    done = cli("train", [*FLAGS, "--steps", "200", "--save_at_loss", "1.5", "1.0", "0.001", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    crossings = record(out)["crossings"]
    assert [c["level"] for c in crossings] == [1.5, 1.0]  # 0.001 never reached: no file
    for c in crossings:
        assert (out / c["file"]).exists() and c["file"] == targets.crossing_name(c["level"])
        assert 0.95 * c["level"] <= c["train_loss"] <= c["level"] and 0 < c["fraction"] <= 1
        assert loss_of(out / c["file"]) == pytest.approx(c["train_loss"], rel=1e-4)
        assert c["phase"] == "rate 0" and c["lr"] == pytest.approx(0.05)
        meta = torch.load(out / c["file"], weights_only=True)["meta"]
        assert meta["crossing"] == c
    assert not (out / targets.crossing_name(0.001)).exists()


def test_checks_steps_apart_still_keep_the_first_step_below_a_level_and_a_fast_fall_is_bisected(tmp_path, cli):
    """Checks 50 steps apart and no evaluation: the steps between are kept, so each crossing is the first
    step at or below its level; at a rate whose steps fall more than 5 % the update is bisected (a
    fraction of it) so the kept network's loss is the level to within 5 %."""
    out = tmp_path / "run"
    flags = [*MLP, "--batch_size", "320", "--eval_every", "1000", "--steps", "400", "--target_every", "50",
             "--milestones", "--lr", "0.3"]  # fmt: skip
    done = cli("train", [*flags, "--save_at_loss", "2.0", "1.0", "0.5", "0.2", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    crossings = record(out)["crossings"]
    assert [c["level"] for c in crossings] == [2.0, 1.0, 0.5, 0.2]
    for c in crossings:
        assert 0.95 * c["level"] <= c["train_loss"] <= c["level"], c
        assert loss_of(out / c["file"]) == pytest.approx(c["train_loss"], rel=1e-4)
        assert c["step"] % 50 != 0 or c["fraction"] < 1  # not merely the check's step
    assert any(c["fraction"] < 1 for c in crossings)  # some step fell too far: a point of its update
    assert [int(r["step"]) for r in log(out)][-1] == 400


def test_locate_takes_the_first_step_below_and_bisects_an_update_that_overshoots():
    """On weights that are one number w with loss w: the path 3, 2.5, 1.6, 0.9, 0.5 crosses 1.0 at the
    fourth step, 10 % below: the update from 1.6 to 0.9 is bisected to a point within 5 % below 1.0."""
    kept = [targets.Kept(s, 0.1, "rate 0", {"w": torch.tensor(v)}) for s, v in enumerate([3.0, 2.5, 1.6, 0.9, 0.5])]
    found = targets.locate(1.0, kept, lambda w: (float(w["w"]), 100.0))
    assert found["step"] == 3 and 0.95 <= found["train_loss"] <= 1.0 and 0.8 < found["fraction"] < 1
    assert float(found["weights"]["w"]) == pytest.approx(1.6 + found["fraction"] * (0.9 - 1.6))
    exact = targets.locate(0.93, kept, lambda w: (float(w["w"]), 100.0))
    assert exact["step"] == 3 and exact["fraction"] == 1.0 and exact["train_loss"] == pytest.approx(0.9)


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
