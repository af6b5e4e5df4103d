"""--train_subset (with the standard error of the loss), --data_split/--split_idx, --loss_name callables."""

import math

import numpy as np
import pytest
import torch

from landscape.cli.surface import main
from landscape.data import load_named
from landscape.data.samples import chunk
from landscape.data.samples import subset as train_subset
from landscape.io.surface_file import read as read_surface
from landscape.provenance import sha256_tensors

from conftest import landscape

MLP = ["--model", "digits_mlp", "--x=-1:1:3", "--no_test", "--quiet"]


def test_train_subset_records_its_size_and_the_standard_error(tmp_path):
    assert main([*MLP, "--train_subset", "200", "--surf_file", str(tmp_path / "s.h5")]) == 0
    s = read_surface(str(tmp_path / "s.h5"))
    assert s.attrs["train_size"] == 200 and s.attrs["train_subset"] == 200
    assert set(s.values) == {"train_loss", "train_loss_se", "train_acc"}
    # the standard error by hand at the centre: the model at (0, 0) on the same 200 samples
    from landscape.models import build_model

    torch.manual_seed(0)
    model = build_model("digits_mlp").eval()
    sub = train_subset(load_named("digits").train, 200, 0)
    with torch.no_grad():
        losses = torch.nn.functional.cross_entropy(model(sub.inputs), sub.targets, reduction="none").double()
    assert math.isclose(s.values["train_loss"][1], float(losses.mean()), rel_tol=1e-6)
    assert math.isclose(s.values["train_loss_se"][1], float(losses.std() / math.sqrt(200)), rel_tol=1e-5)


def test_data_split_evaluates_the_chunk_asked_for(tmp_path):
    assert main([*MLP, "--data_split", "4", "--split_idx", "3", "--surf_file", str(tmp_path / "s.h5")]) == 0
    s = read_surface(str(tmp_path / "s.h5"))
    c = chunk(load_named("digits").train, 4, 3)
    assert s.attrs["train_size"] == 1437 // 4 and s.attrs["split_idx"] == 3
    assert s.attrs["train_sha256"] == sha256_tensors({"x": c.inputs, "y": c.targets})
    from landscape.models import build_model

    torch.manual_seed(0)
    model = build_model("digits_mlp").eval()
    with torch.no_grad():
        expected = torch.nn.functional.cross_entropy(model(c.inputs), c.targets).item()
    assert math.isclose(s.values["train_loss"][1], expected, rel_tol=1e-6)


@pytest.mark.parametrize(
    "argv, code, words",
    [
        (["--train_subset", "0"], 2, "--train_subset=0: expected a positive number of samples"),
        (["--data_split", "3", "--split_idx", "3"], 2, "--split_idx=3: expected a whole number in 0..2"),
        (["--dataset", "cifar10"], 2, "--datapath=None: expected the folder holding the cifar10 files"),
        (["--dataset", "cifar10", "--datapath", "{tmp}/nowhere"], 3, "CIFAR-10 folder {tmp}/nowhere not found"),
    ],
)
def test_bad_data_options(tmp_path, capsys, argv, code, words):
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert landscape("surface", *MLP, *argv, "--surf_file", tmp_path / "s.h5") == code
    err = capsys.readouterr().err.strip()
    assert words.format(tmp=tmp_path) in err and len(err.splitlines()) == 1, err


def halved_cross_entropy(output, targets):
    return 0.5 * torch.nn.functional.cross_entropy(output, targets)


def test_loss_callable_is_weighted_by_batch(tmp_path, plugins):
    here = __file__
    assert main([*MLP, "--surf_file", str(tmp_path / "a.h5"), "--dir_file", str(tmp_path / "d.h5")]) == 0
    assert (
        main(
            [
                *MLP,
                "--loss_name",
                f"{here}:halved_cross_entropy",
                "--batch_size",
                "100",
                "--surf_file",
                str(tmp_path / "b.h5"),
                "--dir_file",
                str(tmp_path / "d.h5"),
            ]
        )
        == 0
    )
    a, b = read_surface(str(tmp_path / "a.h5")), read_surface(str(tmp_path / "b.h5"))
    assert np.allclose(b.values["train_loss"], 0.5 * a.values["train_loss"], rtol=1e-6)
    assert "test_data_options.py:halved_cross_entropy#" in b.attrs["loss_name"]
