"""The extreme eigenvalues of a symmetric operator by Lanczos with full reorthogonalization, stopped on
the Ritz residual (Lanczos 1950; Paige 1971; Parlett, *The Symmetric Eigenvalue Problem*, ch. 13).

After m steps from a unit vector q₁, the basis Q = [q₁ … q_m] and the tridiagonal T = QᵀHQ satisfy
H Q = Q T + β_m q_{m+1} e_mᵀ.  An eigenpair (θ, s) of T gives the Ritz pair (θ, y = Q s), and

    ‖H y − θ y‖ = |β_m| |s_m|,

the residual of the Ritz pair for the price of T's eigenvectors: no product.  With ``stop='residual'``
(the default) the run stops when every wanted Ritz value (the k largest, or the k smallest) has
|β_m s_m| ≤ tol · |θ|, the relative residual that ARPACK's ``tol`` bounds too.  A residual r bounds
the eigenvalue's error by r, and by r²/gap where the gap to the rest of the spectrum is known (Kato,
Temple), so at tol = 1e-3 the top eigenvalue of a network's Hessian (an outlier, well apart from the
bulk) is right to far better than 1e-3.  ``stop='value'`` asks for the eigenvalue alone: it stops when
min(r, r²/gap) ≤ tol · |θ|, the gap taken to the nearest other Ritz value.  That gap is an estimate
(the Ritz values below the top one move up as the run goes on, so it is at first too wide and the
bound too small): it fits outliers well apart from the rest, as a network's top eigenvalues are, and
is the rule to ask for an eigenvalue to a tolerance in the fewest products.  The residuals reported
are the Ritz residuals either way.

Every new vector is orthogonalized against the whole basis, twice ("twice is enough": Kahan, Parlett):
without it the basis loses orthogonality as soon as a Ritz value converges, the converged value
reappears as a spurious copy, and the identity above no longer holds.  With it, the Ritz residual equals
the true residual ‖H y − θ y‖ up to the rounding of the products themselves; ``extreme`` measures the
true one where the tolerance is near that rounding.  The basis costs m vectors of the operator's size
(m is tens for the extreme eigenvalues of a network's Hessian).  Compared with ARPACK's implicitly
restarted Lanczos (``scipy.sparse.linalg.eigsh``), no restart throws away the Krylov space and the test
is made after every product, where ARPACK first fills a basis of at least 20 vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

ENDS = ("top", "bottom")
STOPS = ("residual", "value")
TINY = 1e-30  # the floor of |θ| in a relative residual


@dataclass
class Ritz:
    """The wanted Ritz pairs of one Lanczos run, the most extreme first."""

    values: np.ndarray  # (k,)
    vectors: np.ndarray  # (n, k), unit columns
    residuals: np.ndarray  # (k,) |β_m s_m| / max(|θ|, 1e-30): relative Ritz residuals
    converged: bool  # every wanted residual <= tol (or the Krylov space was exhausted)
    steps: int  # Lanczos steps = products spent


def _wanted(theta: np.ndarray, k: int, end: str) -> np.ndarray:
    """Indices of the k wanted Ritz values in ``theta`` (ascending, as ``eigh_tridiagonal`` returns)."""
    return np.arange(len(theta))[::-1][:k] if end == "top" else np.arange(len(theta))[:k]


def _value_errors(theta: np.ndarray, wanted: np.ndarray, residuals: np.ndarray) -> np.ndarray:
    """Relative error estimates min(r, r²/gap) / |θ| of the wanted Ritz values (r relative), the gap to
    the nearest other Ritz value (none yet: the residual alone)."""
    out = residuals.copy()
    if len(theta) < 2:
        return out
    for i, w in enumerate(wanted):
        others = np.delete(theta, w)
        gap = np.abs(others - theta[w]).min() / max(abs(theta[w]), TINY)
        if gap > 0:
            out[i] = min(residuals[i], residuals[i] ** 2 / gap)
    return out


def lanczos(
    matvec: Callable[[np.ndarray], np.ndarray],
    v0: np.ndarray,
    k: int = 1,
    end: str = "top",
    tol: float = 1e-6,
    steps: int = 300,
    stop: str = "residual",
) -> Ritz:
    """The ``k`` largest (``end='top'``) or smallest (``'bottom'``) eigenvalues of the symmetric operator
    ``matvec`` from the start vector ``v0``, at most ``steps`` products, stopped when each wanted Ritz
    value's relative residual is at most ``tol`` (``stop='residual'``), or its error estimate
    min(r, r²/gap) (``stop='value'``)."""
    from scipy.linalg import eigh_tridiagonal

    if end not in ENDS:
        raise ValueError(f"end={end!r}: expected one of {', '.join(ENDS)}")
    n = len(v0)
    if not 1 <= k <= n:
        raise ValueError(f"k={k}: expected 1 <= k <= {n} (the operator's dimension)")
    if stop not in STOPS:
        raise ValueError(f"stop={stop!r}: expected one of {', '.join(STOPS)}")
    if not tol > 0:
        raise ValueError(f"tol={tol}: expected a positive relative tolerance")
    steps = min(int(steps), n)
    if steps < k:
        raise ValueError(f"steps={steps}: expected at least k={k} Lanczos steps")
    # the vector algebra in torch, on the CPU threads torch is given: numpy's BLAS would start threads of
    # its own, which then compete with the products' threads for the same cores
    basis = torch.empty((steps, n), dtype=torch.float64)
    start = torch.as_tensor(np.asarray(v0, dtype=np.float64))
    norm = float(torch.linalg.vector_norm(start))
    if not norm > 0:
        raise ValueError("the start vector is zero")
    basis[0] = start / norm
    alphas, betas = np.empty(steps), np.empty(steps)
    for j in range(steps):
        w = torch.as_tensor(np.asarray(matvec(basis[j].numpy()), dtype=np.float64)).clone()
        alphas[j] = float(basis[j] @ w)
        Q = basis[: j + 1]
        w -= Q.T @ (Q @ w)
        w -= Q.T @ (Q @ w)  # twice is enough
        betas[j] = float(torch.linalg.vector_norm(w))
        m = j + 1
        theta, S = eigh_tridiagonal(alphas[:m], betas[: m - 1]) if m > 1 else (alphas[:1], np.ones((1, 1)))
        # the Krylov space is exhausted: Q spans an invariant subspace, T's eigenvalues are H's own
        exhausted = betas[j] <= 1e-12 * max(np.abs(theta).max(), TINY)
        if m >= k:
            wanted = _wanted(theta, k, end)
            residuals = np.abs(betas[j] * S[-1, wanted]) / np.maximum(np.abs(theta[wanted]), TINY)
            if exhausted:
                residuals = np.zeros(k)
            errors = residuals if stop == "residual" else _value_errors(theta, wanted, residuals)
            if np.all(errors <= tol) or m == steps:
                vectors = Q.T @ torch.as_tensor(np.ascontiguousarray(S[:, wanted]))
                vectors /= torch.linalg.vector_norm(vectors, dim=0)
                return Ritz(theta[wanted], vectors.numpy(), residuals, bool(np.all(errors <= tol)), m)
        if exhausted:  # fewer than k values yet: go on from a random vector orthogonal to the basis
            betas[j] = 0.0
            w = torch.as_tensor(np.random.default_rng(m).standard_normal(n))
            w -= Q.T @ (Q @ w)
            w -= Q.T @ (Q @ w)
            basis[j + 1] = w / torch.linalg.vector_norm(w)
        else:
            basis[j + 1] = w / betas[j]
    raise AssertionError("unreachable: the last step returns")  # pragma: no cover


__all__ = ["Ritz", "lanczos", "ENDS", "STOPS"]
