"""A training loss that becomes NaN stops the run with exit code 6 and one line naming the epoch, step and
learning rate; the last finite checkpoint is kept, run.json records where; ``--allow_nonfinite`` goes on
with the epoch lines' columns intact; under MPI both ranks stop together; a sweep lists the run as
diverged and trains the others; a study trains on and names it."""

import json
import math
import re

import pytest
import torch

from landscape.errors import Diverged, ExitStatus
from landscape.train import divergence

from conftest import run

# lr 1000 on the digits MLP: epoch 1's loss is huge but finite, step 6 (epoch 2 at batch 512) is NaN
HUGE = ["--model", "digits_mlp", "--lr", "1e3", "--threads", "1", "--progress_seconds", "0"]
LINE = re.compile(
    r"^landscape train: error: training diverged at epoch (\d+), step (\d+) \(learning rate ([0-9.e+]+)\): "
    r"the training loss is nan; .* --allow_nonfinite to go on regardless$"
)


def state(path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def finite(path) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in state(path)["state_dict"].values() if t.is_floating_point())


def test_where_it_diverged_is_the_earliest_step_any_rank_saw_else_where_the_run_is():
    here = divergence.seen(3, 40, 0.1, math.inf)
    ranks = [None, divergence.seen(2, 7, 1000.0, math.nan), divergence.seen(2, 6, 1000.0, math.inf), None]
    assert divergence.first(ranks, here) == {"epoch": 2, "step": 6, "lr": 1000.0, "loss": "inf"}
    assert divergence.first([None, None], here) == {"epoch": 3, "step": 40, "lr": 0.1, "loss": "inf"}
    error = divergence.stopped(divergence.first([None], here), None)
    assert isinstance(error, Diverged) and error.exit_status == 6
    assert error.spelled({"lr": "--lr", "allow_nonfinite": "--allow_nonfinite"}) == (
        "training diverged at epoch 3, step 40 (learning rate 0.1): the training loss is inf; nothing was saved "
        "yet, and run.json records where: lower --lr, or give --allow_nonfinite to go on regardless"
    )


def test_a_huge_learning_rate_stops_at_the_first_nan_keeping_the_last_finite_checkpoint(tmp_path, cli):
    out = tmp_path / "run"
    done = cli("train", [*HUGE, "--epochs", "4", "--batch_size", "512", "--out", str(out)])
    assert done.returncode == ExitStatus.DIVERGED == 6, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and LINE.match(lines[0]), lines
    assert LINE.match(lines[0]).groups() == ("2", "6", "1000")
    assert f"the last finite checkpoint, {out / 'latest.pt'}, is kept" in lines[0]
    record = json.loads((out / "run.json").read_text())
    assert record["done"] is False and (record["epoch"], record["step"]) == (1, 3)
    assert record["diverged"] == {"epoch": 2, "step": 6, "lr": 1000.0, "loss": "nan", "allowed": False}
    assert not (out / "final.pt").exists() and sorted(p.name for p in out.glob("*.pt")) == [
        "epoch_0001.pt",
        "latest.pt",
    ]
    assert finite(out / "latest.pt") and state(out / "latest.pt")["meta"]["epoch"] == 1
    # on purpose, resumed from latest.pt: it goes on, every epoch line keeps its test column, and run.json
    # still says where it began
    on = cli("train", [*HUGE, "--epochs", "4", "--batch_size", "512", "--out", str(out), "--allow_nonfinite"])
    assert on.returncode == 0, on.stderr
    assert "note: training diverged at epoch 2, step 6 (learning rate 1000)" in on.stdout
    epochs = [line for line in on.stdout.splitlines() if re.match(r"epoch \d/4", line)]
    assert len(epochs) == 3 and all("loss nan  train nan / " in e and "  test nan / " in e for e in epochs), epochs
    record = json.loads((out / "run.json").read_text())
    assert record["done"] is True and record["diverged"]["step"] == 6 and record["diverged"]["allowed"] is True
    assert not finite(out / "final.pt")


def test_a_nan_in_the_first_epoch_stops_mid_epoch_before_anything_is_saved(tmp_path, cli):
    out = tmp_path / "run"
    done = cli("train", [*HUGE, "--epochs", "2", "--batch_size", "128", "--out", str(out)])
    assert done.returncode == 6, done.stderr
    assert LINE.match(done.stderr.strip()).groups() == ("1", "6", "1000")  # step 6 of 12 in epoch 1
    assert "nothing was saved yet" in done.stderr
    assert not list(out.glob("*.pt")) and json.loads((out / "run.json").read_text())["diverged"]["step"] == 6


@pytest.mark.mpi
def test_two_ranks_stop_together_at_the_same_step_with_one_line(tmp_path):
    single, double = tmp_path / "one", tmp_path / "two"
    flags = [*HUGE, "--epochs", "2", "--batch_size", "128", "--micro_batch", "64"]
    one = run("train", [*flags, "--out", str(single)])
    two = run("train", [*flags, "--out", str(double)], ranks=2)
    assert one.returncode == two.returncode == 6, two.stderr
    assert len(two.stderr.strip().splitlines()) == 1 and LINE.match(two.stderr.strip()).groups() == ("1", "6", "1000")
    assert (
        json.loads((double / "run.json").read_text())["diverged"]
        == json.loads((single / "run.json").read_text())["diverged"]
    )


SWEEP = """
recipes = ["naive", "sgd"]
batch_sizes = [512]
seeds = [0]
[train]
model = "digits_mlp"
epochs = 3
threads = 1
[train.naive]
lr = 1000.0
"""


@pytest.mark.slow
def test_a_sweep_lists_a_diverged_run_as_such_trains_the_others_and_exits_6(tmp_path):
    (tmp_path / "s.toml").write_text(f'out = "{tmp_path / "o"}"\n' + SWEEP)
    done = run("sweep", ["--config", str(tmp_path / "s.toml")])
    assert done.returncode == 6, done.stderr
    assert "error: 1 of 2 runs diverged (naive_b512_s0): the manifest lists them as diverged" in done.stderr
    rows = {r["run"]: r for r in json.loads((tmp_path / "o" / "manifest.json").read_text())["runs"]}
    assert (rows["naive_b512_s0"]["done"], rows["naive_b512_s0"]["diverged"]) == (False, True)
    assert (rows["sgd_b512_s0"]["done"], rows["sgd_b512_s0"]["diverged"]) == (True, False)
    assert (
        rows["naive_b512_s0"]["checkpoint"] == "" and "naive_b512_s0  " in done.stdout and "(diverged)" in done.stdout
    )


STUDY = """
recipes = ["naive", "sgd"]
batch_sizes = [256, 512]
seeds = [0]
jobs = 2
[train]
model = "digits_mlp"
epochs = 2
[train.naive]
lr = 1000.0
[report]
grid_1d = "-1:1:5"
grid_2d = "-1:1:5"
directions = 2
trace_samples = 3
iterations = 5
restarts = 1
draws = 3
m = 64
formats = ["png"]
"""


@pytest.mark.slow
def test_a_study_whose_arm_diverged_reports_on_the_others_and_names_it(tmp_path):
    """The decision: a diverged run does not fail the study when the report can leave it out (exit 0)."""
    (tmp_path / "s.toml").write_text(STUDY)
    out, figures = tmp_path / "o", tmp_path / "f"
    done = run(
        "study", ["--config", str(tmp_path / "s.toml"), "--out", str(out), "--figures", str(figures)], timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "naive_b256_s0: DIVERGED" in done.stdout and "sgd_b512_s0: done" in done.stdout
    assert "diverged, left out: naive_b256_s0, naive_b512_s0" in done.stdout
    assert "no finished run of naive: no figure of its training" in done.stdout
    assert "left out, unfinished: naive_b256_s0, naive_b512_s0" in done.stdout
    card = json.loads((figures / "study.json").read_text())
    assert sorted(r["name"] for r in card["runs"]) == ["sgd_b256_s0", "sgd_b512_s0"]
    assert json.loads((out / "naive_b256_s0" / "run.json").read_text())["diverged"]["epoch"] == 1
    assert (figures / "study_training_sgd.png").exists() and not list(figures.glob("study_training_naive*"))
