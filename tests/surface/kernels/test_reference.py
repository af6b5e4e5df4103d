"""The reference kernel: every point through the model's own forward, the sums per set exact."""

import numpy as np
import pytest
import torch
from torch import nn

from landscape.losses import Loss
from landscape.surface.kernels import Problem, make

pytestmark = pytest.mark.usefixtures("one_thread")


def sets(train: int = 37, test: int = 11, seed: int = 0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return {
        "train": (torch.randn(train, 6, generator=g, dtype=dtype), torch.randint(0, 4, (train,), generator=g)),
        "test": (torch.randn(test, 6, generator=g, dtype=dtype), torch.randint(0, 4, (test,), generator=g)),
    }


def by_hand(model, data):
    """Per set: loss sum, squared-loss sum, correct predictions, in float64 from whole-set forwards."""
    out = []
    with torch.no_grad():
        for x, y in data.values():
            logits = model(x)
            losses = nn.functional.cross_entropy(logits, y, reduction="none").double()
            out.append([losses.sum().item(), (losses**2).sum().item(), (logits.argmax(1) == y).sum().item()])
    return np.array(out)


def at_origin(model, data, loss="crossentropy", dtype=torch.float32):
    """A problem whose plane is the model's weights and one zero direction: (0, 0) is the model."""
    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    zero = {n: torch.zeros_like(v) for n, v in origin.items()}
    return Problem.of(model, origin, [zero], data, Loss(loss), dtype, torch.device("cpu"), True)


@pytest.mark.parametrize("batch", [5, 16, 37, 48, 1000])
def test_joined_sets_give_each_set_its_own_sums_whatever_the_batches_straddle(batch):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4)).eval()
    data = sets()
    p = at_origin(model, data)
    assert p.sets.joined and p.sets.largest_pass == 48
    with torch.no_grad():
        got = make("reference", p, batch, 1)(torch.zeros((1, 2), dtype=torch.float64))[0].numpy()
    assert got.shape == (2, 3)
    assert np.allclose(got, by_hand(model, data), rtol=1e-6, atol=0)
    assert np.array_equal(got[:, 2], by_hand(model, data)[:, 2])  # counts exactly


def test_joined_and_apart_agree_in_float64_to_the_last_digits():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4)).double().eval()
    data = sets(dtype=torch.float64)
    centre = torch.zeros((1, 2), dtype=torch.float64)
    with torch.no_grad():
        together = make("reference", at_origin(model, data, dtype=torch.float64), 16, 1)(centre)[0].numpy()
        alone = np.concatenate(
            [
                make("reference", at_origin(model, {n: pair}, dtype=torch.float64), 16, 1)(centre)[0].numpy()
                for n, pair in data.items()
            ]
        )
    assert np.allclose(together, alone, rtol=1e-12, atol=0)


def test_k_points_of_a_pass_equal_one_point_at_a_time():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    g = torch.Generator().manual_seed(3)
    d = [{n: torch.randn(v.shape, generator=g, dtype=torch.float64) for n, v in origin.items()} for _ in range(2)]
    p = Problem.of(model, origin, d, sets(), Loss("crossentropy"), torch.float32, torch.device("cpu"), True)
    points = torch.tensor([[0.0, 0.0], [0.3, -0.1], [-1.0, 2.0]], dtype=torch.float64)
    kernel = make("reference", p, 10, 3)
    with torch.no_grad():
        together = kernel(points)
        each = torch.cat([kernel(points[i : i + 1]) for i in range(3)])
    assert torch.allclose(together, each, rtol=1e-6, atol=0) and torch.equal(together[..., 2], each[..., 2])


def test_a_callables_loss_goes_through_each_set_apart():
    torch.manual_seed(0)
    model = nn.Linear(6, 4).eval()
    data = sets()
    p = at_origin(model, data, loss=lambda out, y: nn.functional.cross_entropy(out, y))
    assert not p.sets.joined
    with torch.no_grad():
        got = make("reference", p, 16, 1)(torch.zeros((1, 2), dtype=torch.float64))[0].numpy()
    expected = by_hand(model, data)
    assert np.allclose(got[:, 0], expected[:, 0], rtol=1e-6) and np.isnan(got[:, 1]).all()
    assert np.array_equal(got[:, 2], expected[:, 2])


def test_recalibration_re_estimates_batchnorm_statistics_for_every_point_of_a_pass():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 4)).eval()
    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    g = torch.Generator().manual_seed(3)
    d = [{n: torch.randn(v.shape, generator=g, dtype=torch.float64) for n, v in origin.items()}]
    p = Problem.of(
        model,
        origin,
        d,
        sets(),
        Loss("crossentropy"),
        torch.float64,
        torch.device("cpu"),
        True,
        bn="recalibrate",
        bn_batches=2,
    )
    points = torch.tensor([[0.0, 0.0], [0.5, 0.0]], dtype=torch.float64)
    kernel = make("reference", p, 16, 2)
    with torch.no_grad():
        together = kernel(points)
        each = torch.cat([kernel(points[i : i + 1]) for i in range(2)])
    assert torch.allclose(together, each, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="recalibration"):
        make("compiled", p, 16, 2)
