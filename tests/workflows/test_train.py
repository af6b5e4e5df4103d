"""``landscape train`` on one process: files a surface job reads, a resume after kill -9 or a stop signal
that ends bit for bit where an uninterrupted run ends, and bad settings refused by name."""

import csv
import json
import os
import signal
import time

import pytest
import torch

from landscape.io.checkpoint import read_state_dict

from conftest import process_tree, run, start

QUICK = ["--model", "digits_mlp", "--dataset", "digits", "--batch_size", "64", "--epochs", "2", "--threads", "1"]
# Slow enough to be caught mid-run: batch 16 is 90 steps an epoch.
SLOW = [
    "--model",
    "digits_cnn",
    "--dataset",
    "digits",
    "--batch_size",
    "16",
    "--epochs",
    "4",
    "--recipe",
    "linear",
    "--threads",
    "1",
]


def weights(path):
    return torch.load(path, map_location="cpu", weights_only=True)["state_dict"]


def same_weights(a, b) -> bool:
    wa, wb = weights(a), weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def rows(folder):
    with open(os.path.join(folder, "log.csv")) as handle:
        return [
            {k: v for k, v in r.items() if k not in ("seconds", "images_per_second", "comm_share")}
            for r in csv.DictReader(handle)
        ]


def test_a_run_writes_checkpoints_a_log_and_a_final_file_that_plot_surface_reads(tmp_path, cli):
    out = tmp_path / "mlp"
    done = cli("train", [*QUICK, "--out", str(out)])
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(out)) == ["epoch_0001.pt", "epoch_0002.pt", "final.pt", "latest.pt", "log.csv", "run.json"]
    lines = [row for row in done.stdout.splitlines() if row.startswith("epoch ")]
    assert len(lines) == 2 and "img/s" in lines[0] and "lr 0.1 " in lines[0]
    final = torch.load(out / "final.pt", weights_only=True)
    meta = final["meta"]
    assert meta["epoch"] == 2 and meta["identity"]["batch_size"] == 64 and meta["identity"]["seed"] == 0
    assert 0 <= meta["metrics"]["test_acc"] <= 100 and final["state_dict"]["net.1.weight"].dtype == torch.float32
    assert same_weights(out / "final.pt", out / "epoch_0002.pt")
    assert read_state_dict(str(out / "final.pt")).keys() == final["state_dict"].keys()
    assert [r["epoch"] for r in rows(out)] == ["1", "2"]
    assert json.loads((out / "run.json").read_text())["done"] is True
    surface = cli(
        "surface",
        [
            "--model",
            "digits_mlp",
            "--model_file",
            str(out / "final.pt"),
            "--x=-1:1:3",
            "--surf_file",
            str(tmp_path / "s.h5"),
            "--threads",
            "1",
            "--quiet",
        ],
    )
    assert surface.returncode == 0, surface.stderr

    from landscape.io.atomic import HOST

    from ..io.test_atomic import dead_pid

    dead, alive = dead_pid(), os.getppid()  # what a killed run left, and a file a live process is writing
    stale, live = f"latest.pt.partial-{HOST}-{dead}", f"log.csv.partial-{HOST}-{alive}"
    for name in (stale, live):
        (out / name).write_text("")
    again = cli("train", [*QUICK, "--out", str(out)])  # finished: left as it is, the dead run's partial removed
    assert again.returncode == 0 and "already trained" in again.stdout, again.stderr
    assert not (out / stale).exists() and (out / live).exists()


@pytest.mark.slow
def test_the_default_recipe_is_the_papers_sgd(tmp_path):
    done = run("train", [*QUICK, "--out", str(tmp_path / "r")])
    assert "recipe sgd" in done.stdout and "lr 0.1 " in done.stdout


@pytest.mark.slow
def test_rerunning_a_finished_run_leaves_it_alone(tmp_path):
    out = tmp_path / "r"
    assert run("train", [*QUICK, "--out", str(out)]).returncode == 0
    before = (out / "final.pt").stat().st_mtime_ns
    again = run("train", [*QUICK, "--out", str(out)])
    assert again.returncode == 0 and "already trained" in again.stdout
    assert (out / "final.pt").stat().st_mtime_ns == before


@pytest.mark.slow
def test_a_run_with_other_settings_in_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "r"
    assert run("train", [*QUICK, "--out", str(out)]).returncode == 0
    other = run("train", [*QUICK, "--lr", "0.05", "--out", str(out)])
    assert other.returncode == 4
    assert (
        other.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"{out} holds a run with --lr=0.1, not 0.05; rerun with its settings to resume it, or give another --out"
        )
    )


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--augment", "standard"], "--augment=standard: expected none or auto for dataset=digits"),
        (["--micro_batch", "0"], "--micro_batch=0: expected a positive whole number of samples"),
        (["--momentum", "1.5"], "--momentum=1.5: expected a number with 0 <= momentum < 1"),
        (["--recipe", "adam"], "argument --recipe: invalid choice: 'adam'"),
        (["--milestones", "0.9", "0.5"], "--milestones=(0.9, 0.5): expected increasing fractions"),
    ],
)
@pytest.mark.slow
def test_bad_settings_are_one_line_usage_errors_and_write_nothing(tmp_path, flags, message):
    out = tmp_path / "r"
    done = run("train", [*QUICK, "--out", str(out), *flags])
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The run the interrupted ones must end identical to."""
    out = tmp_path_factory.mktemp("uninterrupted") / "whole"
    done = run("train", [*SLOW, "--out", str(out)], timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def _wait_for(path, job, seconds=120):
    started = time.time()
    while not path.exists():
        assert job.poll() is None, job.communicate()
        assert time.time() - started < seconds
        time.sleep(0.02)


@pytest.mark.slow
def test_kill_9_then_the_same_command_ends_bit_identical(tmp_path, whole):
    out = tmp_path / "killed"
    job = start("train", [*SLOW, "--out", str(out)])
    _wait_for(out / "epoch_0002.pt", job)
    time.sleep(0.2)  # somewhere in epoch 3
    for pid in process_tree(job.pid):
        os.kill(pid, signal.SIGKILL)
    job.wait()
    assert not (out / "final.pt").exists(), "the run ended before it was killed: the test proves nothing"
    resumed = run("train", [*SLOW, "--out", str(out)], timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stdout
    assert same_weights(whole / "final.pt", out / "final.pt")
    assert same_weights(whole / "epoch_0004.pt", out / "epoch_0004.pt")
    assert rows(whole) == rows(out)


@pytest.mark.slow
def test_a_stop_signal_mid_epoch_saves_the_position_and_the_rerun_ends_bit_identical(tmp_path, whole):
    out = tmp_path / "stopped"
    job = start("train", [*SLOW, "--out", str(out)])
    _wait_for(out / "epoch_0001.pt", job)
    time.sleep(0.1)
    job.send_signal(signal.SIGTERM)
    stdout, stderr = job.communicate(timeout=60)
    assert job.returncode == 143, stderr
    assert "rerun the same command to resume" in stderr
    position = torch.load(out / "latest.pt", weights_only=True)["ranks"][0]["position"]
    assert position["offset"] > 0, "stopped between epochs: the mid-epoch case is not tested"
    resumed = run("train", [*SLOW, "--out", str(out)], timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"(step {position['step']}, sample {position['offset']})" in resumed.stdout
    assert same_weights(whole / "final.pt", out / "final.pt")
    assert rows(whole) == rows(out)  # the interrupted epoch's row too: its totals survive the stop


def test_the_python_api_trains_resumes_and_names_bad_keywords(tmp_path):
    from landscape.api import train
    from landscape.errors import UsageError

    result = train(
        model="digits_mlp", out=str(tmp_path / "api"), batch_size=128, epochs=2, lr=0.05, threads=1, quiet=True
    )
    assert result.final.endswith("final.pt") and len(result.history) == 2 and result.resumed_from is None
    assert torch.load(result.final, weights_only=True)["meta"]["identity"]["lr"] == 0.05
    again = train(
        model="digits_mlp", out=str(tmp_path / "api"), batch_size=128, epochs=2, lr=0.05, threads=1, quiet=True
    )
    assert again.resumed_from == 2 and again.seconds == 0.0
    assert again.record()["recipe"]["lr"] == 0.05 and "history" not in again.record()
    with pytest.raises(UsageError, match="^lr=-1: expected a positive number"):
        train(model="digits_mlp", out=str(tmp_path / "bad"), lr=-1)
    with pytest.raises(UsageError, match="got an unexpected keyword argument 'learning_rate'"):
        train(model="digits_mlp", out=str(tmp_path / "bad"), learning_rate=0.1)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--num_classes", "5"], "labels run from 0 to 9"),
        (["--batch_size", "2000"], "--batch_size=2000: expected at most the 1437 training samples"),
        (["--micro_batch", "100"], "--micro_batch=100: expected at most batch_size (64)"),
        (["--trust", "0.01"], "--trust=0.01: expected no value with recipe=sgd: it applies to recipe lars only"),
        (["--recipe", "adaptive", "--micro_batch", "64"], "--micro_batch=64: expected at most batch_size / 2 (32)"),
    ],
)
@pytest.mark.slow
def test_settings_that_do_not_fit_the_data_or_the_recipe_are_refused_before_anything_is_written(
    tmp_path, flags, message
):
    out = tmp_path / "r"
    done = run("train", [*QUICK, "--out", str(out), *flags])
    assert done.returncode in (2, 3) and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.slow
def test_a_model_that_does_not_fit_the_data_is_one_line_and_an_existing_file_is_not_a_folder(tmp_path):
    done = run("train", ["--model", "resnet20", "--dataset", "digits", "--epochs", "1", "--out", str(tmp_path / "r")])
    assert done.returncode == 3 and "model resnet20 cannot take the inputs of dataset digits" in done.stderr
    assert not (tmp_path / "r").exists()
    (tmp_path / "f").write_text("keep me")
    done = run("train", [*QUICK, "--out", str(tmp_path / "f")])
    assert done.returncode == 3 and "is a file: expected a folder" in done.stderr
    assert (tmp_path / "f").read_text() == "keep me"


@pytest.mark.slow
def test_adaptive_grows_the_batch_on_one_rank_too(tmp_path):
    out = tmp_path / "a"
    done = run(
        "train",
        [
            "--model",
            "digits_cnn",
            "--dataset",
            "digits",
            "--recipe",
            "adaptive",
            "--batch_size",
            "64",
            "--lr",
            "0.05",
            "--theta",
            "0.5",
            "--epochs",
            "1",
            "--threads",
            "1",
            "--out",
            str(out),
        ],
    )
    assert done.returncode == 0, done.stderr
    assert "batch 64 (16 per pass)" in done.stdout  # four micro-batches per step by default
    with open(out / "log.csv") as handle:
        batches = [int(b) for b in next(csv.DictReader(handle))["batches"].split()]
    assert batches[0] == 64 and max(batches) > 64
