"""Sharpness measures against cases whose answer is known exactly: a least-squares model at its exact
minimum (orthogonal input columns, MSE), where every measure has a closed form and a search started at
the minimum alone finds nothing; brute force over a box's corners; and the rescaling of a ReLU network's
neurons, which leaves the adaptive measures unchanged and not λmax."""

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from landscape.curvature import Hessian, extreme
from landscape.curvature.search import SearchConfig
from landscape.curvature.sharpness import (
    DEFINITIONS,
    MEASURES,
    adaptive_average,
    adaptive_l2_sharpness,
    adaptive_sharpness,
    average_rise,
    epsilon_sharpness,
    m_sharpness,
)
from landscape.data import Samples
from landscape.errors import ConfigError

pytestmark = pytest.mark.usefixtures("one_thread")
METHODS = ["apgd", "lbfgsb"]


def least_squares(n: int = 64, d: int = 8):
    """A float64 ``Linear(d, 1, bias=False)`` at the exact least-squares solution of data whose input
    columns are orthogonal: f(w + δ) − f(w) = Σⱼ Dⱼ δⱼ², Dⱼ = ‖Xⱼ‖² / n, and the gradient at w is 0."""
    g = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(n, d, generator=g, dtype=torch.float64))
    x = q * torch.linspace(1.0, 4.0, d, dtype=torch.float64)  # columns orthogonal, of different norms
    y = x @ torch.randn(d, 1, generator=g, dtype=torch.float64) + 0.3 * torch.randn(
        n, 1, generator=g, dtype=torch.float64
    )
    w = torch.linalg.lstsq(x, y).solution
    model = nn.Linear(d, 1, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(w.T)
    D = (x**2).sum(dim=0).numpy() / n
    return model, Samples(x, y), D, w.reshape(-1).numpy()


def test_the_least_squares_case_is_an_exact_minimum_with_the_closed_form_rise():
    model, samples, D, w = least_squares()
    h = Hessian(model, samples, loss="mse")
    base, gradient = h.loss_and_gradient()
    assert np.abs(gradient).max() < 1e-13
    delta = np.random.default_rng(1).standard_normal(len(w)) * 0.1
    assert h.loss_and_gradient(w + delta)[0] - base == pytest.approx(float(D @ delta**2), rel=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_adaptive_sharpness_at_an_exact_minimum_is_its_closed_form_not_zero(method):
    """The issue's reproduction: L-BFGS-B from δ = 0 alone never moves (the gradient is 0 there) and
    reported 0.0; with the random starts both methods find ρ² Σ Dⱼ wⱼ² (every coordinate at a face of the
    box).  (Auto-PGD's sign steps leave δ = 0 on the gradient's rounding, by luck rather than design.)"""
    model, samples, D, w = least_squares()
    h = Hessian(model, samples, loss="mse")
    result = adaptive_sharpness(h, rho=0.01, search_config=SearchConfig(method=method))
    exact = 0.01**2 * float(D @ w**2)
    assert result.value == pytest.approx(exact, rel=1e-6)
    assert result.search["boundary"] == 1.0 and result.converged and result.above_rounding
    assert result.settings["method"] == method and result.definition == DEFINITIONS["adaptive"][0]
    assert len(result.search["starts"]) == 10 and result.evaluations > 10
    if method == "lbfgsb":
        assert result.search["start"] >= 1 and result.search["starts"][0] == pytest.approx(result.loss, abs=1e-15)
        alone = adaptive_sharpness(h, rho=0.01, search_config=SearchConfig(method=method, restarts=0))
        assert alone.value < 1e-12 * exact and not alone.above_rounding  # said, not silent
        assert any("no rise above the loss's rounding" in note for note in alone.notes)


def test_adaptive_l2_at_an_exact_minimum_is_rho_squared_times_the_largest_scaled_curvature():
    """In the ball ‖δ / (|w| + η)‖₂ ≤ ρ the rise Σ Dⱼ sⱼ² uⱼ² is largest with all of u on the axis of the
    largest Dⱼ sⱼ²: ρ² maxⱼ Dⱼ (|wⱼ| + η)²."""
    model, samples, D, w = least_squares()
    h = Hessian(model, samples, loss="mse")
    for eta in (0.0, 0.01):
        result = adaptive_l2_sharpness(h, rho=0.1, eta=eta)
        assert result.value == pytest.approx(0.1**2 * float(np.max(D * (np.abs(w) + eta) ** 2)), rel=1e-4)
        assert result.search["boundary"] == 1.0 and result.settings["eta"] == eta and result.converged
    with pytest.raises(ConfigError, match="apgd for a ball"):
        adaptive_l2_sharpness(h, search_config=SearchConfig(method="lbfgsb"))


@pytest.mark.parametrize("method", METHODS)
def test_epsilon_sharpness_at_an_exact_minimum_is_keskars_percentage_of_the_closed_form(method):
    model, samples, D, w = least_squares()
    h = Hessian(model, samples, loss="mse")
    result = epsilon_sharpness(h, epsilon=1e-3, search_config=SearchConfig(method=method))
    rise = 1e-3**2 * float(D @ (np.abs(w) + 1.0) ** 2)
    assert result.value == pytest.approx(100 * rise / (1 + result.loss), rel=1e-6)


def test_the_average_case_adaptive_measure_is_the_mean_of_its_draws_and_near_its_expectation():
    model, samples, D, w = least_squares()
    h = Hessian(model, samples, loss="mse")
    result = adaptive_average(h, rho=0.01, samples=200, seed=5)
    rng = np.random.default_rng(5)
    draws = [0.01**2 * float(D @ (w * rng.standard_normal(len(w))) ** 2) for _ in range(200)]
    assert result.value == pytest.approx(np.mean(draws), rel=1e-8)
    assert result.stderr == pytest.approx(np.std(draws, ddof=1) / math.sqrt(200), rel=1e-6)
    assert abs(result.value - 0.01**2 * float(D @ w**2)) < 4 * result.stderr


def brute_box(h, scale, bound):
    """The exact maximum of a convex function over a box: the best of its 2ⁿ corners."""
    w = h.flat_params()
    corners = np.array(np.meshgrid(*[[-1, 1]] * len(w))).T.reshape(-1, len(w))
    return max(h.loss_and_gradient(w + scale * bound * c)[0] for c in corners)


def test_m_sharpness_with_every_sample_is_adaptive_and_with_halves_the_mean_of_their_box_maxima():
    model, samples, D, w = least_squares(n=64, d=6)
    h = Hessian(model, samples, loss="mse", batch_size=16)
    whole = m_sharpness(h, rho=0.05, m=64)
    assert whole.value == pytest.approx(0.05**2 * float(D @ w**2), rel=1e-6)
    halves = m_sharpness(h, rho=0.05, m=32)
    expected = []
    for part in h.subsets(32):
        expected.append(brute_box(part, np.abs(w), 0.05) - part.loss_and_gradient()[0])
    assert halves.value == pytest.approx(np.mean(expected), rel=1e-6)
    assert halves.search["batches"] == 2 and halves.converged
    assert len(h.subsets(40)) == 1  # a last batch of fewer than m is left out
    with pytest.raises(ConfigError, match="m=65"):
        m_sharpness(h, m=65)


def quadratic_case():
    """A linear model with MSE away from its minimum: f is a convex quadratic with a gradient."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(40, 3, generator=g, dtype=torch.float64)
    return model, Samples(x, torch.randn(40, 1, generator=g, dtype=torch.float64))


@pytest.mark.parametrize("method", METHODS)
def test_both_methods_find_the_box_maximum_of_a_quadratic_away_from_its_minimum(method):
    model, samples = quadratic_case()
    h = Hessian(model, samples, loss="mse")
    result = adaptive_sharpness(h, rho=0.5, search_config=SearchConfig(method=method))
    exact = brute_box(h, np.abs(h.flat_params()), 0.5) - result.loss
    assert result.value == pytest.approx(exact, rel=1e-6)
    keskar = epsilon_sharpness(h, epsilon=0.1, search_config=SearchConfig(method=method))
    best = brute_box(h, np.abs(h.flat_params()) + 1.0, 0.1)
    assert keskar.value == pytest.approx(100 * (best - keskar.loss) / (1 + keskar.loss), rel=1e-6)
    sub = epsilon_sharpness(h, epsilon=0.1, subspace=2, search_config=SearchConfig(method=method, seed=3))
    w = h.flat_params()
    A = np.random.default_rng(3).standard_normal((len(w), 2))
    box = A * (np.abs(np.linalg.pinv(A) @ w) + 1.0)[None, :]  # delta = A y, |y| <= 0.1 (|A+ w| + 1)
    best_sub = max(h.loss_and_gradient(w + box @ (0.1 * np.array(c)))[0] for c in [(1, 1), (1, -1), (-1, 1), (-1, -1)])
    assert sub.value == pytest.approx(100 * (best_sub - sub.loss) / (1 + sub.loss), rel=1e-6)
    assert sub.settings["subspace"] == 2


def relu_net_and_rescaled(alpha: float = 3.0):
    """A float64 ReLU MLP and the same function with its first layer's weights and biases times α and the
    second layer's weights divided by α (Dinh et al. 2017): relu(α z) = α relu(z)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)).double()
    scaled = copy.deepcopy(net)
    with torch.no_grad():
        scaled[0].weight.mul_(alpha)
        scaled[0].bias.mul_(alpha)
        scaled[2].weight.div_(alpha)
    g = torch.Generator().manual_seed(2)
    data = Samples(torch.randn(48, 5, generator=g, dtype=torch.float64), torch.randint(0, 3, (48,), generator=g))
    return net, scaled, data


def test_rescaling_a_relu_networks_neurons_leaves_the_adaptive_measures_unchanged_and_not_lambda_max():
    net, scaled, data = relu_net_and_rescaled()
    a, b = Hessian(net, data), Hessian(scaled, data)
    assert a.loss_and_gradient()[0] == pytest.approx(b.loss_and_gradient()[0], rel=1e-12)
    quick = SearchConfig(iterations=30, restarts=1)
    for measure in (
        lambda h: adaptive_sharpness(h, rho=0.05, search_config=quick),
        lambda h: adaptive_l2_sharpness(h, rho=0.2, search_config=quick),
        lambda h: adaptive_average(h, rho=0.05, samples=5),
        lambda h: m_sharpness(h, rho=0.05, m=24, search_config=quick),
    ):
        first, second = measure(a), measure(b)
        assert second.value == pytest.approx(first.value, rel=1e-6) and first.value != 0, first.measure
    # a check that the test can fail: λmax, Keskar's box and ASAM's η > 0 are not invariant
    top_a, top_b = extreme(a, tol=1e-10).values[0], extreme(b, tol=1e-10).values[0]
    assert abs(top_a - top_b) > 0.05 * abs(top_a)
    keskar_a, keskar_b = (epsilon_sharpness(h, epsilon=0.05, search_config=quick).value for h in (a, b))
    assert abs(keskar_a - keskar_b) > 1e-3 * abs(keskar_a)
    eta_a, eta_b = (adaptive_l2_sharpness(h, rho=0.2, eta=0.5, search_config=quick).value for h in (a, b))
    assert abs(eta_a - eta_b) > 1e-3 * abs(eta_a)


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
    scaled = copy.deepcopy(net)
    with torch.no_grad():
        scaled[0].weight.mul_(7.0)
        scaled[1].running_var.mul_(49.0)  # BatchNorm in eval mode: the statistics follow the filters
        scaled[1].running_mean.mul_(7.0)
    data = Samples(x.double(), y)
    quick = SearchConfig(iterations=20, restarts=1)
    a = adaptive_sharpness(Hessian(net, data), rho=0.05, search_config=quick)
    b = adaptive_sharpness(Hessian(scaled, data), rho=0.05, search_config=quick)
    assert a.loss == pytest.approx(b.loss, rel=1e-12)
    assert b.value == pytest.approx(a.value, rel=1e-8) and a.value > 0


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


def test_every_measure_has_a_definition_and_a_citation():
    assert set(DEFINITIONS) == set(MEASURES)
    assert all(formula and citation for formula, citation in DEFINITIONS.values())
