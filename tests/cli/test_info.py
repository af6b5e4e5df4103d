"""``landscape info``: what a surface or direction file holds, ours or the reference code's."""

import json

import h5py
import numpy as np
import torch

from landscape.io.checkpoint import save
from landscape.models import build_model

from conftest import landscape


def surface(tmp_path):
    torch.manual_seed(0)
    save(build_model("digits_mlp"), str(tmp_path / "m.pt"))
    assert (
        landscape(
            "surface",
            "--model",
            "digits_mlp",
            "--model_file",
            tmp_path / "m.pt",
            "--x=-1:1:5",
            "--y=-1:1:3",
            "--train_subset",
            "100",
            "--threads",
            "1",
            "--quiet",
            "--surf_file",
            tmp_path / "s.h5",
        )
        == 0
    )
    return tmp_path / "s.h5"


def test_a_surface_and_its_directions(tmp_path, capsys, one_thread):
    path = surface(tmp_path)
    with h5py.File(path, "r+") as f:  # two points back to "to do", as a job killed early leaves them
        f["done"][4, 1] = f["done"][4, 2] = 0
    assert landscape("info", path) == 0
    out = capsys.readouterr().out
    assert f"{path}: 2-D loss surface, written by landscape (schema 2)" in out
    assert "grid      x -1:1:5, y -1:1:3" in out and "13 of 15 done (86.7 %), 2 to do" in out
    assert "train_loss      nats" in out and "model=digits_mlp" in out and "train_subset=100" in out
    assert "1 rank(s) on cpu" in out and "$ landscape surface --model digits_mlp" in out

    assert landscape("info", path, "--json") == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["points"], d["done"], d["ndim"]) == (15, 13, 2)
    loss = d["quantities"]["train_loss"]
    assert loss["min"] <= loss["at_centre"] <= loss["max"] and loss["not_finite"] == 0

    assert landscape("info", tmp_path / "s.directions.h5") == 0
    out = capsys.readouterr().out
    assert "2 direction(s), written by landscape" in out and "kind random, norm filter, ignore biasbn" in out
    assert "cosine between x and y" in out


def test_files_of_the_reference_code(tmp_path, capsys):
    with h5py.File(tmp_path / "ref.h5", "w") as h:  # surface: meshgrid order, -1 for to do
        h["xcoordinates"] = np.linspace(-1, 1, 3)
        h["train_loss"] = np.array([1.0, 0.5, -1.0])
    with h5py.File(tmp_path / "dirs.h5", "w") as h:  # directions: tensors "0".."n-1"
        for group in ("xdirection", "ydirection"):
            h.create_group(group).create_dataset("0", data=np.ones(4))
    assert landscape("info", tmp_path / "ref.h5", tmp_path / "dirs.h5") == 0
    out = capsys.readouterr().out
    assert "1-D loss surface, written by the reference code" in out and "2 of 3 done" in out
    assert "2 direction(s), written by the reference code" in out and "1 tensors, 4 numbers, length 2" in out


def test_not_a_landscape_file(tmp_path, capsys):
    with h5py.File(tmp_path / "other.h5", "w") as h:
        h["weights"] = np.zeros(3)
    (tmp_path / "text.h5").write_text("not hdf5")
    assert landscape("info", tmp_path / "other.h5") == 3
    assert "neither a surface nor a direction file" in capsys.readouterr().err
    assert landscape("info", tmp_path / "text.h5") == 3
    assert "text.h5 is not an HDF5 file" in capsys.readouterr().err
    assert landscape("info", tmp_path / "missing.h5") == 3
    assert "does not exist" in capsys.readouterr().err
