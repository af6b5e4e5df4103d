"""The paired difference largest − smallest batch, its bootstrap interval and the minimum detectable
effect: against enumeration by hand and the noncentral t's power."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import nct
from scipy.stats import t as student

from landscape.report.effects import bootstrap, detectable, paired_differences


def test_differences_are_paired_by_seed():
    batch = [16, 256, 1024, 16, 1024, 16]
    seeds = [0, 0, 0, 1, 1, 2]  # seed 2 has no run at batch 1024: no pair
    values = [1.0, 5.0, 4.0, 2.0, 7.0, 9.0]
    d, small, large = paired_differences(batch, values, seeds)
    assert (small, large) == (16, 1024) and list(d) == [3.0, 5.0]


def test_exact_bootstrap_enumerates_every_resample():
    d = np.array([1.0, 2.0, 4.0])
    means = [d[list(pick)].mean() for pick in itertools.product(range(3), repeat=3)]  # 27, equally likely
    low, high, exact = bootstrap(d)
    assert exact and (low, high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])))
    assert math.isnan(bootstrap([1.0])[0])


def test_random_bootstrap_is_seeded_and_covers_a_clean_difference():
    d = 2.0 + 0.1 * np.random.default_rng(0).standard_normal(8)  # 8^8 resamples: drawn, not enumerated
    low, high, exact = bootstrap(d, samples=4000, seed=5)
    assert not exact and low < 2.0 < high and high - low < 0.3
    assert bootstrap(d, samples=4000, seed=5) == (low, high, exact)


def test_minimum_detectable_effect_has_80_percent_power_and_shrinks_with_seeds():
    for n in (3, 5, 10):
        mde = detectable(1.0, n, 0.05)
        c, ncp = student.ppf(0.975, n - 1), mde * math.sqrt(n)
        assert nct.sf(c, n - 1, ncp) + nct.cdf(-c, n - 1, ncp) == pytest.approx(0.8, abs=1e-6)
    seeds = [detectable(1.0, n, 0.05) for n in (2, 3, 5, 10, 30)]
    assert all(a > b for a, b in zip(seeds, seeds[1:]))
    assert detectable(2.0, 5, 0.05) == pytest.approx(2 * detectable(1.0, 5, 0.05))  # in the measure's units
    assert detectable(1.0, 5, 0.05 / 6) > detectable(1.0, 5, 0.05)  # Holm's first step asks more
    assert math.isnan(detectable(1.0, 1, 0.05))
