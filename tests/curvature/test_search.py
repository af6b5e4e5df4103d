"""The worst-case search: Auto-PGD's schedule, the sets, what a search records, and defaults that find
the worst case of trained networks."""

import numpy as np
import pytest
import torch
from torch import nn

from landscape.curvature import Hessian
from landscape.curvature.search import SearchConfig, _gain, checkpoints, search
from landscape.curvature.sharpness import adaptive_sharpness, epsilon_sharpness
from landscape.data import Samples, load_named
from landscape.errors import ConfigError


def test_auto_pgds_checkpoints_follow_croce_and_hein():
    """p₀ = 0, p₁ = 0.22, pⱼ₊₁ = pⱼ + max(pⱼ − pⱼ₋₁ − 0.03, 0.06): for 100 iterations 22, 41, 57, 70, 80,
    87, 93, 99 (Croce & Hein 2020, Sec. 3.1)."""
    assert checkpoints(100) == [22, 41, 57, 70, 80, 87, 93, 99]


def quadratic(D: np.ndarray, b: np.ndarray | None = None):
    """f(u) = Σ Dᵢ uᵢ² + b·u and its gradient, counting calls."""
    calls = [0]
    b = np.zeros_like(D) if b is None else b

    def f(u):
        calls[0] += 1
        return float(D @ u**2 + b @ u), 2 * D * u + b

    return f, calls


@pytest.mark.parametrize("method", ["apgd", "lbfgsb"])
def test_a_convex_quadratic_is_maximized_at_a_corner_of_the_box_and_the_search_says_how(method):
    D = np.array([1.0, 2.0, 0.5, 3.0])
    f, calls = quadratic(D, b=np.array([0.1, -0.2, 0.05, 0.3]))
    out = search(f, 4, 0.5, "box", SearchConfig(method=method, iterations=40), base=0.0)
    corners = np.array(np.meshgrid(*[[-0.5, 0.5]] * 4)).T.reshape(-1, 4)
    assert out.best == pytest.approx(max(f(c)[0] for c in corners), rel=1e-9)
    assert out.boundary == 1.0 and out.converged and (method == "lbfgsb" or out.last_gain <= 0.01)
    assert out.evaluations == calls[0] - 16 and len(out.starts) == 10 and out.status
    assert set(out.record()) >= {"best", "start", "status", "converged", "iterations", "evaluations", "boundary"}


def test_the_ball_is_maximized_on_the_axis_of_the_largest_curvature():
    D = np.array([1.0, 4.0, 2.0])
    f, _ = quadratic(D)
    out = search(f, 3, 0.3, "ball", SearchConfig(iterations=60), base=0.0)
    assert out.best == pytest.approx(4.0 * 0.09, rel=1e-6)
    assert np.linalg.norm(out.u) == pytest.approx(0.3) and abs(out.u[1]) == pytest.approx(0.3, rel=1e-3)


def test_the_convergence_check_is_the_gain_of_the_last_fifth_of_the_iterations():
    """Running maxima 0, 1, …, 9 above a base of 0: the last fifth (from the 8th value) gained 2 of the 9,
    22 %: not converged; a plateau gains nothing."""
    assert _gain([float(i) for i in range(10)], 0.0) == pytest.approx(2 / 9)
    assert _gain([0.0, 5.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0], 0.0) == 0.0
    assert _gain([1.0] * 10, 1.0) == 0.0  # no rise at all: nothing gained, and said elsewhere


def test_a_search_cut_short_while_rising_is_flagged_not_converged():
    """A ridge that keeps rising toward the box's corner, reached by steps that halve: five iterations
    of Auto-PGD from the centre, its first step shrunk, are still climbing."""

    def f(u):
        return float(np.sum(np.sqrt(u + 1.0))), 0.5 / np.sqrt(u + 1.0)

    out = search(f, 2, 1.0, "box", SearchConfig(iterations=5, restarts=0, tol=1e-6), base=f(np.zeros(2))[0])
    assert out.converged == (out.last_gain <= 1e-6)
    long = search(f, 2, 1.0, "box", SearchConfig(iterations=60, restarts=0), base=f(np.zeros(2))[0])
    assert long.converged and long.boundary == 1.0 and long.best == pytest.approx(2 * np.sqrt(2.0))


def test_bad_settings_are_one_line_errors():
    for kwargs, message in (
        ({"method": "adam"}, "method=adam: expected one of apgd, lbfgsb"),
        ({"iterations": 2}, "iterations=2: expected at least 5 iterations"),
        ({"restarts": -1}, "restarts=-1: expected 0 or more random starts"),
        ({"tol": 0}, "tol=0: expected a positive number"),
    ):
        with pytest.raises(ConfigError, match=message):
            SearchConfig(**kwargs)


@pytest.mark.slow
def test_the_default_search_finds_the_worst_case_of_a_trained_network_within_a_few_per_cent():
    """A float64 ReLU MLP (64-64-10) trained on the digits to a train loss near 1e-3: the default adaptive
    and ε-sharpness (300 evaluations) come within 3 % of a search ten times as long, and say so: converged,
    away from the minimum, on the boundary."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    train = load_named("digits").train
    x, y = train.inputs.double().flatten(1), train.targets
    net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).double()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(800):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 1e-2
    h = Hessian(net, Samples(x, y), dtype="float64", batch_size=len(y))
    long = SearchConfig(iterations=100, restarts=29)
    for measure in (
        lambda c: adaptive_sharpness(h, rho=0.01, search_config=c),
        lambda c: epsilon_sharpness(h, epsilon=1e-3, search_config=c),
    ):
        default, longer = measure(SearchConfig()), measure(long)
        assert default.value >= 0.97 * longer.value > 0, (default.measure, default.value, longer.value)
        assert default.converged and default.above_rounding and default.search["boundary"] > 0.5
        assert default.evaluations <= 320


def test_a_search_still_rising_goes_on_from_its_best_point_up_to_its_extensions():
    """A loss that keeps rising for its first 15 evaluations and is flat after: five iterations end still
    rising (not converged, said so); with extensions the winning start goes on from its best point, round
    by round (recorded), until it stops rising; the rounds are capped."""
    calls = [0]

    def f(u):
        calls[0] += 1
        return 0.1 * min(calls[0], 15), np.ones_like(u)

    config = SearchConfig(iterations=5, restarts=0, extensions=0)
    short = search(f, 3, 1.0, "box", config, base=0.0)
    assert not short.converged and short.last_gain > 0.01 and short.evaluations == 6
    calls[0] = 0
    longer = search(f, 3, 1.0, "box", SearchConfig(iterations=5, restarts=0, extensions=5), base=0.0)
    assert longer.converged and longer.best == pytest.approx(1.5) and longer.last_gain == 0.0
    assert "continued 3 time(s)" in longer.status and longer.iterations == 20 and longer.evaluations == 24
    calls[0] = 0
    capped = search(f, 3, 1.0, "box", SearchConfig(iterations=5, restarts=0, extensions=1), base=0.0)
    assert not capped.converged and "continued 1 time(s)" in capped.status and capped.evaluations == 12
    with pytest.raises(ConfigError, match="extensions=-1"):
        SearchConfig(extensions=-1)
