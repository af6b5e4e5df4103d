"""Stochastic Lanczos quadrature on explicit spectra: a spectrum of three distinct eigenvalues exhausts
the Krylov space in three steps, so its nodes are those eigenvalues and its weights the starting vector's
share in each eigenspace; the quadrature matches the moments vᵀHᵖv up to degree 2m - 1; the smoothed
density is the weighted Gaussians, averaged over runs."""

import math

import numpy as np
import pytest

from landscape.curvature import slq
from landscape.curvature.density import Density


class Diagonal:
    """diag(eigenvalues) behind the Hessian's interface; ``seen`` keeps every vector it was applied to."""

    def __init__(self, eigenvalues):
        self.d = np.asarray(eigenvalues, dtype=np.float64)
        self.dim, self.products, self.seen = len(self.d), 0, []

    def matvec(self, v):
        self.products += 1
        self.seen.append(v.copy())
        return self.d * v


def test_three_distinct_eigenvalues_are_the_nodes_and_the_weights_the_start_vectors_shares():
    eigenvalues = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 5.0])
    h = Diagonal(eigenvalues)
    found = slq(h, steps=50, runs=4, seed=2)
    assert found.steps == 6 and found.nodes.shape == (4, 6)  # at most the dimension
    assert found.products == h.products == 4 * 3  # the Krylov space is exhausted after three steps
    for run, start in enumerate(h.seen[::3]):  # each run's first product is of its unit start vector
        kept = found.weights[run] > 0
        assert kept.sum() == 3 and np.all(found.nodes[run][~kept] == 0.0)
        nodes, weights = found.nodes[run][kept], found.weights[run][kept]
        assert np.allclose(nodes, [1.0, 2.0, 5.0], atol=1e-12)
        shares = [np.sum(start[eigenvalues == lam] ** 2) for lam in (1.0, 2.0, 5.0)]
        assert np.allclose(weights, shares, atol=1e-12) and weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_m_steps_of_quadrature_are_exact_for_the_moments_up_to_degree_2m_minus_1():
    """Gauss quadrature: Σ τₖ θₖᵖ = v̂ᵀHᵖv̂ for p ≤ 2m - 1, v̂ the unit start vector of the run."""
    eigenvalues = np.linspace(-1.0, 3.0, 30)
    h = Diagonal(eigenvalues)
    found = slq(h, steps=4, runs=2, seed=0)
    assert found.products == 8
    for run in range(2):
        start = h.seen[4 * run]
        for p in range(8):
            exact = float(np.sum(start**2 * eigenvalues**p))
            assert np.sum(found.weights[run] * found.nodes[run] ** p) == pytest.approx(exact, rel=1e-10, abs=1e-12)


def test_the_smoothed_density_is_the_weighted_gaussians_averaged_over_the_runs():
    density = Density(np.array([[0.0, 3.0], [1.0, 1.0]]), np.array([[0.25, 0.75], [0.5, 0.5]]), 2, 2, 4)
    sigma, t = 0.5, np.array([-1.0, 0.0, 1.0, 2.5])

    def gaussian(centre):
        return np.exp(-0.5 * ((t - centre) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))

    expected = (0.25 * gaussian(0.0) + 0.75 * gaussian(3.0) + gaussian(1.0)) / 2
    assert np.allclose(density.smoothed(t, sigma), expected, rtol=1e-14)
    grid = np.linspace(-6.0, 9.0, 3001)
    assert density.smoothed(grid, sigma).sum() * (grid[1] - grid[0]) == pytest.approx(1.0, abs=1e-9)
    assert density.record() == {
        "steps": 2,
        "runs": 2,
        "products": 4,
        "nodes": [[0.0, 3.0], [1.0, 1.0]],
        "weights": [[0.25, 0.75], [0.5, 0.5]],
    }


def test_no_steps_or_no_runs_are_refused_naming_both():
    for steps, runs in ((0, 4), (10, 0)):
        with pytest.raises(ValueError, match=f"steps={steps}, runs={runs}: expected positive numbers"):
            slq(Diagonal([1.0, 2.0]), steps=steps, runs=runs)
