"""Hutchinson's trace against explicit Hessians: a diagonal one, where every Rademacher sample zᵀDz is the
trace itself, and a 2x2 one, where every sample is tr ± 2b, so the mean and its standard error follow from
the share of plus signs alone; the stopping rule's minimum, the products and the precision it reports."""

import math

import numpy as np
import pytest
import torch

from landscape.curvature import hutchinson
from landscape.curvature.trace import MIN_SAMPLES


class Explicit:
    """A dense symmetric matrix behind the Hessian's interface (``matvec``, ``dim``, ``products``)."""

    def __init__(self, dense, products=0, dtype=None):
        self.dense = np.asarray(dense, dtype=np.float64)
        self.dim, self.products = len(self.dense), products
        if dtype is not None:
            self.dtype = dtype

    def matvec(self, v):
        self.products += 1
        return self.dense @ v


def test_a_diagonal_hessians_every_sample_is_its_trace_so_the_estimate_is_exact():
    """zᵢ² = 1 for every Rademacher entry: zᵀDz = Σ dᵢ whatever z, so the standard error is zero."""
    d = np.array([3.0, -1.0, 0.5, 7.25, 2.0])
    found = hutchinson(Explicit(np.diag(d)), samples=40, seed=5)
    assert found.value == d.sum() and found.stderr == 0.0
    assert found.samples == 40 == found.products and found.se is None


def test_with_a_relative_error_an_exact_trace_stops_at_the_minimum_of_samples():
    d = np.diag([1.0, 2.0, 3.0])
    assert hutchinson(Explicit(d), samples=500, se=1e-9).samples == MIN_SAMPLES == 10
    early = hutchinson(Explicit(d), samples=500, se=1e-9, min_samples=3)
    assert early.samples == 3 == early.products and early.value == 6.0 and early.max_samples == 500


def test_each_sample_of_a_2x2_hessian_is_the_trace_plus_or_minus_twice_its_off_diagonal():
    """Samples a + c ± 2b with a share p of plus signs: mean a + c + 2bμ with μ = 2p - 1, and standard
    error 2|b| √((1 - μ²) / (m - 1)) (sample variance with m - 1)."""
    a, b, c, m = 2.0, 0.75, -5.0, 64
    found = hutchinson(Explicit([[a, b], [b, c]]), samples=m, seed=11)
    mu = (found.value - (a + c)) / (2 * b)
    plus = (mu + 1) / 2 * m
    assert plus == pytest.approx(round(plus), abs=1e-9) and 0 < round(plus) < m  # a whole number of plus signs
    assert found.stderr == pytest.approx(2 * abs(b) * math.sqrt((1 - mu * mu) / (m - 1)), rel=1e-12)
    again = hutchinson(Explicit([[a, b], [b, c]]), samples=m, seed=11)
    assert again.value == found.value  # the vectors come from the seed


def test_products_count_this_estimate_only_and_the_precision_is_recorded():
    h = Explicit(np.eye(4), products=7, dtype=torch.float32)
    found = hutchinson(h, samples=5)
    assert found.products == 5 and h.products == 12
    assert found.dtype == "float32" and hutchinson(Explicit(np.eye(4)), samples=5).dtype is None
    assert found.record() == {
        "trace": 4.0,
        "stderr": 0.0,
        "samples": 5,
        "products": 5,
        "se": None,
        "max_samples": 5,
        "dtype": "float32",
    }


def test_too_few_samples_for_a_standard_error_are_refused_by_name():
    with pytest.raises(ValueError, match="samples=1: expected at least 2"):
        hutchinson(Explicit(np.eye(3)), samples=1)
    with pytest.raises(ValueError, match="min_samples=1: expected at least 2"):
        hutchinson(Explicit(np.eye(3)), samples=10, se=0.1, min_samples=1)
