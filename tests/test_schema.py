"""The surface file read back: scales, provenance, done mask, and the row-run writer."""
import json

import h5py
import numpy as np
import pytest
import torch

from landscape import schema
from landscape.cli.plot_surface import main
from landscape.provenance import sha256_file


@pytest.fixture(scope="module")
def surface(tmp_path_factory):
    from landscape.checkpoint import save
    from landscape.models import DigitsCNN
    tmp = tmp_path_factory.mktemp("schema")
    torch.manual_seed(3)
    save(DigitsCNN(), str(tmp / "cnn.pt"))
    argv = ["--model", "digits_cnn", "--model_file", str(tmp / "cnn.pt"), "--x=-1:1:5", "--y=0:2:3",
            "--seed", "7", "--surf_file", str(tmp / "s.h5"), "--quiet"]
    assert main(argv) == 0
    return tmp


def test_coordinates_are_dimension_scales_of_every_quantity(surface):
    with h5py.File(surface / "s.h5") as f:
        assert list(f["xcoordinates"][()]) == [-1, -0.5, 0, 0.5, 1]
        assert list(f["ycoordinates"][()]) == [0, 1, 2]
        for name in ("train_loss", "train_acc", "test_loss", "test_acc", "done"):
            assert f[name].shape == (5, 3)
            assert f[name].dims[0][0].name == "/xcoordinates"
            assert f[name].dims[1][0].name == "/ycoordinates"
        assert f["train_loss"].fillvalue != f["train_loss"].fillvalue  # NaN: never computed


def test_provenance_attributes(surface):
    with h5py.File(surface / "s.h5") as f:
        a = dict(f.attrs)
    assert a["schema"] == "landscape.surface" and a["schema_version"] == 1
    assert a["model_file_sha256"] == sha256_file(str(surface / "cnn.pt"))
    assert a["dir_seed"] == 7 and a["xnorm"] == "filter" and a["xignore"] == "biasbn" and a["dir_type"] == "weights"
    assert a["dataset"] == "digits" and a["train_size"] == 1437 and a["test_size"] == 360
    assert a["ranks"] == 1 and "plot_surface" in a["command_line"]
    for package in ("landscape", "torch", "numpy", "h5py"):
        assert a[f"{package}_version"]
    runs = json.loads(a["runs"])
    assert len(runs) == 1 and runs[0]["points_computed"] == 15
    identity = json.loads(a["identity"])
    assert identity["directions_sha256"] == a["directions_sha256"]


def test_the_surface_knows_its_directions(surface):
    axes, metas, meta = schema.read_directions(str(surface / "s.directions.h5"))
    assert metas[0]["seed"] == 7 and metas[0]["norm"] == "filter"
    assert "features.0.weight" in axes[0] and "classifier.bias" in axes[1]  # keyed by parameter name
    from landscape.provenance import sha256_tensors
    digest = sha256_tensors({**{k: torch.from_numpy(v) for k, v in axes[0].items()},
                             **{f"y/{k}": torch.from_numpy(v) for k, v in axes[1].items()}})
    with h5py.File(surface / "s.h5") as f:
        assert f.attrs["directions_sha256"] == digest


def test_centre_of_the_grid_is_exactly_the_trained_model(surface):
    from landscape.data import load_data
    from landscape.losses import Loss
    from landscape.models import DigitsCNN
    from landscape.checkpoint import load_into, read_state_dict
    model = DigitsCNN()
    load_into(model, read_state_dict(str(surface / "cnn.pt")), "cnn.pt")
    model.eval()
    data = load_data("digits")
    with torch.inference_mode():
        total = sum(Loss("crossentropy").total(model(data.train.inputs[i:i + 128]), data.train.targets[i:i + 128])[0]
                    for i in range(0, len(data.train), 128))
    s = schema.read_surface(str(surface / "s.h5"))
    assert s.values["train_loss"][2, 0] == total / len(data.train)  # x = 0, y = 0


def test_any_value_is_a_result_once_done(tmp_path):
    path = str(tmp_path / "v.h5")
    schema.create_surface(path, np.arange(4.0), np.arange(3.0), ["train_loss"], {"k": "v"})
    flat = np.array([0, 1, 2, 5, 6, 11])
    values = np.array([[0.0], [-1.0], [np.nan], [np.inf], [-np.inf], [3.5]])
    with h5py.File(path, "r+") as f:
        schema.write_values(f, flat, values, ["train_loss"])
        schema.mark_done(f, flat)
    s = schema.read_surface(path)
    assert list(np.flatnonzero(s.done)) == list(flat)
    got = s.values["train_loss"].reshape(-1)
    assert got[0] == 0 and got[1] == -1 and np.isnan(got[2]) and got[5] == np.inf and got[6] == -np.inf
    assert schema.open_existing_surface(path, ["train_loss"], {"k": "v"}).sum() == 6


@pytest.mark.parametrize("shape", [(7,), (4, 5), (1, 9), (6, 1)])
def test_row_runs_cover_each_point_once(shape):
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    flat = np.sort(rng.choice(n, size=n // 2 + 1, replace=False))
    target = np.zeros(shape)
    for index, rows in schema.row_runs(flat, shape):
        target[index] += flat[rows] + 1
    expected = np.zeros(n)
    expected[flat] = flat + 1
    assert np.array_equal(target.reshape(-1), expected)
