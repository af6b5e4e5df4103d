"""A training log's rows by hand: when one is due, what the steps since the last row add up to, the row
itself for a least-squares model whose loss and λmax have closed forms, the phase of the last step taken,
and the mean rate weighted by time."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from landscape.data import DataConfig, Samples
from landscape.losses import Loss
from landscape.models import ModelConfig
from landscape.parallel.comm import SerialComm
from landscape.parallel.distributed import Collective
from landscape.train import rows
from landscape.train.config import TrainJob, TrainRun
from landscape.train.loop import Position
from landscape.train.recipes import resolve
from landscape.train.session import Session


def session(recipe=None, curvature_every=None, train=None) -> Session:
    job = TrainJob(
        ModelConfig("mnist1d_mlp"), DataConfig("mnist1d_400"), recipe or resolve("sgd"), TrainRun(eval_every=2)
    )
    train = train or Samples(torch.zeros(4096, 4), torch.zeros(4096, 1))
    return Session(
        job,
        SerialComm(),
        print,
        nn.Linear(4, 1),
        Collective(),
        train,
        None,
        None,
        Loss("mse"),
        {},
        1,
        "cpu",
        curvature_every=curvature_every,
    )


def test_a_row_is_due_every_eval_every_epochs_at_their_end_or_steps_and_at_every_curvature_step():
    by_epochs = session(curvature_every=5)
    assert [rows.row_due(by_epochs, 7, epoch, paused=False) for epoch in (1, 2, 3, 4)] == [False, True, False, True]
    assert not rows.row_due(by_epochs, 7, 2, paused=True)  # mid-epoch: not an epoch's end
    assert rows.row_due(by_epochs, 10, paused=True)  # a λmax is due whatever the epoch
    by_steps = session(resolve("sgd", steps=1000, milestones=()))
    assert [rows.row_due(by_steps, step) for step in (1, 2, 3, 4)] == [False, True, False, True]


def test_the_steps_since_the_last_row_leave_out_what_an_earlier_pause_counted():
    unlogged = {"steps": 3, "samples": 24, "loss_sum": 6.0, "seconds": 1.0, "comm_seconds": 0.0, "comm_bytes": 10}
    stats = SimpleNamespace(
        steps=10, samples=80, running_loss=0.5, seconds=4.0, comm_seconds=1.0, comm_bytes=1000, batches=[8] * 9 + [16]
    )
    logged = {
        "steps": 4,
        "samples": 32,
        "loss_sum": 20.0,
        "seconds": 1.5,
        "comm_seconds": 0.5,
        "comm_bytes": 400,
        "batches": [8] * 4,
    }
    rows.count(unlogged, stats, logged)
    assert unlogged == {
        "steps": 9,
        "samples": 72,
        "loss_sum": 26.0,
        "seconds": 3.5,
        "comm_seconds": 0.5,
        "comm_bytes": 610,
        "batches": [8] * 5 + [16],
    }


def test_a_row_holds_the_sets_evaluated_the_rates_and_lambda_max_where_due():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(30, 4, generator=g), torch.randn(30, 1, generator=g)
    s = session(curvature_every=5, train=Samples(x, y))
    model = s.model
    trainer = SimpleNamespace(position=Position(epoch=2, offset=0, step=10, batch=8), module=model)
    unlogged = {
        "steps": 5,
        "samples": 40,
        "loss_sum": 20.0,
        "seconds": 2.0,
        "comm_seconds": 3.0,
        "comm_bytes": 100,
        "batches": [8, 8, 16],
    }
    row = rows.row(s, trainer, unlogged, lr=0.05, batch=8)
    with torch.no_grad():
        mse = float(((model(x) - y) ** 2).mean())
    x1 = np.hstack([x.double().numpy(), np.ones((30, 1))])
    assert row["train_loss"] == pytest.approx(mse, rel=1e-6) and math.isnan(row["train_acc"])  # regression
    assert math.isnan(row["test_loss"]) and math.isnan(row["test_acc"])  # no test set
    assert row["lambda_max"] == pytest.approx(np.linalg.eigvalsh(2 * x1.T @ x1 / 30)[-1], rel=1e-3)
    assert (row["epoch"], row["step"], row["lr"], row["batch"], row["steps"]) == (2, 10, 0.05, 8, 5)
    assert (row["running_loss"], row["images_per_second"], row["comm_share"]) == (0.5, 20.0, 1.0)  # share capped
    assert row["batches"] == "8 8 16" and row["comm_bytes"] == 100
    trainer.position = Position(epoch=2, offset=16, step=12, batch=8)  # mid-epoch, no λmax due
    later = rows.row(s, trainer, {"loss_sum": 0.0}, lr=0.05, batch=8)
    assert later["epoch"] == 3 and math.isnan(later["lambda_max"]) and math.isnan(later["running_loss"])
    assert later["images_per_second"] == 0.0 and "batches" not in later


def test_the_phase_is_that_of_the_last_step_taken():
    """linear at batch 1024 warms up for 5 epochs; 4096 samples, so an epoch is 4 steps."""
    s = session(resolve("linear", batch_size=1024, epochs=100, warmup_epochs=5))

    def at(**position):
        return rows.phase(s, SimpleNamespace(position=Position(**position)))

    assert at(epoch=5, offset=0, step=20, batch=1024) == "warm-up"  # epoch 5 just ended: its last step warmed up
    assert at(epoch=5, offset=1024, step=21, batch=1024) == "rate 0"  # the first step of epoch 6
    assert at(epoch=0, offset=0, step=0, batch=1024) == "warm-up"  # nothing taken yet: the start


def test_the_mean_rate_weights_each_row_by_its_time_and_a_fresh_run_has_an_empty_last_row():
    history = [{"seconds": 1.0, "images_per_second": 100.0}, {"seconds": 3.0, "images_per_second": 20.0}]
    assert rows.mean_rate(history) == 40.0 and rows.mean_rate([]) == 0.0
    empty = rows.last_row([], SimpleNamespace(position=Position(epoch=0, step=0)))
    assert (empty["epoch"], empty["step"]) == (0, 0) and all(math.isnan(empty[k]) for k in ("train_loss", "test_acc"))
    assert rows.last_row(history, None) is history[-1]
