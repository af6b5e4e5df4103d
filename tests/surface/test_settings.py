"""The evaluator's ``auto`` settings on a small CNN: kept where given, taken from the latest run a surface
file records on the same kind of device, measured otherwise; an evaluator on a prefix of the data is the
evaluator of that prefix; a kernel that fails at its first call is named as the cause."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from landscape import directions as dirs
from landscape.data import Data, DataConfig
from landscape.data.samples import Samples
from landscape.errors import EvaluationError
from landscape.grid import Grid
from landscape.io import surface_file
from landscape.models import DigitsCNN, ModelConfig
from landscape.parallel.comm import SerialComm
from landscape.surface.config import RunConfig, SurfaceJob
from landscape.surface.evaluation import EvaluationConfig, Evaluator
from landscape.surface.inputs import Loaded
from landscape.surface.settings import compile_seconds, evaluator, resolve

pytestmark = pytest.mark.usefixtures("one_thread")
REUSED = "per pass (as the surface file's latest run records)"


@pytest.fixture(scope="module")
def case():
    torch.manual_seed(0)
    model = DigitsCNN().eval()
    g = torch.Generator().manual_seed(1)
    data = Data("digits", Samples(torch.rand(40, 1, 8, 8, generator=g), torch.randint(0, 10, (40,), generator=g)), None)
    origin = dirs.origin_tensors(model, "weights")
    dx = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(2))
    return Loaded(data, model), dirs.Directions(dx, None, (dirs.AxisInfo("random"),), "weights", seed=2)


def job(path, **evaluation) -> SurfaceJob:
    return SurfaceJob(
        model=ModelConfig("digits_cnn"),
        grid=Grid.parse("-1:1:5"),
        run=RunConfig(surf_file=str(path)),
        evaluation=EvaluationConfig(**evaluation),
    )


def recorded(path, *runs):
    surface_file.create(str(path), np.linspace(-1.0, 1.0, 5), None, {"train_loss": {}}, {})
    for fields in runs:
        surface_file.append_run(str(path), "start", fields)


def test_settings_given_in_full_are_kept_without_measuring_or_reading_anything(case, tmp_path):
    given = job(tmp_path / "s.h5", kernel="compiled", batch_size=8, points_per_pass=2)
    assert resolve(given, *case, None, "cpu", comm=None) == (given.evaluation, "")  # no communicator needed


def test_auto_settings_come_from_the_latest_run_that_recorded_them_on_this_kind_of_device(case, tmp_path):
    path = tmp_path / "s.h5"
    recorded(
        path,
        {"kernel": "reference", "batch_size": 32, "points_per_pass": 1, "device": "cpu"},
        {"kernel": "reference", "batch_size": 7, "points_per_pass": 2, "device": "cpu"},
        {"host": "node7"},
    )  # the newest run recorded no settings: the one before counts
    cfg, said = resolve(job(path), *case, None, "cpu", SerialComm())
    assert (cfg.kernel, cfg.batch_size, cfg.points_per_pass) == ("reference", 7, 2)
    assert said == f"kernel reference, batch 7, 2 point(s) {REUSED}"
    cfg, _ = resolve(job(path, batch_size=16), *case, None, "cpu", SerialComm())
    assert (cfg.kernel, cfg.batch_size, cfg.points_per_pass) == ("reference", 16, 2)  # a given value wins


def test_settings_recorded_on_another_kind_of_device_are_measured_again(case, tmp_path):
    path = tmp_path / "s.h5"
    recorded(path, {"kernel": "reference", "batch_size": 7, "points_per_pass": 2, "device": "cuda:0"})
    cfg, said = resolve(job(path, kernel="reference", batch_size=16), *case, None, "cpu", SerialComm())
    assert (cfg.kernel, cfg.batch_size) == ("reference", 16) and cfg.resolved and REUSED not in said


def test_an_evaluator_on_a_prefix_of_the_data_is_that_of_the_prefix(case, tmp_path):
    loaded, d = case
    cfg = EvaluationConfig(kernel="reference", batch_size=16, points_per_pass=1)
    ev = evaluator(job(tmp_path / "s.h5"), loaded, d, None, "cpu", cfg, samples=12)
    train = loaded.data.train
    direct = Evaluator(
        loaded.model,
        dirs.origin_tensors(loaded.model, "weights"),
        d.x,
        None,
        {"train": Samples(train.inputs[:12], train.targets[:12])},
        "crossentropy",
        cfg,
    )
    points = np.array([[0.0, 0.0], [0.5, 0.0]])
    assert np.array_equal(ev.evaluate(points), direct.evaluate(points)) and ev.names == ["train_loss", "train_acc"]
    subset = replace(job(tmp_path / "s.h5"), data=DataConfig(train_subset=40))  # a sample: the loss gets its error
    assert "train_loss_se" in evaluator(subset, loaded, d, None, "cpu", cfg).names


def test_compiling_evaluates_the_centre_in_a_full_pass_and_in_a_pass_of_one():
    passes = []
    ev = SimpleNamespace(points_per_pass=3, evaluate=lambda points: passes.append(points.tolist()))
    assert compile_seconds(ev) >= 0 and passes == [[[0.0, 0.0]] * 3, [[0.0, 0.0]]]

    def fails(points):
        raise EvaluationError("the compiler ran out of memory")

    with pytest.raises(
        EvaluationError, match="^kernel compiled: the compiler ran out of memory; choose another kernel$"
    ):
        compile_seconds(SimpleNamespace(points_per_pass=1, evaluate=fails))
