"""The inputs that used to end in an internal error (exit 1, a traceback): each is now one line, its
documented exit (2 usage, 3 input), and nothing written."""

import json
import os

import numpy as np
import pytest
import torch

from landscape.io.checkpoint import save
from landscape.models import build_model

from conftest import landscape

MLP = ["--model", "digits_mlp", "--model_file", "m.pt"]
FACTORIES = """
import numpy as np
import torch
from torch import nn


class First(nn.Module):  # no parameters at all
    def forward(self, x):
        return x.flatten(1)[:, :10]


def none():
    return First()


def frozen():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10).requires_grad_(False))


def data(kind="ints"):
    g = np.random.default_rng(0)
    x, y = g.integers(0, 16, size=(200, 64)), g.integers(0, 10, size=200)
    if kind in ("nan", "labels"):
        x = x.astype(np.float32)
    if kind == "nan":
        x[3, 5] = np.nan
    if kind == "labels":
        y[3] = 99
    return (torch.as_tensor(x), torch.as_tensor(y)), None
"""


def one_line(capsys, code, got, *words) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert got == code and len(err) == 1, (got, err)
    assert "internal error" not in err[0] and "Traceback" not in err[0]
    for word in words:
        assert word in err[0], err[0]
    return err[0]


@pytest.fixture
def made(tmp_path, monkeypatch):
    """A checkpoint of the digits MLP and a file of factories (models, data sets) beside it; the tests run
    in that folder (``MLP`` names the checkpoint by its relative path)."""
    torch.manual_seed(0)
    save(build_model("digits_mlp"), str(tmp_path / "m.pt"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hostile_factories.py").write_text(FACTORIES)
    return tmp_path


def test_json_nested_20000_deep_is_a_usage_error_shown_by_its_start(made, capsys):
    deep = '{"a":' * 20_000 + "1" + "}" * 20_000
    got = landscape("curvature", *MLP, "--model_args", deep, "--out", made / "c.json")
    line = one_line(capsys, 2, got, "--model_args=", "JSON nested too deeply to read", "(120,001 characters)")
    assert len(line) < 400 and not (made / "c.json").exists()


def test_k_above_the_parameter_count_names_the_count(made, capsys):
    got = landscape("curvature", *MLP, "--k", "100000", "--out", made / "c.json")
    one_line(capsys, 2, got, "--k=100000: expected fewer eigenvalues than the model's 17,226 trainable parameters")
    assert not (made / "c.json").exists()


@pytest.mark.parametrize("factory", ["none", "frozen"])
def test_a_model_with_no_trainable_parameter_is_refused_by_train_and_curvature(made, capsys, factory):
    spec = f"{made}/hostile_factories.py:{factory}"
    got = landscape("train", "--model", spec, "--dataset", "digits", "--epochs", "1", "--out", made / "run")
    one_line(capsys, 3, got, f"model {spec} has no trainable parameters")
    assert not (made / "run").exists()
    import importlib.util

    loader = importlib.util.spec_from_file_location("hostile_factories_here", made / "hostile_factories.py")
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    save(getattr(module, factory)(), str(made / "p.pt"))
    got = landscape("curvature", "--model", spec, "--model_file", made / "p.pt", "--out", made / "c.json")
    one_line(capsys, 3, got, "has no trainable parameters: a Hessian needs at least one")
    assert not (made / "c.json").exists()


def test_integer_inputs_are_named_the_same_way_by_every_command(made, capsys):
    data = ["--dataset", f"{made}/hostile_factories.py:data"]
    words = ("cannot take the inputs of dataset", "(int64, each of shape (64,))", "converted to float")
    commands = [
        ["train", "--model", "digits_mlp", *data, "--epochs", "1", "--out", made / "run"],
        ["surface", *MLP, *data, "--x=-1:1:3",
         "--surf_file", made / "s.h5"],
        ["curvature", *MLP, *data, "--out", made / "c.json"],
        ["rescale", *MLP, *data, "--alpha", "2", "--out",
         made / "r.pt"],
    ]  # fmt: skip
    for argv in commands:
        one_line(capsys, 3, landscape(*argv), *words)
    assert sorted(p.name for p in made.iterdir() if p.suffix != ".pyc" and p.name != "__pycache__") == [
        "hostile_factories.py",
        "m.pt",
    ]


def test_nan_in_the_data_is_named_as_the_data_not_as_divergence(made, capsys):
    argv = ["train", "--model", "digits_mlp", "--dataset", f"{made}/hostile_factories.py:data"]
    got = landscape(*argv, "--data_args", '{"kind": "nan"}', "--epochs", "1", "--out", made / "run")
    line = one_line(capsys, 3, got, "1 of its 200 inputs hold NaN or infinite values (the first at sample 3)")
    assert "--lr" not in line and not (made / "run").exists()


def test_a_checkpoint_given_as_the_surface_file_leaves_no_direction_file(made, capsys):
    before = (made / "m.pt").read_bytes()
    got = landscape("surface", *MLP, "--x=-1:1:3", "--surf_file", made / "m.pt")
    one_line(capsys, 3, got, f"--surf_file={made / 'm.pt'} exists and is a checkpoint")
    assert (made / "m.pt").read_bytes() == before and not (made / "m.pt.directions.h5").exists()


def test_a_huge_rescale_factor_writes_no_infinite_weights(made, capsys):
    for alpha in ("1e308", "1e-308"):
        got = landscape("rescale", *MLP, "--alpha", alpha,
                        "--out", made / "r.pt")  # fmt: skip
        one_line(capsys, 2, got, f"--alpha={float(alpha)!r}: expected a factor that keeps net.1.weight finite")
    assert not (made / "r.pt").exists()


def test_a_batch_size_larger_than_the_data_stops_a_sweep_before_its_first_run(made, capsys):
    got = landscape("sweep", "--out", made / "sweep", "--model", "digits_mlp", "--dataset", "digits", "--epochs", "1",
                    "--batch_sizes", "16", "1000000000")  # fmt: skip
    one_line(capsys, 2, got, "--batch_size=1000000000: expected at most the 1437 training samples")
    assert not (made / "sweep").exists()


def test_a_study_of_a_million_seeds_is_refused_before_anything_runs(made, capsys):
    (made / "big.toml").write_text(f"seeds = {list(range(10**6))}\n")
    got = landscape("study", "--config", made / "big.toml", "--out", made / "study", "--figures", made / "fig")
    line = one_line(capsys, 2, got, "the study would train 8,000,012 networks", "expected at most 10,000")
    assert len(line) < 300 and not (made / "study").exists() and not (made / "fig").exists()


def test_a_training_log_that_is_not_one_is_refused_by_plot_training(made, capsys):
    sweep = made / "sweep"
    assert landscape("sweep", "--out", sweep, "--model", "digits_mlp", "--dataset", "digits", "--epochs", "1",
                     "--batch_sizes", "256", "--threads", "1") == 0  # fmt: skip
    log = sweep / "sgd_b256_s0" / "log.csv"
    good = log.read_text()
    for text, words in (
        (b"garbage\x00\xff\n1,2\n", "is not a text file"),
        (b"run,loss\n1,2\n", "starts with 'run,loss': expected the log.csv of landscape train"),
        (good.replace("\n1,", "\nx,", 1).encode(), "line 2: epoch='x': expected a whole number"),
        ((good.rstrip("\n") + ",extra\n").encode(), "values for"),
    ):
        log.write_bytes(text)
        capsys.readouterr()
        one_line(capsys, 3, landscape("plot-training", sweep), "training log", words)
    for special, words in (("fifo", "is a FIFO, not a regular file"), ("zero", "is a device, not a regular file")):
        log.unlink()
        os.mkfifo(log) if special == "fifo" else os.symlink("/dev/zero", log)  # reading either would never end
        one_line(capsys, 3, landscape("plot-training", sweep), "training log", words)
    assert not (sweep / "training.png").exists()


def test_curvature_takes_a_device_and_names_a_missing_gpu(made, capsys):
    out = made / "c.json"
    assert landscape("curvature", *MLP, "--k", "1", "--device", "cpu", "--out", out) == 0
    assert json.loads(out.read_text())["device"] == "cpu" and json.loads(out.read_text())["complete"] is True
    if not torch.cuda.is_available():
        capsys.readouterr()
        got = landscape("curvature", *MLP, "--device", "cuda", "--out", made / "g.json")
        one_line(capsys, 3, got, "--device=cuda: no CUDA device is visible")
    assert np.isfinite(json.loads(out.read_text())["eigenvalues"]["top"]["values"][0])


@pytest.mark.parametrize("level", ["inf", "nan", "0", "-1"])
def test_a_matched_loss_that_is_not_a_positive_finite_number_is_refused(made, capsys, level):
    (made / "m.csv").write_text("checkpoint,batch_size\nm.pt,16\n")
    got = landscape("report", made / "m.csv", "--model", "digits_mlp", "--match_loss", level, "--out", made / "r")
    one_line(capsys, 2, got, f"--match_loss={level}: expected auto, off, or a positive training loss")
    assert not (made / "r").exists()


def test_labels_beyond_the_models_classes_are_named_by_curvature(made, capsys):
    data = ["--dataset", f"{made}/hostile_factories.py:data", "--data_args", '{"kind": "labels"}']
    got = landscape("curvature", *MLP, *data, "--out", made / "c.json")
    one_line(capsys, 3, got, "the model gives 10 class scores per sample but the labels run from 0 to 99")
    assert not (made / "c.json").exists()
