"""Checkpoints as users have them: the reference code's .t7 files, wrapper prefixes, Python objects."""

import argparse

import numpy as np
import pytest
import torch

from landscape.errors import ConfigError
from landscape.io.checkpoint import read_state_dict, save, trained_on, with_recorded
from landscape.io.surface_file import read as read_surface
from landscape.models import DigitsCNN, build_model
from landscape.provenance import sha256_tensors
from landscape.train.checkpoints import save_weights

from conftest import landscape, run

CNN = ["--model", "digits_cnn", "--x=-1:1:5", "--no_test", "--threads", "1"]


def trained_cnn() -> DigitsCNN:
    torch.manual_seed(4)
    model = DigitsCNN()
    with torch.no_grad():
        for t in model.state_dict().values():
            if t.is_floating_point():
                t.add_(0.2 * torch.randn_like(t))
    return model


@pytest.mark.slow
@pytest.mark.mpi
def test_a_reference_t7_without_batchnorm_counters_computes_the_same_surface(tmp_path):
    """The paper's checkpoints: PyTorch < 0.4.1 (no num_batches_tracked), saved from nn.DataParallel
    (module. prefixes) as {'state_dict': ...} in the legacy, pre-zip serialization."""
    model = trained_cnn()
    save(model, str(tmp_path / "ours.pt"))
    old = {f"module.{k}": v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    torch.save(
        {"state_dict": old, "epoch": 300, "acc": 93.1}, tmp_path / "model_300.t7", _use_new_zipfile_serialization=False
    )
    common = [*CNN, "--dir_file", str(tmp_path / "d.h5")]
    assert (
        landscape("surface", *common, "--model_file", tmp_path / "ours.pt", "--surf_file", tmp_path / "a.h5", "--quiet")
        == 0
    )
    proc = run(
        "surface",
        [*common, "--model_file", str(tmp_path / "model_300.t7"), "--surf_file", str(tmp_path / "b.h5")],
        ranks=2,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("num_batches_tracked") == 1, proc.stdout  # said once, by rank 0
    assert "PyTorch < 0.4.1" in proc.stdout
    a, b = read_surface(str(tmp_path / "a.h5")), read_surface(str(tmp_path / "b.h5"))
    assert a.attrs["origin_sha256"] == b.attrs["origin_sha256"] == sha256_tensors(model.state_dict())
    assert all(np.array_equal(a.values[q], b.values[q]) for q in a.values)


def test_other_missing_tensors_are_still_refused(tmp_path, capsys):
    state = {k: v for k, v in trained_cnn().state_dict().items() if k != "features.1.running_var"}
    torch.save({"state_dict": state}, tmp_path / "m.t7")
    assert landscape("surface", *CNN, "--model_file", tmp_path / "m.t7", "--surf_file", tmp_path / "s.h5") == 3
    err = capsys.readouterr().err
    assert "missing: features.1.running_var" in err and "num_batches_tracked" not in err
    assert not (tmp_path / "s.h5").exists()


def test_checkpoint_with_python_objects_needs_allow_pickle(tmp_path, capsys):
    state = trained_cnn().state_dict()
    torch.save({"state_dict": state, "args": argparse.Namespace(lr=0.1)}, tmp_path / "full.t7")
    assert landscape("surface", *CNN, "--model_file", tmp_path / "full.t7", "--surf_file", tmp_path / "s.h5") == 3
    assert "--allow_pickle" in capsys.readouterr().err
    assert not (tmp_path / "s.h5").exists()
    assert (
        landscape(
            "surface",
            *CNN,
            "--model_file",
            tmp_path / "full.t7",
            "--allow_pickle",
            "--quiet",
            "--surf_file",
            tmp_path / "s.h5",
        )
        == 0
    )
    assert read_surface(str(tmp_path / "s.h5")).attrs["origin_sha256"] == sha256_tensors(state)


@pytest.mark.parametrize("prefix", ["module.", "_orig_mod.", "module._orig_mod."])
def test_wrapped_checkpoint_keys_are_unwrapped(tmp_path, prefix):
    state = trained_cnn().state_dict()
    torch.save({"model": {prefix + k: v for k, v in state.items()}}, tmp_path / "w.pt")
    got = read_state_dict(str(tmp_path / "w.pt"))
    assert list(got) == list(state) and all(torch.equal(got[k], state[k]) for k in state)


def test_what_a_training_checkpoint_was_trained_on(tmp_path):
    meta = {"identity": {"model": "mnist1d_mlp", "dataset": "mnist1d", "num_classes": 10}}
    path = save_weights(str(tmp_path), "final.pt", build_model("mnist1d_mlp").state_dict(), meta)
    assert trained_on(path) == {"model": "mnist1d_mlp", "dataset": "mnist1d", "num_classes": 10}
    plain = tmp_path / "plain.pt"
    torch.save(build_model("mnist1d_mlp").state_dict(), plain)
    (tmp_path / "text.pt").write_text("not a checkpoint")
    assert trained_on(str(plain)) == trained_on(str(tmp_path / "text.pt")) == trained_on(None) == {}


def test_the_model_and_data_a_checkpoint_records_fill_what_is_not_given_and_a_mismatch_names_both(tmp_path, cli):
    meta = {"identity": {"model": "mnist1d_mlp", "dataset": "mnist1d_400", "num_classes": 10}}
    path = save_weights(str(tmp_path), "final.pt", build_model("mnist1d_mlp").state_dict(), meta)
    filled = with_recorded({"model_file": path, "model": None, "dataset": None, "x": "-1:1:3"})
    assert filled == {
        "model_file": path,
        "model": "mnist1d_mlp",
        "dataset": "mnist1d_400",
        "num_classes": 10,
        "x": "-1:1:3",
    }
    assert with_recorded({"model_file": path, "dataset": "mnist1d"})["dataset"] == "mnist1d"  # given: kept
    with pytest.raises(
        ConfigError, match=r"model=digits_mlp: expected mnist1d_mlp, the model .*final.pt was trained as"
    ):
        with_recorded({"model_file": path, "model": "digits_mlp"})
    assert with_recorded({"model_file": None, "model": "digits_mlp"}) == {"model_file": None, "model": "digits_mlp"}
    # through the commands: no --model needed for a landscape train checkpoint; a wrong one named
    surface = cli("surface", ["--model_file", path, "--x=-1:1:3", "--train_subset", "40", "--no_test", "--threads", "1",
                              "--quiet", "--surf_file", str(tmp_path / "s.h5")])  # fmt: skip
    assert surface.returncode == 0, surface.stderr
    assert read_surface(str(tmp_path / "s.h5")).attrs["model"] == "mnist1d_mlp"
    wrong = cli("curvature", ["--model", "digits_mlp", "--model_file", path, "--out", str(tmp_path / "c.json")])
    assert wrong.returncode == 2 and "expected mnist1d_mlp, the model" in wrong.stderr
    plain = tmp_path / "plain.pt"
    torch.save(build_model("mnist1d_mlp").state_dict(), plain)
    none = cli("rescale", ["--model_file", str(plain), "--alpha", "2", "--out", str(tmp_path / "r.pt")])
    assert none.returncode == 2 and "--model" in none.stderr and "records no model" in none.stderr


@pytest.mark.parametrize("command", ["surface", "curvature", "rescale"])
def test_a_missing_checkpoint_is_named_not_mistaken_for_a_missing_model(tmp_path, cli, command):
    # with no --model, a --model_file that is not there (or is a folder) is what the message names
    extra = {"surface": [], "curvature": ["--out", str(tmp_path / "c.json")], "rescale": ["--alpha", "2", "--out",
             str(tmp_path / "r.pt")]}[command]  # fmt: skip
    for path, said in ((tmp_path / "none.pt", "does not exist"), (tmp_path, "is a directory, not a regular file")):
        done = cli(command, ["--model_file", str(path), *extra])
        assert done.returncode == 3 and done.stderr == f"landscape {command}: error: --model_file {path} {said}\n"
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "r.pt").exists()
