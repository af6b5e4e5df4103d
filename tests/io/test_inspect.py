"""``describe``: what a surface or direction file holds, as plain data, on small files written here with
known values (the printed form, from a real job, is tested with ``landscape info``: tests/cli/test_info.py)."""

import math

import h5py
import numpy as np
import pytest
import torch

from landscape.directions import AxisInfo, Directions, Trajectory
from landscape.io import direction_file, runs, surface_file
from landscape.io.inspect import describe

COLUMNS = {"train_loss": {"long_name": "loss", "units": "nats"}, "train_acc": {"long_name": "accuracy", "units": "%"}}


def test_a_surface_gives_its_grid_progress_and_the_ranges_of_the_points_done(tmp_path):
    path = str(tmp_path / "s.h5")
    surface_file.create(path, np.array([-1.0, 0.0, 1.0]), np.array([0.0, 2.0]), COLUMNS, {"model": "m", "seed": 1})
    flat = np.array([0, 1, 2, 3, 4])  # point 5, (x[2], y[1]), still to do
    values = np.array([[3.0, 10], [-1.0, 20], [0.5, 30], [np.inf, 40], [np.nan, 50]])
    with h5py.File(path, "r+") as f:
        surface_file.write_values(f, flat, values, ["train_loss", "train_acc"])
        surface_file.mark_done(f, flat)
        runs.append(f, "start", {"ranks": 2})
    assert describe(path) == {
        "kind": "surface",
        "path": path,
        "written_by": "landscape",
        "schema_version": 2,
        "ndim": 2,
        "x": {"points": 3, "min": -1.0, "max": 1.0, "holds_zero": True},
        "y": {"points": 2, "min": 0.0, "max": 2.0, "holds_zero": True},
        "points": 6,
        "done": 5,
        "quantities": {  # the centre (x[1], y[0]) is point 2
            "train_loss": {"units": "nats", "min": -1.0, "max": 3.0, "not_finite": 2, "at_centre": 0.5},
            "train_acc": {"units": "%", "min": 10.0, "max": 50.0, "not_finite": 0, "at_centre": 30.0},
        },
        "identity": {"model": "m", "seed": 1},
        "runs": [{"run": 1, "ranks": 2}],
    }


def test_a_surface_with_nothing_done_has_no_range_and_no_value_at_its_centre(tmp_path):
    path = str(tmp_path / "s.h5")
    surface_file.create(path, np.array([-0.5, 0.0, 0.5]), None, COLUMNS, {"model": "m"})
    with h5py.File(path, "r+") as f:
        f.attrs["identity"] = "{not json"  # an unreadable identity is shown as none, not an error
    d = describe(path)
    assert (d["ndim"], d["y"], d["points"], d["done"], d["identity"]) == (1, None, 3, 0, {})
    loss = d["quantities"]["train_loss"]
    assert math.isnan(loss["min"]) and math.isnan(loss["max"]) and loss["not_finite"] == 0
    assert "at_centre" not in loss


def test_a_reference_surface_has_no_schema_and_its_minus_ones_are_to_do(tmp_path):
    path = str(tmp_path / "ref.h5")
    with h5py.File(path, "w") as f:
        f["xcoordinates"] = np.array([-1.0, 0.0, 1.0])
        f["train_loss"] = np.array([2.0, 0.25, -1.0])
    d = describe(path)
    assert (d["written_by"], d["schema_version"], d["done"]) == ("the reference code", None, 2)
    assert d["quantities"]["train_loss"] == {"units": "", "min": 0.25, "max": 2.0, "not_finite": 0, "at_centre": 0.25}


def test_directions_give_their_lengths_cosine_settings_and_trajectory(tmp_path):
    path = str(tmp_path / "d.h5")
    x = {"a.weight": torch.tensor([3.0, 0.0], dtype=torch.float64), "a.bias": torch.tensor([4.0], dtype=torch.float64)}
    y = {"a.weight": torch.tensor([4.0, 0.0], dtype=torch.float64), "a.bias": torch.tensor([3.0], dtype=torch.float64)}
    path_ = Trajectory(
        ("e1.pt", "e2.pt", "e3.pt"), (1, 2, 3), np.array([[0, 0], [1, -1], [2, 0.5]]), (0.9, 0.05), (0.6, 0.2)
    )
    infos = (AxisInfo("PC1 of 3 checkpoints", "filter", "biasbn", 5), AxisInfo("PC2 of 3 checkpoints"))
    direction_file.write(path, Directions(x, y, infos, "weights", 5, False, "cd" * 32, "m", trajectory=path_))
    d = describe(path)
    assert d["axes"] == [
        {"name": "xdirection", "tensors": 2, "elements": 3, "length": 5.0,
         "kind": "PC1 of 3 checkpoints", "norm": "filter", "ignore": "biasbn", "seed": 5},
        {"name": "ydirection", "tensors": 2, "elements": 3, "length": 5.0,
         "kind": "PC2 of 3 checkpoints", "norm": "none", "ignore": "none"},
    ]  # fmt: skip
    assert d["cosine_xy"] == pytest.approx(24 / 25, abs=1e-15)  # (3·4 + 4·3) / (5·5)
    assert (d["written_by"], d["dir_type"], d["seed"], d["model"]) == ("landscape", "weights", 5, "m")
    assert d["trajectory"] == {
        "checkpoints": 3,
        "first": "e1.pt",
        "last": "e3.pt",
        "epochs": [1, 3],
        "explained": [0.9, 0.05],
        "random_walk": [0.6, 0.2],
        "x_span": [0.0, 2.0],
        "y_span": [-1.0, 0.5],
    }


def test_reference_directions_of_different_sizes_have_no_cosine(tmp_path):
    path = str(tmp_path / "dirs.h5")
    with h5py.File(path, "w") as f:
        f.create_group("xdirection").create_dataset("0", data=np.full(4, 0.5))
        f.create_group("ydirection").create_dataset("0", data=np.ones(3))
    d = describe(path)
    assert d["written_by"] == "the reference code" and "dir_type" not in d
    assert [(a["elements"], a["length"]) for a in d["axes"]] == [(4, 1.0), (3, math.sqrt(3))]
    assert math.isnan(d["cosine_xy"])
