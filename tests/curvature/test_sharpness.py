"""Sharpness in a neighbourhood: Keskar's ε-sharpness, adaptive worst-case sharpness, the average rise
along random directions; each against a case whose answer is known, and the adaptive measure unchanged
when a BatchNorm network's conv filters are rescaled."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from landscape.curvature import Hessian
from landscape.curvature.sharpness import adaptive_sharpness, average_rise, epsilon_sharpness
from landscape.data import Samples

pytestmark = pytest.mark.usefixtures("one_thread")


def quadratic_case():
    """A linear model with MSE: f is a convex quadratic; its maximum over a box is at a corner, and
    L-BFGS-B within the box must find at least the best rise along the gradient's sign pattern."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(40, 3, generator=g, dtype=torch.float64)
    return model, Samples(x, torch.randn(40, 1, generator=g, dtype=torch.float64))


def brute_force_box_max(h, scale, bound):
    """The exact maximum of a convex function over a box: the best of its corners (n = 4: 16 corners)."""
    w = h.flat_params()
    best = -math.inf
    for corner in np.array(np.meshgrid(*[[-1, 1]] * len(w))).T.reshape(-1, len(w)):
        best = max(best, h.loss_and_gradient(w + scale * bound * corner)[0])
    return best


def test_adaptive_sharpness_finds_the_maximum_of_a_convex_quadratic_over_its_box():
    model, samples = quadratic_case()
    h = Hessian(model, samples, loss="mse")
    result = adaptive_sharpness(h, rho=0.5, maxiter=50)
    exact = brute_force_box_max(h, np.abs(h.flat_params()), 0.5) - result.loss
    assert result.value == pytest.approx(exact, rel=1e-6)
    assert result.settings == {"rho": 0.5, "maxiter": 50, "method": "L-BFGS-B"}


def test_epsilon_sharpness_is_keskars_percentage_of_the_box_maximum():
    model, samples = quadratic_case()
    h = Hessian(model, samples, loss="mse")
    result = epsilon_sharpness(h, epsilon=0.1, maxiter=50)
    best = brute_force_box_max(h, np.abs(h.flat_params()) + 1.0, 0.1)
    assert result.value == pytest.approx(100 * (best - result.loss) / (1 + result.loss), rel=1e-6)
    sub = epsilon_sharpness(h, epsilon=0.1, subspace=2, maxiter=50, seed=3)
    w = h.flat_params()
    A = np.random.default_rng(3).standard_normal((len(w), 2))
    box = A * (np.abs(np.linalg.pinv(A) @ w) + 1.0)[None, :]  # delta = A y, |y| <= 0.1 (|A+ w| + 1)
    best_sub = max(h.loss_and_gradient(w + box @ (0.1 * np.array(c)))[0] for c in [(1, 1), (1, -1), (-1, 1), (-1, -1)])
    assert sub.value == pytest.approx(100 * (best_sub - sub.loss) / (1 + sub.loss), rel=1e-6)
    assert sub.settings["subspace"] == 2


def test_the_adaptive_measure_does_not_change_when_conv_filters_are_rescaled():
    """Bias-free convolutions followed by BatchNorm: scaling a conv's filters changes nothing the
    network computes, and the box |δ| <= ρ|w| scales with them, so the measure is the same."""
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1, bias=False), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 16, 4)
    )
    net.train()
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(30, 1, 4, 4, generator=g), torch.randint(0, 4, (30,), generator=g)
    net(x)  # running statistics from a batch
    net.eval()
    net[1].eps = 0.0  # with eps, sqrt(49 var + eps) is not exactly 7 sqrt(var + eps)
    net.double()  # and the scaling in float64, where multiplying by 7 and 49 rounds far below the test
    scaled = nn.Sequential(*[m for m in __import__("copy").deepcopy(net)])
    with torch.no_grad():
        scaled[0].weight.mul_(7.0)
        scaled[1].running_var.mul_(49.0)  # BatchNorm in eval mode: the statistics follow the filters
        scaled[1].running_mean.mul_(7.0)
    data = Samples(x.double(), y)
    a = adaptive_sharpness(Hessian(net, data), rho=0.05, maxiter=15)
    b = adaptive_sharpness(Hessian(scaled, data), rho=0.05, maxiter=15)
    assert a.loss == pytest.approx(b.loss, rel=1e-12)
    assert b.value == pytest.approx(a.value, rel=1e-8) and a.value > 0
    # the plain (non-adaptive) box of Keskar et al. is not invariant: a check that the test can fail
    ea = epsilon_sharpness(Hessian(net, data), epsilon=0.05, maxiter=15)
    eb = epsilon_sharpness(Hessian(scaled, data), epsilon=0.05, maxiter=15)
    assert abs(ea.value - eb.value) > 1e-3 * abs(ea.value)


def test_the_average_rise_of_a_quadratic_is_its_curvature_along_the_directions():
    """For a linear model with MSE, f(w + r d) - f(w) = r g·d + r² dᵀHd / 2 exactly: the mean over
    directions is checked against that formula with the same directions."""
    from landscape import directions as dirs

    model, samples = quadratic_case()
    h = Hessian(model, samples, loss="mse")
    result = average_rise(h, radius=0.3, directions=5, norm="filter", ignore="none", seed=4)
    base, gradient = h.loss_and_gradient()
    origin = {n: p.detach().to("cpu", torch.float64) for n, p in h.params.items()}
    generator = torch.Generator().manual_seed(4)
    expected = []
    for _ in range(5):
        d = dirs.random_direction(origin, "filter", "none", generator)
        flat = torch.cat([d[n].reshape(-1) for n in h.names]).numpy()
        expected.append(0.3 * gradient @ flat + 0.09 * flat @ h.matvec(flat) / 2)
    assert result.value == pytest.approx(np.mean(expected), rel=1e-9)
    assert result.stderr == pytest.approx(np.std(expected, ddof=1) / math.sqrt(5), rel=1e-9)
    assert math.isnan(result.error_rise)  # regression: no 0-1 error
