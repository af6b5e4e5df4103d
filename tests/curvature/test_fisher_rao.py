"""The Fisher–Rao norm against its definition by brute force (per-sample gradients by autograd, the
expectation over the model's labels summed class by class), and the rescaling it must not see."""

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from landscape.curvature import Hessian
from landscape.curvature.fisher_rao import fisher_rao
from landscape.data import Samples

from .test_layers import small_net_and_data

pytestmark = pytest.mark.usefixtures("one_thread")


def brute_force(net: nn.Module, data: Samples, loss: str) -> tuple[float, float]:
    """E_x E_y ⟨θ, ∇ℓ⟩² over the model's labels (cross-entropy: every class, weighted by p; mse: a
    Monte Carlo is not exact, so the Gaussian's closed form by autograd on the outputs), and the
    empirical E_x ⟨θ, ∇ℓ(f(x), y_data)⟩²."""
    params = list(net.parameters())

    def inner(x, y) -> float:
        out = net(x[None])
        value = (
            torch.nn.functional.cross_entropy(out, y[None])
            if loss == "crossentropy"
            else ((out - torch.nn.functional.one_hot(y, out.shape[1]).double()) ** 2).mean()
        )
        grads = torch.autograd.grad(value, params)
        return float(sum((g * p.detach()).sum() for g, p in zip(grads, params)))

    model, empirical = 0.0, 0.0
    for x, y in zip(data.inputs, data.targets):
        empirical += inner(x, y) ** 2
        if loss == "crossentropy":
            p = torch.softmax(net(x[None])[0], dim=0).detach()
            model += sum(float(p[c]) * inner(x, torch.tensor(c)) ** 2 for c in range(len(p)))
        else:  # mse: E over y ~ N(f, C/2) of ⟨u, (2/C)(f − y)⟩² = (2/C) ‖u‖², u = d f(θ + tθ)/dt
            with torch.no_grad():
                eps = 1e-6
                plus = copy.deepcopy(net)
                for q in plus.parameters():
                    q.mul_(1 + eps)
                u = (plus(x[None]) - net(x[None]))[0] / eps
            model += 2.0 / len(u) * float(u @ u)
    n = len(data.targets)
    return math.sqrt(model / n), math.sqrt(empirical / n)


@pytest.mark.parametrize("loss", ["crossentropy", "mse"])
def test_the_norm_matches_its_definition_by_brute_force(loss):
    net, data = small_net_and_data()
    found = fisher_rao(Hessian(net, data, loss=loss, batch_size=16))
    model, empirical = brute_force(net, data, loss)
    assert found.value == pytest.approx(model, rel=1e-5 if loss == "mse" else 1e-10)
    assert found.empirical == pytest.approx(empirical, rel=1e-10)
    assert found.samples == 40 and found.record()["citation"].startswith("Liang")


def test_neuron_rescaling_leaves_it_unchanged():
    net, data = small_net_and_data()
    alphas = torch.tensor([0.5, 2.0, 3.0, 1.0, 0.25], dtype=torch.float64)
    scaled = copy.deepcopy(net)
    with torch.no_grad():
        scaled[0].weight.mul_(alphas[:, None])
        scaled[0].bias.mul_(alphas)
        scaled[2].weight.div_(alphas[None, :])
    a, b = fisher_rao(Hessian(net, data)), fisher_rao(Hessian(scaled, data))
    assert b.value == pytest.approx(a.value, rel=1e-10) and b.empirical == pytest.approx(a.empirical, rel=1e-10)
    plain = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3)).double()  # another function: another norm
    assert not np.isclose(fisher_rao(Hessian(plain, data)).value, a.value)


def test_a_loss_given_as_code_says_why_it_has_no_norm():
    net, data = small_net_and_data()
    found = fisher_rao(Hessian(net, data, loss=torch.nn.functional.cross_entropy))
    assert math.isnan(found.value) and "per-sample" in found.note
