"""Direction files: written once, read back whole and checked against their digest."""

import h5py
import pytest
import torch

from landscape.directions import AxisInfo, Directions
from landscape.errors import InputError
from landscape.io import direction_file

from conftest import landscape

CNN = ["--model", "digits_cnn", "--x=-1:1:5", "--no_test", "--threads", "1", "--quiet"]


def test_directions_round_trip_with_their_settings(tmp_path):
    g = torch.Generator().manual_seed(0)
    x = {"a.weight": torch.randn(3, 2, generator=g, dtype=torch.float64), "a.bias": torch.zeros(3, dtype=torch.float64)}
    y = {k: 2 * v for k, v in x.items()}
    d = Directions(
        x,
        y,
        (AxisInfo("random", "filter", "biasbn", 5), AxisInfo("target", target_file="m.pt", target_sha256="ab" * 32)),
        "weights",
        5,
        False,
        "cd" * 32,
        "digits_cnn",
    )
    direction_file.write(str(tmp_path / "d.h5"), d)
    back = direction_file.read(str(tmp_path / "d.h5"))
    assert back.axes == d.axes and back.digest == d.digest and back.seed == 5 and back.model == "digits_cnn"
    assert all(torch.equal(back.x[k], x[k]) and torch.equal(back.y[k], y[k]) for k in x)
    with pytest.raises(InputError, match="appeared while this one was being written"):
        direction_file.write(str(tmp_path / "d.h5"), d)  # never replaces a file


def test_damaged_tensor_bytes_are_refused_instead_of_used(tmp_path, capsys):
    assert landscape("surface", *CNN, "--surf_file", tmp_path / "a.h5") == 0
    path = tmp_path / "a.directions.h5"
    with h5py.File(path, "r") as f:
        dataset = f["xdirection/features.0.weight"]
        offset, size = dataset.id.get_offset(), dataset.id.get_storage_size()
    raw = bytearray(path.read_bytes())
    raw[offset : offset + size // 2] = b"\xff" * (size // 2)  # garbage (NaN) in half of the tensor
    path.write_bytes(bytes(raw))
    before = path.read_bytes()
    assert landscape("surface", *CNN, "--dir_file", path, "--surf_file", tmp_path / "b.h5") == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is damaged: its tensors do not match the digest" in err[0], err
    assert not (tmp_path / "b.h5").exists()
    assert path.read_bytes() == before  # left as it was
