"""A budget in optimizer steps, evaluations every few steps or epochs, λmax along training, the loss by
name, and a stop signal honoured between epochs (full-batch training has one step an epoch)."""

import csv
import math
import signal

import pytest

import landscape
from landscape.data import load_named
from landscape.errors import ConfigError
from landscape.train.recipes import resolve

from ..workflows.test_train import rows, same_weights, weights
from conftest import run, start

MLP = ["--model", "mnist1d_mlp", "--dataset", "mnist1d_400", "--threads", "1", "--lr", "0.05"]


def log(folder) -> list[dict]:
    with open(folder / "log.csv") as handle:
        return list(csv.DictReader(handle))


def test_a_budget_in_steps_drops_the_rate_at_its_fractions_and_refuses_epochs_beside_it():
    recipe = resolve("sgd", steps=100, milestones=(0.5, 0.75))
    assert recipe.milestone_steps() == [50, 75] and recipe.budget == "100 steps"
    assert [recipe.lr_at(0, 0.0, step) for step in (0, 49, 50, 74, 75)] == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.001])
    assert recipe.finished(epoch=1, step=99) is False and recipe.finished(epoch=0, step=100) is True
    assert resolve("sgd", epochs=5).budget == "5 epochs" and resolve("sgd", epochs=5).finished(5, 0)
    with pytest.raises(ConfigError, match="epochs.*not both"):
        resolve("sgd", steps=10, epochs=3)
    with pytest.raises(ConfigError, match="steps"):
        resolve("sgd", steps=0)


def test_a_run_in_steps_stops_at_its_budget_with_a_row_every_few_steps(tmp_path, cli):
    out = tmp_path / "steps"
    done = cli("train", [*MLP, "--batch_size", "64", "--steps", "12", "--eval_every", "5", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    table = [(r["epoch"], r["step"], r["steps"]) for r in log(out)]
    assert table == [("1", "5", "5"), ("2", "10", "5"), ("3", "12", "2")]  # 5 steps an epoch of 320 samples
    assert sorted(p.name for p in out.glob("step_*.pt")) == ["step_0000005.pt", "step_0000010.pt", "step_0000012.pt"]
    assert same_weights(out / "step_0000012.pt", out / "final.pt")
    assert "12 steps" in done.stdout and "step 12/12" in done.stdout
    # pausing for evaluations does not change the training: the same 12 steps without them
    plain = tmp_path / "plain"
    flags = [*MLP, "--batch_size", "64", "--steps", "12", "--eval_every", "12", "--out", str(plain)]
    assert cli("train", flags).returncode == 0
    assert same_weights(plain / "final.pt", out / "final.pt")
    assert [(r["step"], r["steps"]) for r in log(plain)] == [("12", "12")]


def test_lambda_max_is_logged_at_step_0_and_every_k_steps_as_the_curvature_command_finds_it(tmp_path, cli):
    out = tmp_path / "sharp"
    flags = [*MLP, "--batch_size", "320", "--momentum", "0", "--no-nesterov", "--weight_decay", "0"]
    done = cli("train", [*flags, "--steps", "6", "--curvature_every", "3", "--eval_every", "3", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    table = log(out)
    assert [r["step"] for r in table] == ["0", "3", "6"] and all(float(r["lambda_max"]) > 0 for r in table)
    assert all(float(r["lambda_max_residual"]) < 1e-2 for r in table)
    data = load_named("mnist1d_400").train
    from landscape.models import build_model

    model = build_model("mnist1d_mlp")
    model.load_state_dict(weights(out / "step_0000003.pt"))
    exact = landscape.hessian_eigs(model, (data.inputs, data.targets), which="top", tol=1e-8)["top"].values[0]
    assert float(table[1]["lambda_max"]) == pytest.approx(exact, rel=2e-3)
    assert "λmax" in done.stdout


def test_curvature_points_spaces_about_that_many_lambda_max_values_over_any_budget(tmp_path, cli):
    from landscape.data import DataConfig
    from landscape.models import ModelConfig
    from landscape.train import TrainJob, TrainRun

    def interval(points, train_size=320, **recipe):
        job = TrainJob(
            ModelConfig("mnist1d_mlp"),
            DataConfig("mnist1d_400"),
            resolve("linear", **recipe),
            TrainRun(curvature_points=points),
        )
        return job.curvature_interval(train_size)

    # 60 epochs of 4,000 samples: 15,000 steps at batch 16, 240 at batch 1024 (the study's linear arm)
    assert interval(100, 4000, epochs=60, batch_size=16) == 150
    assert interval(100, 4000, epochs=60, batch_size=1024) == 2
    assert interval(1000, 4000, epochs=1, batch_size=1024) == 1  # never less than every step
    assert interval(3, steps=6) == 2
    with pytest.raises(ConfigError, match="curvature_points.*curvature_every"):
        TrainRun(curvature_every=3, curvature_points=2)
    with pytest.raises(ConfigError, match="curvature_points"):
        TrainRun(curvature_points=0)
    with pytest.raises(ConfigError, match="adaptive"):
        TrainJob(
            ModelConfig("mnist1d_mlp"), DataConfig("mnist1d_400"), resolve("adaptive"), TrainRun(curvature_points=5)
        )
    # 2 epochs of 5 steps (batch 64 of 320 samples), 5 values asked: λmax at steps 0, 2, 4, ..., 10
    out = tmp_path / "points"
    done = cli("train", [*MLP, "--batch_size", "64", "--epochs", "2", "--curvature_points", "5", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    assert [r["step"] for r in log(out) if math.isfinite(float(r["lambda_max"] or "nan"))] == [
        "0",
        "2",
        "4",
        "6",
        "8",
        "10",
    ]
    both = cli("train", [*MLP, "--curvature_every", "2", "--curvature_points", "5", "--out", str(tmp_path / "both")])
    assert both.returncode == 2 and "curvature_points" in both.stderr and not (tmp_path / "both").exists()


def test_the_loss_by_name_trains_with_mse_on_one_hot_targets_and_is_part_of_the_runs_identity(tmp_path, cli):
    out = tmp_path / "mse"
    done = cli("train", [*MLP, "--batch_size", "100", "--epochs", "2", "--loss_name", "mse", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    assert "loss mse" in done.stdout and math.isfinite(float(log(out)[-1]["train_loss"]))
    other = cli("train", [*MLP, "--batch_size", "100", "--epochs", "2", "--out", str(out)])
    assert other.returncode != 0 and "loss_name" in other.stderr
    bad = cli("train", [*MLP, "--loss_name", "hinge", "--out", str(tmp_path / "bad")])
    assert bad.returncode == 2 and "loss_name" in bad.stderr and not (tmp_path / "bad").exists()


def test_evaluations_every_few_epochs_log_only_those_epochs(tmp_path, cli):
    out = tmp_path / "every"
    done = cli("train", [*MLP, "--batch_size", "100", "--epochs", "5", "--eval_every", "2", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    table = log(out)
    assert [r["epoch"] for r in table] == ["2", "4", "5"]
    assert [int(r["steps"]) for r in table] == [8, 8, 4]  # every step counted once: 4 an epoch of 320 samples
    assert all(float(r["images_per_second"]) > 0 for r in table)


@pytest.mark.slow
def test_a_stop_signal_between_full_batch_epochs_saves_and_the_rerun_ends_bit_identical(tmp_path):
    """Full-batch training: every epoch is one step, so the stop request is never seen inside one."""
    flags = [*MLP, "--batch_size", "320", "--epochs", "400", "--save_every", "400"]
    whole = tmp_path / "whole"
    assert run("train", [*flags, "--out", str(whole)], timeout=300).returncode == 0
    out = tmp_path / "stopped"
    job = start("train", [*flags, "--out", str(out)])
    while not (out / "latest.pt").exists():
        assert job.poll() is None, job.communicate()
    job.send_signal(signal.SIGTERM)
    _, stderr = job.communicate(timeout=60)
    assert job.returncode == 143, stderr
    assert "rerun the same command to resume" in stderr and not (out / "final.pt").exists()
    resumed = run("train", [*flags, "--out", str(out)], timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert same_weights(whole / "final.pt", out / "final.pt") and rows(whole) == rows(out)


@pytest.mark.slow
def test_full_batch_gradient_descent_sharpens_to_the_stability_limit_and_hovers_there(tmp_path):
    """Cohen et al. (2021): under gradient descent with rate η, λmax rises until it meets 2/η and stays
    there while the loss goes on falling, not monotonically.  MNIST-1D's perceptron, MSE, η = 1: the
    limit is 2 and λmax starts below 1."""
    out = tmp_path / "eos"
    flags = ["--model", "mnist1d_mlp", "--dataset", "mnist1d_1000", "--batch_size", "800", "--loss_name", "mse"]
    flags += ["--lr", "1", "--momentum", "0", "--no-nesterov", "--weight_decay", "0", "--milestones"]
    flags += ["--steps", "1000", "--curvature_every", "50", "--eval_every", "50", "--threads", "1", "--out", str(out)]
    done = run("train", flags, timeout=300)
    assert done.returncode == 0, done.stderr
    table = log(out)
    limit = 2 / 1.0
    sharpness = [float(r["lambda_max"]) for r in table]
    assert sharpness[0] < 0.5 * limit  # far below the limit at the start
    reached = next(i for i, v in enumerate(sharpness) if v >= 0.95 * limit)
    assert 0 < reached < len(sharpness) - 5, sharpness  # sharpened, then had time to hover
    assert all(0.9 * limit <= v <= 1.15 * limit for v in sharpness[reached:]), sharpness
    losses = [float(r["train_loss"]) for r in table[reached:]]
    assert losses[-1] < 0.7 * losses[0]  # training goes on at the edge of stability ...
    assert any(b > a for a, b in zip(losses, losses[1:]))  # ... not monotonically
