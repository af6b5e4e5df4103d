"""The norm test's arithmetic by hand: σ² = m · (Σ|gⱼ|² - M|G|²) / (M - 1), the bound σ²/B ≤ θ²|G|²
met with equality, and the batch it asks for rounded up to whole micro-batches, never below the batch
in force; a zero mean gradient asks for the cap (the norm test's companion, with gradient noise of a
known trace, is in test_recipes)."""

import math

import pytest

from landscape.train.adaptive import norm_test


def test_a_failing_batch_grows_to_the_next_whole_number_of_micro_batches():
    # M = 4 micro-batches of m = 8: spread (20 - 4·1) / 3 = 16/3, σ² = 128/3; σ²/32 = 4/3 > θ²|G|² = 1/4
    found = norm_test(sum_sq=20.0, count=4, gradient_sq=1.0, micro_batch=8, batch=32, theta=0.5, max_batch=1000)
    assert found.sample_variance == pytest.approx(128 / 3) and found.gradient_sq == 1.0 and not found.passed
    assert found.next_batch == 176  # σ²/(θ²|G|²) = 170.67: 21.33 micro-batches, rounded up to 22


def test_the_bound_met_with_equality_passes_and_keeps_the_batch():
    # σ² = 8 · (12 - 4) / 3 = 64/3 and B = 64: σ²/B = 1/3 = θ²|G|² with θ² = 1/3
    found = norm_test(12.0, 4, 1.0, 8, 64, theta=math.sqrt(1 / 3), max_batch=1000)
    assert found.passed and found.next_batch == 64
    assert not norm_test(12.0, 4, 1.0, 8, 64, theta=math.sqrt(1 / 3) * 0.999, max_batch=1000).passed


def test_the_batch_never_shrinks_and_a_zero_gradient_asks_for_the_cap():
    # σ² = 8 · (10 - 2·1) / 1 = 64; 64/48 > θ² = 0.81 fails; 64/0.81 = 79.0 rounds up to 10 micro-batches
    assert norm_test(10.0, 2, 1.0, 8, 48, theta=0.9, max_batch=1000).next_batch == 80
    assert norm_test(10.0, 2, 1.0, 8, 48, theta=0.9, max_batch=32).next_batch == 48  # a cap below it: kept
    assert norm_test(3.0, 3, 0.0, 4, 12, theta=0.1, max_batch=96).next_batch == 96  # |G| = 0: every batch fails
    rounding = norm_test(1.0, 2, 0.5 + 1e-12, 4, 8, theta=0.1, max_batch=96)  # Σ|g|² below M|G|²: spread 0
    assert rounding.sample_variance == 0.0 and rounding.passed and rounding.next_batch == 8
