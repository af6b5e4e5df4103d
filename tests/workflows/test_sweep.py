"""``landscape sweep`` at a stop signal: the run in training saves where it stopped, no other run begins, the
manifest stays whole, the sweep exits 143 with one line, and rerunning it ends where an uninterrupted sweep
does."""

import csv
import os
import signal

import pytest
import torch

from conftest import run, start

FLAGS = ["--model", "mnist1d_mlp", "--dataset", "mnist1d_400", "--batch_sizes", "320", "--seeds", "0", "1"]
FLAGS += ["--epochs", "30", "--save_every", "30", "--lr", "0.05", "--threads", "1"]  # full batch: a step an epoch
VARIES = ("seconds", "images_per_second")  # how long it took, not what was computed


def manifest(out) -> list[dict]:
    with open(out / "manifest.csv") as handle:
        return [{k: v for k, v in row.items() if k not in VARIES} for row in csv.DictReader(handle)]


def weights(path) -> dict:
    return torch.load(path, weights_only=True)["state_dict"]


@pytest.mark.slow
def test_a_stop_signal_ends_the_run_in_training_begins_no_other_and_a_rerun_finishes_the_sweep(tmp_path):
    out = tmp_path / "stopped"
    job = start("sweep", ["--out", str(out), *FLAGS], env={"PYTHONUNBUFFERED": "1"})
    for line in job.stdout:
        if line.startswith("== sgd_b320_s1 (2 of 2)"):  # the first run is trained, the second begins
            break
    os.kill(job.pid, signal.SIGTERM)
    stdout, stderr = job.communicate(timeout=120)
    assert job.returncode == 143, stderr
    lines = stderr.strip().splitlines()
    assert lines == [
        "landscape sweep: stopped by SIGTERM after 1 of 2 runs (sgd_b320_s1 saved where it stopped); "
        "rerun the same command to resume"
    ], stderr
    assert (out / "sgd_b320_s0" / "final.pt").exists() and not (out / "sgd_b320_s1" / "final.pt").exists()
    assert (out / "sgd_b320_s1" / "latest.pt").exists()  # its position, to resume from
    assert [(r["run"], r["done"]) for r in manifest(out)] == [("sgd_b320_s0", "True"), ("sgd_b320_s1", "False")]
    assert not [name for _, _, names in os.walk(tmp_path) for name in names if ".partial-" in name]

    resumed = run("sweep", ["--out", str(out), *FLAGS])
    assert resumed.returncode == 0, resumed.stderr
    assert "already trained" in resumed.stdout and "resuming" in resumed.stdout
    whole = tmp_path / "whole"
    assert run("sweep", ["--out", str(whole), *FLAGS]).returncode == 0
    assert manifest(out) == manifest(whole)
    for name in ("sgd_b320_s0", "sgd_b320_s1"):
        a, b = weights(out / name / "final.pt"), weights(whole / name / "final.pt")
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name


def test_factory_arguments_as_a_toml_table_are_arguments_not_a_recipe_table(tmp_path):
    """``model_args = {width = 16}`` in [train] is the factory's arguments, as the JSON string would be."""
    from landscape.workflows.sweep import config_file

    (tmp_path / "s.toml").write_text('[train]\nmodel = "x.py:f"\nmodel_args = {width = 16}\n[train.sgd]\nlr = 0.1\n')
    given = config_file(str(tmp_path / "s.toml"))
    assert given["model_args"] == {"width": 16} and given["by_recipe"] == {"sgd": {"lr": 0.1}}
