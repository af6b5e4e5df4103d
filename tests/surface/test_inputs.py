"""A surface job's inputs on a small MLP: the directions drawn by rank 0 alone, written once and read back
as drawn; the tensors they move refused when there are none or they are not finite; the fingerprints
of model and data; and an existing file that is not HDF5 refused before anything is written."""

import os

import pytest
import torch
from torch import nn

from landscape import directions as dirs
from landscape.data import Data
from landscape.data.samples import Samples
from landscape.errors import InputError
from landscape.grid import Grid
from landscape.models import ModelConfig
from landscape.surface.config import RunConfig, SurfaceJob
from landscape.surface.direction_set import DirectionConfig
from landscape.surface.inputs import Loaded, check_outputs, draw_directions, fingerprints, origin_of, read_directions


def job(tmp_path, **directions) -> SurfaceJob:
    return SurfaceJob(
        model=ModelConfig("digits_mlp"),
        grid=Grid.parse("-1:1:3", "-1:1:3"),
        directions=DirectionConfig(**directions),
        run=RunConfig(surf_file=str(tmp_path / "s.h5")),
    )


def loaded(seed=0) -> Loaded:
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(1)
    data = Data("digits", Samples(torch.rand(12, 5, generator=g), torch.randint(0, 3, (12,), generator=g)), None)
    return Loaded(data, nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3)))


def test_rank_0_draws_the_seeded_directions_once_and_every_rank_reads_them_back_as_drawn(tmp_path):
    j, said = job(tmp_path, seed=5, xnorm="filter", xignore="biasbn"), []
    draw_directions(j, loaded(), 1, said.append)
    assert not os.path.exists(j.dir_file) and said == []  # other ranks never draw
    draw_directions(j, loaded(), 0, said.append)
    assert said == [f"wrote directions to {j.dir_file}"]
    with open(j.dir_file, "rb") as f:
        written = f.read()
    draw_directions(j, loaded(seed=9), 0, said.append)  # other weights, but the file exists: kept as it is
    with open(j.dir_file, "rb") as f:
        assert f.read() == written and len(said) == 1
    model = loaded().model
    d = read_directions(j, model)
    origin = dirs.origin_tensors(model, "weights")
    g = torch.Generator().manual_seed(5)
    x = dirs.random_direction(origin, "filter", "biasbn", g)
    assert sorted(d.x) == ["0.bias", "0.weight", "2.bias", "2.weight"] and d.seed == 5 and d.y is not None
    assert all(torch.equal(d.x[name], x[name]) for name in x)
    assert torch.count_nonzero(d.x["0.bias"]) == 0  # biasbn: 1-D tensors stay put


def test_tensors_to_move_must_exist_and_be_finite(tmp_path):
    with pytest.raises(InputError, match="model digits_mlp has no floating-point parameters .*dir_type=weights"):
        origin_of(job(tmp_path), nn.ReLU(), "weights")
    broken = loaded().model
    with torch.no_grad():
        broken[2].weight[0, 0] = float("nan")
    with pytest.raises(InputError, match=r"model digits_mlp holds NaN or inf in 1 tensor \(2.weight\)"):
        origin_of(job(tmp_path), broken, "weights")


def test_the_fingerprints_follow_the_exact_weights_and_samples():
    a, b = loaded(), loaded()
    assert fingerprints(a) == fingerprints(b) and fingerprints(a)["test"] == ""  # no test set: no print
    with torch.no_grad():
        b.model[0].bias[0] += 1e-7
    b.data.train.targets[0] += 1
    changed = fingerprints(b)
    assert changed["origin"] != fingerprints(a)["origin"] and changed["train"] != fingerprints(a)["train"]


def test_an_existing_file_that_is_not_hdf5_is_refused_and_left_untouched(tmp_path):
    (tmp_path / "s.h5").write_bytes(b"not a surface")
    with pytest.raises(InputError, match=r"surf_file=.*s\.h5 exists and is .*expected a surface file to resume"):
        check_outputs(job(tmp_path))
    assert (tmp_path / "s.h5").read_bytes() == b"not a surface" and not os.path.exists(job(tmp_path).dir_file)
