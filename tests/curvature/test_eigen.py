"""The extreme eigenvalues behind one call (``extreme``, ``extremes``) on explicit matrices: each end by
its own run with its own products and eigenvectors, the true residual measured where the tolerance comes
near the products' rounding, ARPACK's miss completed by LOBPCG and said so, and bad arguments refused."""

import numpy as np
import pytest
import torch

from landscape.curvature import extreme, extremes

from .test_lanczos import Matrix, spectrum


class Float32(Matrix):
    """The same matrix, declaring float32 products, as a ``Hessian(dtype='float32')`` does."""

    dtype = torch.float32


def test_both_ends_come_from_their_own_runs_with_their_eigenvectors_and_products():
    h = Matrix(spectrum())
    found = extremes(h, k=2, which="both", tol=1e-10)
    assert list(found) == ["top", "bottom"]
    assert np.allclose(found["top"].values, [40.0, 25.0], rtol=1e-10)
    assert np.allclose(found["bottom"].values, [-3.0, -1.5], rtol=1e-10)
    assert found["top"].products + found["bottom"].products == h.products
    for end in found.values():
        for value, vector in zip(end.values, end.vectors.T):
            assert np.allclose(h.dense @ vector, value * vector, atol=1e-8 * abs(value))
    record = found["bottom"].record()
    assert record["end"] == "bottom" and record["values"] == found["bottom"].values and "vectors" not in record


def test_a_tolerance_near_float32_rounding_measures_the_true_residual_one_product_per_value():
    """float32 products: a tol below 1000 roundings (1.2e-4) is not trusted to the Ritz estimate."""
    plain, single = extreme(Matrix(spectrum()), k=2, tol=1e-5), extreme(Float32(spectrum()), k=2, tol=1e-5)
    assert single.products == plain.products + 2 and single.dtype == "float32" and plain.dtype is None
    assert single.values == plain.values and single.converged
    assert extreme(Float32(spectrum()), k=2, tol=1e-3).products == extreme(Matrix(spectrum()), k=2, tol=1e-3).products


def test_arpack_missing_its_tolerance_is_completed_by_lobpcg_and_reported_not_converged():
    """A dense spectrum, one restart: ARPACK converges no pair; LOBPCG's Rayleigh-Ritz values lie below the
    top eigenvalues they estimate (Cauchy interlacing), and the residuals are the true ones."""
    eigenvalues = np.linspace(0.0, 1.0, 200)
    h = Matrix(eigenvalues)
    found = extreme(h, k=3, end="top", tol=1e-14, maxiter=1, method="eigsh")
    assert found.method == "eigsh+lobpcg" and not found.converged
    assert "ARPACK did not reach tol=1e-14" in found.note and "estimates by LOBPCG" in found.note
    assert found.values == sorted(found.values, reverse=True)
    assert all(v <= top + 1e-12 for v, top in zip(found.values, eigenvalues[::-1]))
    for value, vector, residual in zip(found.values, found.vectors.T, found.residuals):
        v = vector / np.linalg.norm(vector)
        assert residual == pytest.approx(np.linalg.norm(h.dense @ v - value * v) / abs(value), rel=1e-10)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda h: extreme(h, k=0), "k=0: expected 1 <= k < 20"),
        (lambda h: extreme(h, k=20), "k=20: expected 1 <= k < 20"),
        (lambda h: extreme(h, end="middle"), "end='middle': expected top or bottom"),
        (lambda h: extreme(h, maxiter=0), "maxiter=0: expected a positive number or None"),
        (lambda h: extremes(h, which="middle"), "which=middle: expected one of top, bottom, both"),
    ],
)
def test_bad_arguments_are_refused_before_any_product(call, words):
    h = Matrix(spectrum(20))
    with pytest.raises(ValueError, match=words):
        call(h)
    assert h.products == 0
