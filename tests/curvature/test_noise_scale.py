"""The gradient noise scale against its definition: per-sample gradients of a least-squares model in
closed form, and per-sample autograd on a small network (the vmap path and the one-at-a-time path of a
loss given as code agree)."""

import math

import numpy as np
import pytest
import torch

from landscape.curvature import Hessian
from landscape.curvature.noise_scale import noise_scale

from .test_layers import small_net_and_data
from .test_sharpness import least_squares

pytestmark = pytest.mark.usefixtures("one_thread")


def definition(per_sample: np.ndarray) -> float:
    mean = per_sample.mean(axis=0)
    centred = per_sample - mean
    return float((centred**2).sum() / (len(per_sample) - 1) / (mean @ mean))


def test_least_squares_away_from_its_minimum_has_the_closed_form():
    model, samples, _, w = least_squares()
    with torch.no_grad():
        model.weight.add_(0.3)  # off the minimum, so that G is not 0
    x, y = samples.inputs.numpy(), samples.targets.numpy()[:, 0]
    residual = x @ model.weight.detach().numpy()[0] - y
    found = noise_scale(Hessian(model, samples, loss="mse", batch_size=10))
    assert found.value == pytest.approx(definition(2 * residual[:, None] * x), rel=1e-10)
    assert found.samples == len(y) and found.method == "vmap"


def test_a_network_matches_per_sample_autograd_and_a_loss_as_code_takes_the_slow_path_to_the_same():
    net, data = small_net_and_data()
    grads = []
    for x, y in zip(data.inputs, data.targets):
        net.zero_grad()
        torch.nn.functional.cross_entropy(net(x[None]), y[None]).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy().copy())
    expected = definition(np.array(grads))
    fast = noise_scale(Hessian(net, data, batch_size=16))
    slow = noise_scale(Hessian(net, data, loss=torch.nn.functional.cross_entropy, batch_size=16))
    assert fast.value == pytest.approx(expected, rel=1e-10) and slow.value == pytest.approx(expected, rel=1e-10)
    assert (fast.method, slow.method) == ("vmap", "loop")
    assert fast.record()["citation"].startswith("McCandlish")


def test_at_an_exact_minimum_the_noise_scale_is_unbounded():
    model, samples, _, _ = least_squares()
    found = noise_scale(Hessian(model, samples, loss="mse"))
    assert found.gradient_norm2 < 1e-25 and (math.isinf(found.value) or found.value > 1e20)
