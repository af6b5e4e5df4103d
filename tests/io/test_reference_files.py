"""Files written by the reference code (tomgoldstein/loss-landscape): direction files with tensors
"0".."n-1" in parameter order, and surface files filled in meshgrid order with -1 for "to do"."""

import h5py
import numpy as np
import pytest
import torch

from landscape.cli.surface import main
from landscape.io.checkpoint import save
from landscape.io.direction_file import read as read_directions
from landscape.io.surface_file import read as read_surface
from landscape.models import DigitsCNN

from conftest import landscape


def write_reference_directions(path, tensors_x, tensors_y):
    with h5py.File(path, "w") as f:  # as the reference's net_plotter.write_list
        for group, tensors in (("xdirection", tensors_x), ("ydirection", tensors_y)):
            g = f.create_group(group)
            for i, t in enumerate(tensors):
                g.create_dataset(str(i), data=t.numpy())


@pytest.mark.parametrize("dir_type", ["weights", "states"])
def test_reference_direction_file_gives_the_same_surface_as_ours(tmp_path, dir_type):
    torch.manual_seed(0)
    save(DigitsCNN(), str(tmp_path / "m.pt"))
    common = [
        "--model",
        "digits_cnn",
        "--model_file",
        str(tmp_path / "m.pt"),
        "--x=-1:1:3",
        "--y=-1:1:3",
        "--dir_type",
        dir_type,
        "--no_test",
        "--quiet",
    ]
    assert main([*common, "--surf_file", str(tmp_path / "ours.h5")]) == 0
    d = read_directions(str(tmp_path / "ours.directions.h5"))
    axes = [{k: v.numpy() for k, v in d.x.items()}, {k: v.numpy() for k, v in d.y.items()}]
    model = DigitsCNN()
    order = [n for n, _ in model.named_parameters()] if dir_type == "weights" else list(model.state_dict())
    as_list = lambda axis: [torch.from_numpy(axis[n]) if n in axis else torch.zeros(()) for n in order]
    write_reference_directions(tmp_path / "ref.h5", as_list(axes[0]), as_list(axes[1]))
    # without --dir_type the count of tensors tells weights from states
    argv = [a for a in common if a not in ("--dir_type", dir_type)]
    assert main([*argv, "--dir_file", str(tmp_path / "ref.h5"), "--surf_file", str(tmp_path / "ref_surf.h5")]) == 0
    ours, theirs = read_surface(str(tmp_path / "ours.h5")), read_surface(str(tmp_path / "ref_surf.h5"))
    assert np.array_equal(ours.values["train_loss"], theirs.values["train_loss"])
    assert theirs.attrs["dir_type"] == dir_type and theirs.attrs["xdirection"] == "reference file"


def test_reference_direction_file_for_another_model(tmp_path, capsys):
    write_reference_directions(tmp_path / "ref.h5", [torch.zeros(3)], [torch.zeros(3)])
    assert (
        landscape(
            "surface",
            *[
                "--model",
                "digits_cnn",
                "--x=-1:1:3",
                "--dir_file",
                str(tmp_path / "ref.h5"),
                "--surf_file",
                str(tmp_path / "s.h5"),
            ],
        )
        == 4
    )
    assert "made for another model" in capsys.readouterr().err


def test_reference_surface_file_reads_in_our_orientation(tmp_path):
    """Non-square grid, filled as the reference does (meshgrid 'xy' order into (nx, ny)), 2 points to do."""
    x, y = np.linspace(-1, 1, 5), np.linspace(0, 2, 3)
    f = lambda a, b: 10 * a + b + 20
    losses = -np.ones((len(x), len(y)))
    xm, ym = np.meshgrid(x, y)
    flat = losses.ravel()
    for ind, (a, b) in enumerate(zip(xm.ravel(), ym.ravel())):
        if ind not in (4, 9):
            flat[ind] = f(a, b)
    with h5py.File(tmp_path / "ref_surface.h5", "w") as h:
        h["xcoordinates"], h["ycoordinates"] = x, y
        h["train_loss"] = flat.reshape(len(x), len(y))
        h["dir_file"] = "directions.h5"  # a string dataset, as the reference writes
    s = read_surface(str(tmp_path / "ref_surface.h5"))
    expected = f(x[:, None], y[None, :])
    assert s.done.sum() == 13
    assert np.array_equal(s.values["train_loss"][s.done], expected[s.done])
    assert not s.done[4, 0] and not s.done[4, 1]  # flat positions 4 and 9: (x[4], y[0]) and (x[4], y[1])
    from landscape.plotting.twod import plot_arrays

    X, Y, Z = plot_arrays(s, "train_loss")
    assert Z[2, 1] == f(X[2, 1], Y[2, 1])


def test_flags_that_define_directions_are_refused_with_a_reference_file(tmp_path, capsys):
    model = DigitsCNN()
    tensors = [torch.zeros_like(p) for p in model.parameters()]
    write_reference_directions(tmp_path / "ref.h5", tensors, tensors)
    assert (
        landscape(
            "surface",
            *[
                "--model",
                "digits_cnn",
                "--x=-1:1:3",
                "--seed",
                "4",
                "--dir_file",
                str(tmp_path / "ref.h5"),
                "--surf_file",
                str(tmp_path / "s.h5"),
            ],
        )
        == 4
    )
    assert "--seed cannot change them" in capsys.readouterr().err
