"""Our Lanczos and the trace's stopping rule against closed forms: an explicit symmetric matrix with known
eigenvalues, behind the same interface as a ``Hessian`` (``matvec``, ``dim``, ``products``)."""

import numpy as np
import pytest

from landscape.curvature import extreme, extremes, hutchinson
from landscape.curvature.lanczos import lanczos


class Matrix:
    """A symmetric matrix as a Hessian: Q diag(eigenvalues) Qᵀ with a seeded orthogonal Q."""

    def __init__(self, eigenvalues, seed=0):
        n = len(eigenvalues)
        q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
        self.dense = (q * np.asarray(eigenvalues, dtype=np.float64)) @ q.T
        self.dense = (self.dense + self.dense.T) / 2
        self.dim, self.products = n, 0

    def matvec(self, v):
        self.products += 1
        return self.dense @ v


def spectrum(n=200, seed=1):
    """A network-like spectrum: a few outliers at both ends over a bulk near zero."""
    bulk = np.random.default_rng(seed).uniform(-0.05, 0.3, n - 5)
    return np.concatenate([[40.0, 25.0, 12.0], bulk, [-3.0, -1.5]])


def test_the_top_eigenvalues_match_eigvalsh_and_meet_the_ritz_residual():
    h = Matrix(spectrum())
    exact = np.linalg.eigvalsh(h.dense)
    found = extreme(h, k=3, end="top", tol=1e-10)
    assert found.converged and found.method == "lanczos"
    assert np.allclose(found.values, exact[::-1][:3], rtol=1e-10)
    assert max(found.residuals) <= 1e-10
    assert found.products < 60  # well-separated outliers: far fewer products than the dimension


def test_the_ritz_residual_is_the_true_residual():
    h = Matrix(spectrum())
    ritz = lanczos(h.matvec, np.random.default_rng(0).standard_normal(h.dim), k=2, end="top", tol=1e-3)
    assert ritz.converged and ritz.steps == h.products
    for theta, y, r in zip(ritz.values, ritz.vectors.T, ritz.residuals):
        true = np.linalg.norm(h.dense @ y - theta * y) / abs(theta)
        assert r <= 1e-3 and true == pytest.approx(r, rel=1e-6, abs=1e-14)


def test_a_loose_tolerance_stops_early_and_the_error_is_within_it():
    h = Matrix(spectrum())
    loose = extreme(h, k=1, end="top", tol=1e-3)
    tight = extreme(Matrix(spectrum()), k=1, end="top", tol=1e-10)
    assert loose.converged and loose.products < tight.products
    assert abs(loose.values[0] - 40.0) <= 1e-3 * 40.0


def test_the_bottom_end_is_found_directly_with_negative_values():
    h = Matrix(spectrum())
    found = extremes(h, k=2, which="bottom", tol=1e-9)["bottom"]
    assert found.converged
    assert np.allclose(found.values, [-3.0, -1.5], rtol=1e-9)


def test_a_small_operator_exhausts_its_krylov_space_exactly():
    h = Matrix([5.0, 4.0, 3.0, 2.0, 1.0, 0.5])
    found = extreme(h, k=2, end="top", tol=1e-14)
    assert found.converged and np.allclose(found.values, [5.0, 4.0], rtol=1e-12)
    assert found.products <= h.dim + 2  # tol near float64 rounding: the two true residuals measured


def test_arpack_takes_over_where_lanczos_misses_its_tolerance():
    h = Matrix(spectrum())
    found = extreme(h, k=1, end="top", tol=1e-12, maxiter=3)
    assert found.method.startswith("lanczos+eigsh") and "Lanczos did not reach" in found.note
    assert found.values[0] == pytest.approx(40.0, rel=1e-8)
    arpack = extreme(Matrix(spectrum()), k=1, end="top", tol=1e-10, method="eigsh")
    assert arpack.method == "eigsh" and arpack.values[0] == pytest.approx(40.0, rel=1e-10)


def test_bad_arguments_are_refused_in_one_line():
    h = Matrix(spectrum(20))
    with pytest.raises(ValueError, match="method='arnoldi'"):
        extreme(h, method="arnoldi")
    with pytest.raises(ValueError, match="tol=0"):
        lanczos(h.matvec, np.ones(h.dim), tol=0)
    with pytest.raises(ValueError, match="end='middle'"):
        lanczos(h.matvec, np.ones(h.dim), end="middle")


def test_the_trace_stops_at_its_standard_error_on_an_easy_case():
    """A diagonal-dominated matrix: zᵀHz varies little around tr(H), so a 1 % standard error comes
    after the minimum of 10 samples; the reported error meets it and the trace is within it."""
    h = Matrix(np.linspace(1.0, 2.0, 100))
    found = hutchinson(h, samples=500, seed=0, se=0.01)
    assert found.samples == 10 == found.products and found.max_samples == 500
    assert found.stderr <= 0.01 * abs(found.value)
    assert abs(found.value - np.trace(h.dense)) < 4 * found.stderr
    assert found.record()["se"] == 0.01


def test_the_trace_draws_more_samples_for_a_tighter_error_and_all_without_one():
    h = Matrix(spectrum(100))
    tight = hutchinson(h, samples=2000, seed=0, se=0.02)
    assert 10 < tight.samples < 2000 and tight.stderr <= 0.02 * abs(tight.value)
    assert abs(tight.value - np.trace(h.dense)) < 4 * tight.stderr
    assert hutchinson(Matrix(spectrum(100)), samples=30, seed=0).samples == 30
    with pytest.raises(ValueError, match="se=-1"):
        hutchinson(h, samples=30, se=-1)


def test_stopping_on_the_value_takes_fewer_products_and_meets_the_tolerance():
    """An outlier well apart from the rest: min(r, r²/gap) bounds its error long before r does."""
    rule = {}
    for stop in ("residual", "value"):
        h = Matrix(spectrum())
        rule[stop] = extreme(h, k=1, end="top", tol=1e-6, stop=stop)
        assert rule[stop].converged and abs(rule[stop].values[0] - 40.0) <= 1e-6 * 40.0
    assert rule["value"].products < rule["residual"].products
    assert rule["value"].method == "lanczos(value)" and rule["value"].residuals[0] > 1e-6
    with pytest.raises(ValueError, match="stop='eigen'"):
        lanczos(Matrix(spectrum(20)).matvec, np.ones(20), stop="eigen")
