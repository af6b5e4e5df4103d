"""The scorecard's tests against brute force: Kendall's τ-b against its definition and scipy; p-values by
permutation within seeds against every within-seed order enumerated by hand; Holm's adjustment
against known values and its rejection rule; Friedman against scipy and on a peak that τ misses."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import friedmanchisquare, kendalltau

from landscape.report.stats import EXACT_UP_TO, block_orders, friedman, holm, kendall_tau, mean_sd, trend, within


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


def within_seed_orders(seeds):
    """Every order of the runs that moves a run only among the runs of its own seed, by itertools."""
    groups = [[i for i, s in enumerate(seeds) if s == seed] for seed in dict.fromkeys(seeds)]
    for shuffles in itertools.product(*(itertools.permutations(g) for g in groups)):
        order = list(range(len(seeds)))
        for g, shuffled in zip(groups, shuffles):
            for position, source in zip(g, shuffled):
                order[position] = source
        yield order


@pytest.mark.parametrize("seed", range(5))
def test_tau_b_with_ties_equals_the_definition_and_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.choice([16, 64, 256, 1024], size=12)  # batch sizes: ties by design
    y = np.round(rng.standard_normal(12), 1)  # a measure with a few ties
    assert kendall_tau(x, y) == pytest.approx(tau_by_definition(x, y), abs=1e-14)
    assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y, variant="b").statistic, abs=1e-12)


def test_perfect_orders_and_constants():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert math.isnan(kendall_tau([1, 2, 3], [5, 5, 5]))


@pytest.mark.parametrize("seed", range(3))
def test_within_seed_p_value_equals_brute_force_on_a_small_table(seed):
    # 3 seeds x 3 batch sizes: (3!)^3 = 216 within-seed orders, each scored by scipy's τ-b.
    rng = np.random.default_rng(seed)
    batch = [16, 64, 256] * 3
    seeds = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    y = np.log2(batch) * 0.3 + rng.standard_normal(9) + np.repeat([0.0, 1.5, -1.0], 3)  # seeds shift the level
    observed = kendalltau(batch, y, variant="b").statistic
    taus = [kendalltau(batch, y[order], variant="b").statistic for order in within_seed_orders(seeds)]
    expected = sum(abs(t) >= abs(observed) - 1e-12 for t in taus) / len(taus)
    got = trend(batch, y, seeds)
    assert got.exact and got.permutations == 216 == len(taus) and got.runs == 9
    assert got.statistic == pytest.approx(observed, abs=1e-12)
    assert got.p_value == pytest.approx(expected, abs=1e-12)


def test_two_seeds_two_batch_sizes_in_perfect_order_reach_one_half():
    # Within seeds there are 2! x 2! = 4 orders: the observed one and its reverse reach |τ| = max, p = 2/4.
    # (Shuffling across seeds, as the test used to, gave 8/24 = 1/3: it ignored the blocking.)
    got = trend([16, 256, 16, 256], [1.0, 3.0, 2.0, 4.0], [0, 0, 1, 1])
    assert got.p_value == pytest.approx(0.5) and got.permutations == 4 and got.exact


def test_blocking_matters_when_seeds_shift_the_level():
    # Each seed ordered with the batch size, but the seeds far apart: within seeds, the observed order
    # is the most extreme of (4!)^3 = 13,824 (and its reverse), p = 2/13,824.
    batch = [16, 64, 256, 1024] * 3
    seeds = np.repeat([0, 1, 2], 4)
    y = np.tile([0.0, 1.0, 2.0, 3.0], 3) + 10.0 * seeds
    got = trend(batch, y, seeds)
    assert got.p_value == pytest.approx(2 / 13824) and got.exact


def test_random_orders_above_the_exact_limit_are_seeded_and_never_zero():
    batch = [16, 64, 256, 1024] * 5
    seeds = np.repeat(range(5), 4)  # 24^5 orders: too many to enumerate
    assert 24**5 > EXACT_UP_TO
    y = np.log2(batch) + np.random.default_rng(0).standard_normal(20) * 0.1
    got = trend(batch, y, seeds, samples=2000, seed=1)
    assert not got.exact and got.permutations == 2000 and got.p_value == pytest.approx(1 / 2001)
    assert trend(batch, y, seeds, samples=2000, seed=1) == got
    orders, exact = block_orders(seeds, samples=50, seed=3)
    assert not exact
    for b in range(5):
        members = np.flatnonzero(seeds == b)
        assert all(sorted(o[members]) == list(members) for o in orders)  # a run's value stays within its seed


def test_missing_values_are_left_out():
    got = trend([16, 64, 256, 16, 64, 256], [1.0, 2.0, math.nan, 1.0, 2.0, 3.0], [0, 0, 0, 1, 1, 1])
    assert got.runs == 5
    assert math.isnan(trend([16, 256], [1.0, 2.0], [0, 0]).statistic)


def test_within_strata_by_brute_force():
    # The gap and a measure among runs of the same batch size: only same-batch pairs count, and the
    # measure is shuffled among the seeds of one batch size; 3 strata of 3 runs: (3!)^3 = 216 orders.
    rng = np.random.default_rng(4)
    batch = np.repeat([16, 64, 256], 3)
    gap = rng.standard_normal(9)
    y = gap + 0.5 * rng.standard_normal(9) + 5 * np.log2(batch)  # across batch sizes: batch size only

    def tau_in_strata(v):
        pairs = [(i, j) for i, j in itertools.combinations(range(9), 2) if batch[i] == batch[j]]
        s = sum(np.sign(gap[i] - gap[j]) * np.sign(v[i] - v[j]) for i, j in pairs)
        return s / len(pairs)  # no ties within a stratum here

    observed = tau_in_strata(y)
    taus = [tau_in_strata(y[order]) for order in within_seed_orders(list(batch))]
    got = within(gap, y, batch)
    assert got.statistic == pytest.approx(observed)
    assert got.p_value == pytest.approx(sum(abs(t) >= abs(observed) - 1e-12 for t in taus) / 216)


def test_holm_by_hand_and_by_its_rejection_rule():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.01]) == pytest.approx([0.5, 0.02])
    assert holm([0.2, 0.9]) == pytest.approx([0.4, 0.9])  # monotone: never below an earlier step's
    out = holm([0.01, math.nan, 0.04])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)  # NaN: not tested
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = rng.random(6) ** 3
        alpha = 0.05
        # step down: reject the smallest while p_(i) <= alpha / (m - i + 1); stop at the first that is not
        rejected, m = set(), len(p)
        for i, index in enumerate(np.argsort(p)):
            if p[index] > alpha / (m - i):
                break
            rejected.add(int(index))
        assert {i for i, q in enumerate(holm(p)) if q <= alpha} == rejected


def test_friedman_equals_scipy_and_sees_a_peak_that_tau_misses():
    rng = np.random.default_rng(2)
    table = rng.standard_normal((5, 3))  # 5 seeds x 3 batch sizes, no ties
    batch = [16, 64, 256] * 5
    seeds = np.repeat(range(5), 3)
    got = friedman(batch, table.ravel(), seeds)
    assert got.statistic == pytest.approx(friedmanchisquare(*table.T).statistic)
    # An inverted U, the same in every seed (higher at 64 and 256 than at 16 and 1024): τ is 0 within
    # each seed; Friedman's statistic is the largest possible, reached by 24 of the (4!)^3 orders.
    batch = [16, 64, 256, 1024] * 3
    seeds = np.repeat([0, 1, 2], 4)
    y = np.tile([0.0, 2.0, 1.9, 0.1], 3) + 0.01 * seeds
    peak = friedman(batch, y, seeds)
    assert peak.exact and peak.p_value == pytest.approx(24 / 13824)
    assert trend(batch, y, seeds).p_value > 0.5
    assert math.isnan(friedman([16, 64, 16], [1.0, 2.0, 3.0], [0, 0, 1]).statistic)  # one complete seed


def test_mean_and_sample_standard_deviation():
    mean, sd, n = mean_sd([1.0, 2.0, 3.0, math.nan])
    assert (mean, sd, n) == (2.0, 1.0, 3)
    assert math.isnan(mean_sd([5.0])[1]) and mean_sd([5.0])[0] == 5.0
    assert mean_sd([])[2] == 0
