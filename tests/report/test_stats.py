"""Kendall's τ-b against its definition and scipy, and its permutation p-value against exact counts."""

import itertools
import math

import numpy as np
import pytest

from landscape.report.stats import EXACT_UP_TO, correlation, kendall_tau, mean_sd


def tau_by_definition(x, y):
    """τ-b = (concordant - discordant) / sqrt((n0 - ties in x) (n0 - ties in y)), pair by pair."""
    c = d = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        a, b = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        c += a * b > 0
        d += a * b < 0
        tx += a == 0
        ty += b == 0
    n0 = len(x) * (len(x) - 1) / 2
    return (c - d) / math.sqrt((n0 - tx) * (n0 - ty))


@pytest.mark.parametrize("seed", range(5))
def test_tau_b_with_ties_equals_the_definition_and_scipy(seed):
    from scipy.stats import kendalltau

    rng = np.random.default_rng(seed)
    x = rng.choice([16, 64, 256, 1024], size=12)  # batch sizes: ties by design
    y = np.round(rng.standard_normal(12), 1)  # a measure with a few ties
    assert kendall_tau(x, y) == pytest.approx(tau_by_definition(x, y), abs=1e-14)
    assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y, variant="b").statistic, abs=1e-12)


def test_perfect_orders_and_constants():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert math.isnan(kendall_tau([1, 2, 3], [5, 5, 5]))


def test_exact_p_value_of_three_ordered_runs_is_one_third():
    # Of the 6 orders of 3 values, one gives τ = +1 and one τ = -1: p = 2/6.
    c = correlation([1, 2, 3], [0.1, 0.5, 0.9])
    assert (c.tau, c.p_value, c.permutations, c.exact) == (1.0, pytest.approx(1 / 3), 6, True)


def test_exact_p_value_with_tied_batch_sizes():
    # Two batch sizes x two seeds: 4 of the 6 pairs are untied in x, all concordant when both
    # small-batch runs hold the two smallest values: τ-b = 4 / sqrt(4 · 6) = sqrt(2/3), its largest value.
    # That happens in 2!·2! = 4 of the 24 orders, the
    # reverse in as many: p = 8/24.
    c = correlation([16, 16, 256, 256], [1.0, 2.0, 3.0, 4.0])
    assert c.tau == pytest.approx(math.sqrt(2 / 3)) and c.p_value == pytest.approx(1 / 3) and c.exact


def test_random_permutations_above_the_exact_limit():
    x = np.repeat([16, 64, 256, 1024], 3)
    assert len(x) > EXACT_UP_TO
    rising = x + np.arange(12) * 1e-3  # strictly ordered with the batch
    strong = correlation(x, rising, samples=5000, seed=1)
    # 12 of the 66 pairs are tied in batch size: τ-b is at most sqrt(54 / 66)
    assert strong.tau == pytest.approx(math.sqrt(54 / 66)) and not strong.exact and strong.permutations == 5000
    assert 1 / 5001 <= strong.p_value < 1e-3  # never 0: the observed order counts
    noise = correlation(x, np.random.default_rng(0).standard_normal(12), samples=5000, seed=1)
    assert noise.p_value > 0.05
    assert correlation(x, rising, samples=5000, seed=1) == strong  # seeded: the same p-value


def test_missing_values_are_left_out():
    c = correlation([1, 2, 3, 4, 5], [1.0, 2.0, math.nan, 4.0, 5.0])
    assert c.runs == 4 and c.tau == 1.0
    assert math.isnan(correlation([1, 2], [1.0, 2.0]).tau)


def test_mean_and_sample_standard_deviation():
    mean, sd, n = mean_sd([1.0, 2.0, 3.0, math.nan])
    assert (mean, sd, n) == (2.0, 1.0, 3)
    assert math.isnan(mean_sd([5.0])[1]) and mean_sd([5.0])[0] == 5.0
    assert mean_sd([])[2] == 0
