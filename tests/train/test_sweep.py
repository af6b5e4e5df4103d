"""``landscape sweep`` and ``landscape plot-training``: every configuration trained once, a manifest that
stays whole under concurrent array tasks, reruns that skip what is done, and the figure."""

import csv
import json
import subprocess

import pytest

from landscape.errors import InputError
from landscape.io.run_files import write_run
from landscape.train import sweep as sweeps

from conftest import ROOT, command, run

COMMON = ["--model", "digits_mlp", "--dataset", "digits", "--epochs", "2", "--threads", "1"]
GRID = ["--recipes", "naive", "linear", "--batch_sizes", "32", "256", "--seeds", "0"]


def manifest(out):
    with open(out / "manifest.csv") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_a_sweep_trains_every_configuration_writes_the_manifest_and_skips_them_on_rerun(tmp_path):
    out = tmp_path / "sweep"
    done = run("sweep", ["--out", str(out), *GRID, *COMMON], timeout=300)
    assert done.returncode == 0, done.stderr
    rows = manifest(out)
    assert [r["run"] for r in rows] == ["naive_b32_s0", "naive_b256_s0", "linear_b32_s0", "linear_b256_s0"]
    assert all(r["done"] == "True" and (out / r["run"] / "final.pt").exists() for r in rows)
    assert all(0 <= float(r["test_error"]) <= 100 and float(r["images_per_second"]) > 0 for r in rows)
    assert rows[0]["checkpoint"] == "naive_b32_s0/final.pt"  # relative to the manifest: the folder can move
    data = json.loads((out / "manifest.json").read_text())
    assert len(data["runs"]) == 4 and data["settings"]["batch_sizes"] == [32, 256]
    assert "4 of 4 runs done" in done.stdout

    again = run("sweep", ["--out", str(out), *GRID, *COMMON], timeout=300)
    assert again.returncode == 0 and again.stdout.count("already trained") == 4 and "epoch 1/" not in again.stdout
    assert manifest(out) == rows

    fewer = run("sweep", ["--out", str(out), *GRID[:2], *GRID[3:], *COMMON], timeout=300)  # naive only
    assert fewer.returncode == 0 and manifest(out) == rows  # the linear runs keep their rows

    figure = run("plot-training", [str(out), str(out / "manifest.csv")])  # the same sweep twice counts once
    assert figure.returncode == 0, figure.stderr
    assert (out / "training.png").read_bytes()[:4] == b"\x89PNG" and (out / "training.pdf").exists()


@pytest.mark.slow
def test_array_tasks_running_together_each_train_one_and_share_one_whole_manifest(tmp_path):
    out = tmp_path / "array"
    listed = run("sweep", ["--out", str(out), *GRID, *COMMON, "--list"])
    assert listed.stdout.split("\n")[:4] == [
        "0\tnaive_b32_s0",
        "1\tnaive_b256_s0",
        "2\tlinear_b32_s0",
        "3\tlinear_b256_s0",
    ]
    jobs = [
        subprocess.Popen(
            command("sweep", ["--out", str(out), *GRID, *COMMON, "--task", str(i)]),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2)
    ]
    for job in jobs:
        _, err = job.communicate(timeout=300)
        assert job.returncode == 0, err
    rows = {r["run"]: r["done"] for r in manifest(out)}
    assert rows == {
        "naive_b32_s0": "False",
        "naive_b256_s0": "True",
        "linear_b32_s0": "True",
        "linear_b256_s0": "False",
    }


@pytest.mark.slow
def test_a_config_file_says_it_all_and_flags_win(tmp_path):
    config = tmp_path / "sweep.toml"
    config.write_text(
        f'out = "{tmp_path / "from_file"}"\nrecipes = ["naive"]\nbatch_sizes = [64]\nseeds = [0, 1]\n'
        '[train]\nmodel = "digits_mlp"\ndataset = "digits"\nepochs = 3\nthreads = 1\n'
    )
    done = run("sweep", ["--config", str(config), "--epochs", "1"], timeout=300)
    assert done.returncode == 0, done.stderr
    rows = manifest(tmp_path / "from_file")
    assert [r["run"] for r in rows] == ["naive_b64_s0", "naive_b64_s1"] and {r["epoch"] for r in rows} == {"1"}


@pytest.mark.slow
def test_per_run_flags_and_bad_tasks_are_refused(tmp_path):
    bad = run("sweep", ["--out", str(tmp_path / "s"), *GRID, *COMMON, "--batch_size", "64"])
    assert bad.returncode == 2 and "--batch_size is set per run by the sweep" in bad.stderr
    bad = run("sweep", ["--out", str(tmp_path / "s"), *GRID, *COMMON, "--task", "4"])
    assert bad.returncode == 2 and "--task=4: expected an index in 0..3" in bad.stderr
    bad = run("sweep", ["--out", str(tmp_path / "s"), *COMMON])
    assert bad.returncode == 2 and "--batch_sizes" in bad.stderr
    assert not (tmp_path / "s").exists()
    missing = run("plot-training", [str(tmp_path / "nothing")])
    assert missing.returncode == 3 and "does not exist" in missing.stderr
    unknown = run("sweep", ["--out", str(tmp_path / "s"), "--recipes", "adam", "--batch_sizes", "8", *COMMON])
    assert unknown.returncode == 2 and "--recipes=adam: expected recipes among sgd, naive" in unknown.stderr


@pytest.mark.slow
def test_a_recipes_own_flags_go_to_its_runs_only(tmp_path):
    out = tmp_path / "mixed"
    done = run(
        "sweep",
        [
            "--out",
            str(out),
            "--recipes",
            "naive",
            "linear",
            "--batch_sizes",
            "512",
            *COMMON,
            "--epochs",
            "1",
            "--warmup_epochs",
            "3",
        ],
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    import torch

    naive, linear = (
        torch.load(out / name / "final.pt", weights_only=True)["meta"]["identity"]
        for name in ("naive_b512_s0", "linear_b512_s0")
    )
    assert linear["warmup_epochs"] == 3 and naive["warmup_epochs"] == 5  # naive keeps the (unused) default


def test_a_run_with_a_budget_in_steps_has_no_epochs_in_the_manifest(tmp_path):
    config = sweeps.Configuration("naive", 16, 0)
    (tmp_path / config.name).mkdir()
    write_run(str(tmp_path / config.name), {"identity": {"steps": 6000, "epochs": 300}, "done": True})
    row = sweeps.write_manifest(str(tmp_path), [config], 300, {})[0]
    assert (row["epochs"], row["steps"], row["done"]) == (None, 6000, True)


def test_a_link_planted_at_the_manifest_lock_is_refused_not_followed(tmp_path, cli):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "manifest.lock").symlink_to(victim)
    done = cli("sweep", ["--out", str(out), "--recipes", "naive", "--batch_sizes", "512", "--seeds", "0", *COMMON])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].endswith(
        f"manifest lock {out / 'manifest.lock'} is a symbolic link, which no job of landscape makes; remove it"
    )
    assert victim.read_text() == "precious\n" and not (out / "manifest.json").exists()


ROW = {"run": "naive_b16_s0", "recipe": "naive", "batch_size": 16, "seed": 0, "done": True, "test_error": 5.0}


@pytest.mark.parametrize(
    "runs, words",
    [
        ([ROW, {**ROW, "run": 7}], "run 1 ({'run': 7, "),
        ([{**ROW, "batch_size": None}], "run 0 ({'run': 'naive_b16_s0', "),
        ({"naive_b16_s0": ROW}, "its runs are a dict ({'naive_b16_s0': "),
    ],
    ids=["a number for a name", "no batch size", "not a list"],
)
def test_a_manifest_entry_of_another_shape_is_an_input_error_naming_the_file_and_the_entry(tmp_path, runs, words):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"settings": {}, "runs": runs}))
    with pytest.raises(InputError) as refused:
        sweeps.read_manifest(str(path))
    assert str(refused.value).startswith(f"manifest {path}: ") and words in str(refused.value), refused.value


def test_plot_training_on_a_manifest_entry_of_another_shape_is_one_line_and_draws_nothing(tmp_path, cli):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"settings": {}, "runs": [ROW, "naive_b32_s0"]}))
    done = cli("plot-training", [str(path), "--out", str(tmp_path / "training")])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0] == (
        f"landscape plot-training: error: manifest {path}: run 1 ('naive_b32_s0') is a str: "
        "expected a record of the columns"
    )
    assert not list(tmp_path.glob("training*"))
