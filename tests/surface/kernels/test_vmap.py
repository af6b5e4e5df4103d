"""The vmap kernel: K points through one forward per batch, the values of one point at a time."""

import numpy as np
import pytest
import torch

from landscape.data.samples import Samples
from landscape.errors import EvaluationError
from landscape.surface.evaluation import EvaluationConfig, Evaluator

from conftest import digits_kernel

pytestmark = pytest.mark.usefixtures("one_thread")
POINTS = np.array([[0.0, 0.0], [0.4, -0.3], [1.0, 1.0], [-2.0, 0.5]])


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-6), ("float64", 1e-12)])
def test_k_points_through_vmap_agree_with_one_point_at_a_time(dtype, rtol):
    got = digits_kernel(EvaluationConfig(kernel="vmap", batch_size=700, points_per_pass=3, dtype=dtype)).evaluate(
        POINTS
    )
    expected = digits_kernel(EvaluationConfig(batch_size=700, dtype=dtype)).evaluate(POINTS)
    assert np.allclose(got, expected, rtol=rtol, atol=0) and np.array_equal(got[:, [1, 3]], expected[:, [1, 3]])


class DataDependent(torch.nn.Module):
    """A branch on a value: vmap cannot run it."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4)

    def forward(self, x):
        out = self.lin(x)
        return out if out.sum() > 0 else -out


def test_a_model_vmap_cannot_run_is_reported_by_the_probe_before_any_point():
    model = DataDependent()
    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    data = {"train": Samples(torch.randn(8, 3), torch.randint(0, 4, (8,)))}
    ev = Evaluator(
        model,
        origin,
        origin,
        None,
        data,
        "crossentropy",
        EvaluationConfig(kernel="vmap", batch_size=8, points_per_pass=2),
    )
    with pytest.raises(EvaluationError, match="with kernel vmap"):
        ev.probe()
    reference = Evaluator(
        model,
        origin,
        origin,
        None,
        data,
        "crossentropy",
        EvaluationConfig(kernel="reference", batch_size=8, points_per_pass=2),
    )
    reference.probe()
    assert np.isfinite(reference.evaluate(np.zeros((2, 2)))).all()
