"""The issue's acceptance run: ResNet-56 from a reference-style checkpoint on a CIFAR-10 folder, under MPI,
train and test surfaces, then the same on a reference-format direction file."""

import h5py
import numpy as np
import pytest
import torch
from test_cifar import make_cifar10

from landscape.io.direction_file import read as read_directions
from landscape.io.surface_file import read as read_surface
from landscape.models import build_model
from landscape.provenance import sha256_tensors

from conftest import run


@pytest.mark.mpi
def test_resnet56_on_a_cifar10_folder_under_mpi(tmp_path):
    make_cifar10(tmp_path / "data")
    torch.manual_seed(1)  # not the initial weights landscape itself would draw (seed 0)
    model = build_model("resnet56")
    torch.save(
        {"state_dict": {f"module.{k}": v for k, v in model.state_dict().items()}, "epoch": 300, "acc": 93.1},
        tmp_path / "model_300.t7",
    )  # as the reference code saves a DataParallel model
    common = [
        "--model",
        "resnet56",
        "--model_file",
        str(tmp_path / "model_300.t7"),
        "--dataset",
        "cifar10",
        "--datapath",
        str(tmp_path / "data"),
        "--x=-1:1:3",
        "--y=-1:1:3",
        "--xnorm",
        "filter",
        "--xignore",
        "biasbn",
        "--ynorm",
        "filter",
        "--yignore",
        "biasbn",
        "--threads",
        "1",
    ]
    proc = run("plot_surface", [*common, "--surf_file", str(tmp_path / "r56.h5")], ranks=2, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = read_surface(str(tmp_path / "r56.h5"))
    assert s.done.all() and set(s.values) == {"train_loss", "train_acc", "test_loss", "test_acc"}
    assert s.attrs["dataset"] == "cifar10" and s.run["ranks"] == 2
    assert s.attrs["origin_sha256"] == sha256_tensors(model.state_dict())  # the checkpoint's weights, unwrapped

    # the same directions written as the reference code does: tensors "0".."n-1" in parameter order
    d = read_directions(str(tmp_path / "r56.directions.h5"))
    axes = [{k: v.numpy() for k, v in d.x.items()}, {k: v.numpy() for k, v in d.y.items()}]
    with h5py.File(tmp_path / "ref_dirs.h5", "w") as f:
        for group, axis in zip(("xdirection", "ydirection"), axes):
            g = f.create_group(group)
            for i, (name, _) in enumerate(model.named_parameters()):
                g.create_dataset(str(i), data=axis[name])
    proc = run(
        "plot_surface",
        [*common, "--dir_file", str(tmp_path / "ref_dirs.h5"), "--surf_file", str(tmp_path / "r56_ref.h5")],
        ranks=2,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = read_surface(str(tmp_path / "r56_ref.h5"))
    assert all(np.array_equal(s.values[q], r.values[q]) for q in s.values)
