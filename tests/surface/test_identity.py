"""A surface's identity, field for field, on a small CNN and made-up digits: what the values are values
of (model, data, directions, grid, loss, precision, BatchNorm policy, curvature) and nothing of how they
were computed (kernel, batch size, points per pass), which ``how`` records instead."""

import pytest
import torch

from landscape import directions as dirs
from landscape.data import Data, DataConfig
from landscape.data.samples import Samples
from landscape.grid import Grid
from landscape.models import DigitsCNN, ModelConfig
from landscape.surface.config import SurfaceJob
from landscape.surface.evaluation import EvaluationConfig, Evaluator
from landscape.surface.identity import how, identity
from landscape.surface.inputs import Loaded, fingerprints

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def case():
    torch.manual_seed(0)
    model = DigitsCNN().eval()
    g = torch.Generator().manual_seed(1)
    data = Data(
        "digits",
        Samples(torch.rand(50, 1, 8, 8, generator=g), torch.randint(0, 10, (50,), generator=g)),
        Samples(torch.rand(20, 1, 8, 8, generator=g), torch.randint(0, 10, (20,), generator=g)),
    )
    origin = dirs.origin_tensors(model, "weights")

    def draw(seed):
        return dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(seed))

    axes = tuple(dirs.AxisInfo("random", "filter", "biasbn", seed) for seed in (2, 3))
    loaded = Loaded(data, model)
    loaded.prints = fingerprints(loaded)
    return (
        model,
        data,
        origin,
        loaded,
        {
            1: dirs.Directions(draw(2), None, axes[:1], "weights", seed=7),
            2: dirs.Directions(draw(2), draw(3), axes, "weights", seed=7),
        },
    )


def evaluator(case, ndim=1, **cfg):
    model, data, origin, _, d = case
    cfg = EvaluationConfig(**{"kernel": "reference", "batch_size": 16, "points_per_pass": 1, **cfg})
    bn = "recalibrate" if cfg.bn == "recalibrate" else "eval"
    return Evaluator(
        model, origin, d[ndim].x, d[ndim].y, {"train": data.train, "test": data.test}, "crossentropy", cfg, bn=bn
    )


def test_a_1d_surfaces_identity_is_exactly_these_fields(case):
    _, _, _, loaded, d = case
    job = SurfaceJob(model=ModelConfig("digits_cnn"), grid=Grid.parse("-1:1:5"))
    assert identity(job, loaded, d[1], evaluator(case)) == {
        "grid_x": "-1.0:1.0:5",  # exact: repr of the bounds
        "grid_y": "",
        "model": "digits_cnn",
        "origin_sha256": loaded.prints["origin"],
        "model_file_sha256": "",
        "dataset": "digits",
        "train_size": 50,
        "raw_data": False,
        "data_split": 1,
        "split_idx": 0,
        "train_subset": -1,
        "subset_seed": 0,
        "train_sha256": loaded.prints["train"],
        "test_size": 20,
        "test_sha256": loaded.prints["test"],
        "loss_name": "crossentropy",
        "dtype": "float32",
        "bn": "eval",
        "bn_batches": 0,
        "bn_batch_size": 0,
        "dir_type": "weights",
        "dir_seed": 7,
        "same_dir": False,
        "directions_sha256": d[1].digest,
        "xdirection": "random",
        "xnorm": "filter",
        "xignore": "biasbn",
    }


def test_how_the_points_are_computed_changes_how_and_never_the_identity(case):
    _, _, _, loaded, d = case
    job = SurfaceJob(model=ModelConfig("digits_cnn"), grid=Grid.parse("-1:1:5"))
    one, other = evaluator(case), evaluator(case, kernel="compiled", batch_size=7, points_per_pass=3)
    assert identity(job, loaded, d[1], one) == identity(job, loaded, d[1], other)
    assert how(one) == {"kernel": "reference", "batch_size": 16, "points_per_pass": 1, "set_passes": "joined"}
    assert how(other) == {"kernel": "compiled", "batch_size": 7, "points_per_pass": 3, "set_passes": "joined"}


def test_what_the_values_depend_on_adds_its_fields_only_when_asked(case):
    _, _, _, loaded, d = case
    job = SurfaceJob(
        model=ModelConfig("digits_cnn"), grid=Grid.parse("-1:1:5", "-2:2:3"), data=DataConfig(train_subset=50)
    )
    found = identity(job, loaded, d[2], evaluator(case, ndim=2, bn="recalibrate", curvature=True, dtype="float64"))
    assert found["grid_y"] == "-2.0:2.0:3" and (found["ydirection"], found["ynorm"], found["yignore"]) == (
        "random",
        "filter",
        "biasbn",
    )
    assert (found["bn"], found["bn_batches"], found["bn_batch_size"]) == ("recalibrate", 1, 50)  # one batch of 50
    assert (found["curvature"], found["curvature_tol"], found["curvature_method"]) == (True, 1e-3, "lanczos")
    assert found["dtype"] == "float64" and found["train_subset"] == 50
    plain = identity(job, loaded, d[2], evaluator(case, ndim=2))
    assert "curvature" not in plain and "model_args" not in plain and "data_args" not in plain
