"""What a training run writes, written into a temporary folder and read back: the checkpoint's metadata,
the weights, final and latest files, log.csv and run.json of one save; and weights that are not finite
never written, run.json recording where the run diverged and that it is not done."""

import csv
import json
import math
import shlex
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from landscape.data import DataConfig, Samples
from landscape.errors import Diverged
from landscape.losses import Loss
from landscape.models import ModelConfig
from landscape.parallel.comm import SerialComm
from landscape.parallel.distributed import Collective
from landscape.train import records
from landscape.train.config import TrainJob, TrainRun
from landscape.train.loop import Position
from landscape.train.recipes import resolve
from landscape.train.session import Session
from landscape.train.targets import Watch

IDENTITY = {"model": "mnist1d_mlp", "seed": 0}


def row(epoch, loss, seconds, rate):
    return {
        "epoch": epoch,
        "step": 4 * epoch,
        "phase": "rate 0",
        "train_loss": loss,
        "train_acc": 90.0,
        "test_loss": loss + 0.1,
        "test_acc": 85.0,
        "seconds": seconds,
        "images_per_second": rate,
    }


def session(tmp_path, **run) -> Session:
    r = TrainRun(out=str(tmp_path), argv=("train", "--lr", "0.1"), **run)
    job = TrainJob(ModelConfig("mnist1d_mlp"), DataConfig("mnist1d_400"), resolve("sgd", epochs=2), r)
    said = []
    s = Session(
        job,
        SerialComm(),
        said.append,
        nn.Linear(3, 2),
        Collective(),
        Samples(torch.zeros(8, 3), torch.zeros(8)),
        None,
        None,
        Loss("crossentropy"),
        IDENTITY,
        2,
        "cpu",
        watch=Watch(r, job.recipe, 10),
    )
    s.said = said
    return s


def trainer(model, epoch=2):
    return SimpleNamespace(
        module=model,
        position=Position(epoch=epoch, step=4 * epoch, batch=2),
        nonfinite=None,
        state=lambda: {"optimizer": "sgd", "rank": 0},
        optimizer=SimpleNamespace(param_groups=[{"lr": 0.1}]),
    )


def test_a_checkpoints_metadata_holds_identity_position_metrics_and_command():
    s = session("run")
    meta = records.meta_of(s.job, IDENTITY, row(2, 0.3, 1.0, 100.0), ranks=4, threads=2, device="cpu")
    assert meta["kind"] == "landscape training checkpoint" and meta["identity"] == IDENTITY
    assert (meta["epoch"], meta["step"], meta["ranks"], meta["threads"], meta["device"]) == (2, 8, 4, 2, "cpu")
    assert meta["metrics"] == {"train_loss": 0.3, "train_acc": 90.0, "test_loss": pytest.approx(0.4), "test_acc": 85.0}
    assert shlex.split(meta["command"]) == ["train", "--lr", "0.1"] and "torch_version" in meta["versions"]


def test_a_final_save_writes_every_file_and_they_read_back(tmp_path):
    s, model = session(tmp_path), nn.Linear(3, 2)
    history = [row(1, 0.5, 1.0, 100.0), row(2, 0.3, 3.0, 20.0)]
    records.save(s, trainer(model), history, {"steps": 0}, weights=True, final=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "epoch_0002.pt",
        "final.pt",
        "latest.pt",
        "log.csv",
        "run.json",
    ]
    final = torch.load(tmp_path / "final.pt", weights_only=True)
    assert torch.equal(final["state_dict"]["weight"], model.weight.detach()) and final["meta"]["epoch"] == 2
    latest = torch.load(tmp_path / "latest.pt", weights_only=True)
    assert latest["ranks"] == [{"optimizer": "sgd", "rank": 0}] and latest["meta"]["history"] == history
    assert latest["meta"]["unlogged"] == {"steps": 0} and latest["meta"]["crossings"] == []
    with open(tmp_path / "log.csv") as f:
        assert [(r["epoch"], r["train_loss"]) for r in csv.DictReader(f)] == [("1", "0.5"), ("2", "0.3")]
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["done"] and run["identity"] == IDENTITY and (run["epoch"], run["step"], run["phase"]) == (2, 8, "rate 0")
    assert run["seconds"] == 4.0 and run["images_per_second"] == 40.0  # (100 · 1 + 20 · 3) / 4
    assert run["ranks"] == 1 and "diverged" not in run and "minimum" not in run


def test_weights_that_are_not_finite_are_never_written_and_run_json_says_where(tmp_path):
    s, model = session(tmp_path), nn.Linear(3, 2)
    with torch.no_grad():
        model.weight[0, 0] = math.inf
    with pytest.raises(Diverged, match=r"diverged at epoch 1, step 4 \(learning rate 0.1\).*nothing was saved yet"):
        records.save(s, trainer(model, epoch=1), [row(1, 0.5, 1.0, 100.0)], {}, weights=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]
    run = json.loads((tmp_path / "run.json").read_text())
    assert not run["done"] and run["diverged"] == {"epoch": 1, "step": 4, "lr": 0.1, "loss": "nan", "allowed": False}


def test_allowed_non_finite_weights_are_noted_and_written_with_where_the_run_diverged(tmp_path):
    s, model = session(tmp_path, allow_nonfinite=True, stop_loss=0.01), nn.Linear(3, 2)
    with torch.no_grad():
        model.bias[1] = math.nan
    t, history = trainer(model, epoch=1), [row(1, 0.5, 1.0, 100.0)]
    records.diverge(s, t, history, math.inf)  # the loop's call when a step's loss is not finite: no stop
    assert s.said == [
        "note: training diverged at epoch 1, step 4 (learning rate 0.1): the training loss is inf; "
        "going on, as allow_nonfinite asks"
    ]
    records.save(s, t, history, {}, weights=True)  # not finite, but allowed: written
    assert torch.load(tmp_path / "epoch_0001.pt", weights_only=True)["meta"]["diverged"]["allowed"] is True
    run = json.loads((tmp_path / "run.json").read_text())
    assert not run["done"] and run["diverged"] == {"epoch": 1, "step": 4, "lr": 0.1, "loss": "inf", "allowed": True}
    assert run["minimum"] == {
        "rule": "train loss <= 0.01",
        "reached": False,
        "step": 4,
        "train_loss": 0.5,
        "train_error": pytest.approx(10.0),
    }
