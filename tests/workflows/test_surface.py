"""``landscape surface`` as a function: the job its parameters describe (a network, data and a loss given
as objects from Python, the test set left out, the grid), what is refused before anything is computed,
and a 1-D surface with its figure drawn (reading a file back: tests/test_api.py; the job itself:
tests/surface)."""

import pytest
import torch

from landscape.data import GIVEN
from landscape.errors import UsageError
from landscape.workflows.surface import job_of, run


def mse(output, targets):
    return ((output - targets) ** 2).mean()


def test_objects_given_from_python_are_kept_apart_and_named_in_the_job():
    model = torch.nn.Linear(3, 1)
    train = (torch.randn(8, 3), torch.randn(8, 1))
    job, objects = job_of({"model": model, "dataset": (train, None), "loss_name": mse, "x": "-1:1:3",
                           "y": "-2:2:5"})  # fmt: skip
    assert objects["model"] is model and objects["loss"] is mse
    assert job.model.model == "api:torch.nn.modules.linear.Linear"  # recorded by its class, not its weights
    assert job.data.dataset == GIVEN and objects["data"].name == GIVEN and objects["data"].test is None
    assert torch.equal(objects["data"].train.inputs, train[0])
    assert job.grid.size == 15 and job.grid.shape == (3, 5)


def test_a_name_and_no_test_set_make_a_plain_job():
    job, objects = job_of({"model": "digits_mlp", "no_test": True, "x": "-0.5:0.5:11", "batch_size": 64})
    assert objects == {}
    assert (job.model.model, job.data.dataset, job.data.test) == ("digits_mlp", "digits", False)
    assert job.evaluation.batch_size == 64 and job.grid.size == 11
    assert job.evaluation.loss_name == "crossentropy"


def test_what_cannot_run_is_refused_before_anything_is_computed():
    with pytest.raises(UsageError, match="model: a model is needed"):
        job_of({})
    not_data = r"dataset: expected a name, package.module:factory or \(train, test\) data, got dict"
    with pytest.raises(UsageError, match=not_data):
        job_of({"model": "digits_mlp", "dataset": {"train": None}})
    with pytest.raises(UsageError, match="--vmin 2 must be smaller than --vmax 1"):  # the figure's settings too
        job_of({"model": "digits_mlp", "plot": True, "vmin": 2.0, "vmax": 1.0})
    job_of({"model": "digits_mlp", "vmin": 2.0, "vmax": 1.0})  # no figure: nothing to check


def test_a_surface_with_plot_draws_its_figure_beside_the_file(tmp_path):
    torch.manual_seed(0)
    data = (torch.randn(16, 3), torch.randn(16, 1))
    done = run({"model": torch.nn.Linear(3, 1), "dataset": (data, None), "loss_name": "mse", "x": "-1:1:3",
                "surf_file": str(tmp_path / "s.h5"), "plot": True, "quiet": True})  # fmt: skip
    assert (done.points, done.computed, done.read_back) == (3, 3, False)
    assert done.figures == [str(tmp_path / "s_1d.png")] and (tmp_path / "s_1d.png").stat().st_size > 0
    assert done.surface.values["train_loss"].shape == (3,) and done.quantities[0] == "train_loss"
    assert {"kernel", "batch_size", "points_per_pass"} <= set(done.settings)
