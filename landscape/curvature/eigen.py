"""The Hessian's extreme eigenvalues: Lanczos of our own (``lanczos.py``) by default, ARPACK
(``scipy.sparse.linalg.eigsh``) on request or where Lanczos does not converge.

The top k (largest algebraic) and the bottom k (smallest algebraic) are each computed directly: no
shift trick (the reference code's λmin = λmax + eig(H − λmax I) is only as good as its λmax estimate,
and it sums per-batch eigenvalues, which are not the eigenvalues of the sum).

``method='lanczos'`` stops as soon as every wanted Ritz value has a relative Ritz residual
|β s_m| / |θ| ≤ ``tol``, tested after every product: the top eigenvalue of a network's Hessian to 1e-3
takes ten to twenty products, where ARPACK fills a basis of at least 20 before its first test.  Its
``residuals`` are those Ritz residuals, which equal the true ‖Hv − λv‖ / |λ| up to the rounding of the
products (full reorthogonalization); where ``tol`` comes within 1000 roundings of the Hessian's dtype
the true residual is measured instead, one product per value.  ``method='eigsh'`` is ARPACK, whose
residuals are always measured (one product each).  ``stop='value'`` makes ``tol`` bound the
eigenvalue's estimated error min(r, r²/gap) / |θ| instead of the residual r (``lanczos.py`` says when
that estimate holds): fewer products for an eigenvalue asked to a tolerance, as PyHessian's ``tol``.

At a trained classifier the Hessian has an exact null space (softmax's shift invariance, dead units)
and many eigenvalues near zero; Lanczos may then miss its tolerance.  That is reported, not hidden:
``converged`` says whether the tolerance was met, and the residuals say by how much.  When Lanczos
misses it within ``maxiter`` steps, ARPACK continues from its best Ritz vector; when ARPACK misses it
too, the best estimates are those of its converged pairs, completed by LOBPCG from the same library
(``scipy.sparse.linalg.lobpcg``).  The starting vector is drawn from ``seed``: ranks agree and reruns
repeat.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from .lanczos import lanczos

WHICH = ("top", "bottom", "both")
METHODS = ("lanczos", "eigsh")
LANCZOS_STEPS = 300  # the most Lanczos steps (products, basis vectors) by default before ARPACK takes over


@dataclass
class Eigenvalues:
    """Eigenvalues of one end of the spectrum, the most extreme first, with how they were found."""

    end: str  # top or bottom
    values: list[float]
    residuals: list[float]  # |H v - lambda v| / max(|lambda|, 1e-30), per value (lanczos: the Ritz estimate)
    converged: bool
    products: int  # Hessian-vector products spent on this end
    tol: float
    method: str = "eigsh"  # lanczos, eigsh, or with +eigsh / +lobpcg where the one before did not converge
    note: str = ""
    vectors: np.ndarray | None = field(default=None, repr=False)
    dtype: str | None = None  # the products' precision (float32 or float64)

    def record(self) -> dict:
        return {
            "end": self.end,
            "values": self.values,
            "residuals": self.residuals,
            "converged": self.converged,
            "products": self.products,
            "tol": self.tol,
            "method": self.method,
            "note": self.note,
            "dtype": self.dtype,
        }


def _residuals(matvec, values: np.ndarray, vectors: np.ndarray) -> list[float]:
    out = []
    for lam, v in zip(values, vectors.T):
        v = v / np.linalg.norm(v)
        out.append(float(np.linalg.norm(matvec(v) - lam * v) / max(abs(lam), 1e-30)))
    return out


def _order(values: np.ndarray, vectors: np.ndarray, end: str) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(values)[::-1] if end == "top" else np.argsort(values)
    return values[order], vectors[:, order]


def _dtype(hessian) -> str | None:
    dtype = getattr(hessian, "dtype", None)
    return str(dtype).removeprefix("torch.") if dtype is not None else None


def _needs_true_residuals(hessian, tol: float) -> bool:
    """Whether ``tol`` is within 1000 roundings of the products' dtype, where a Ritz residual may be
    below the true one by the products' own error."""
    dtype = getattr(hessian, "dtype", torch.float64)
    return tol < 1e3 * torch.finfo(dtype if isinstance(dtype, torch.dtype) else torch.float64).eps


def extreme(
    hessian,
    k: int = 1,
    end: str = "top",
    tol: float = 1e-6,
    maxiter: int | None = None,
    seed: int = 0,
    method: str = "lanczos",
    stop: str = "residual",
) -> Eigenvalues:
    """The k most extreme eigenvalues at one ``end`` of the spectrum of ``hessian`` (a ``Hessian``, or any
    object with ``matvec``, ``dim`` and a ``products`` count).  ``maxiter``: Lanczos steps at most
    (default 300), or ARPACK's restarts.  ``stop``: what ``tol`` bounds in Lanczos, the relative
    residual (``'residual'``, as ARPACK) or the eigenvalue's estimated error (``'value'``, ``lanczos.py``)."""
    n = hessian.dim
    if not 1 <= k < n:
        raise ValueError(f"k={k}: expected 1 <= k < {n} (the number of parameters)")
    if end not in ("top", "bottom"):
        raise ValueError(f"end={end!r}: expected top or bottom")
    if method not in METHODS:
        raise ValueError(f"method={method!r}: expected one of {', '.join(METHODS)}")
    if maxiter is not None and maxiter < 1:
        raise ValueError(f"maxiter={maxiter}: expected a positive number or None")
    v0 = np.random.default_rng(seed).standard_normal(n)
    start = hessian.products
    if method == "lanczos":
        steps = min(n, maxiter if maxiter is not None else LANCZOS_STEPS)
        if steps >= k:
            ritz = lanczos(hessian.matvec, v0, k, end, tol, steps, stop)
            if ritz.converged:
                residuals = [float(r) for r in ritz.residuals]
                if _needs_true_residuals(hessian, tol):
                    residuals = _residuals(hessian.matvec, ritz.values, ritz.vectors)
                # the true residuals may not exceed the Ritz ones by more than the products' rounding
                limit = max(100 * tol, 1e-6) if stop == "residual" else max(100 * max(ritz.residuals), 1e-6)
                converged = max(residuals) <= limit
                note = "" if converged else f"a residual of {max(residuals):.1e} is above {limit:.0e}"
                return Eigenvalues(
                    end,
                    [float(v) for v in ritz.values],
                    residuals,
                    converged,
                    hessian.products - start,
                    tol,
                    "lanczos" if stop == "residual" else "lanczos(value)",
                    note,
                    ritz.vectors,
                    _dtype(hessian),
                )
            v0 = ritz.vectors[:, 0]  # ARPACK goes on from the best Ritz vector
        found = _arpack(hessian, k, end, tol, maxiter, seed, v0)
        found.method = "lanczos+" + found.method
        found.note = f"Lanczos did not reach tol={tol:g} within {steps} steps; " + (found.note or "ARPACK did")
        found.products = hessian.products - start
        return found
    return _arpack(hessian, k, end, tol, maxiter, seed, v0)


def _arpack(hessian, k: int, end: str, tol: float, maxiter: int | None, seed: int, v0: np.ndarray) -> Eigenvalues:
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh, lobpcg

    n = hessian.dim
    op = hessian.operator() if hasattr(hessian, "operator") else _operator(hessian)
    start = hessian.products
    which = "LA" if end == "top" else "SA"
    try:
        values, vectors = eigsh(op, k=k, which=which, tol=tol, maxiter=maxiter, v0=v0)
        values, vectors = _order(values, vectors, end)
        converged, method, note = True, "eigsh", ""
    except ArpackNoConvergence as exc:
        got_values, got_vectors = np.asarray(exc.eigenvalues), np.asarray(exc.eigenvectors)
        missing = k - len(got_values)
        note = f"ARPACK did not reach tol={tol:g} within its iterations ({len(got_values)} of {k} converged)"
        if missing > 0:
            rng = np.random.default_rng(seed + 1)
            block = rng.standard_normal((n, k))
            with warnings.catch_warnings():  # its own "not reaching the tolerance": reported below, by residual
                warnings.simplefilter("ignore", UserWarning)
                lo_values, lo_vectors = lobpcg(op, block, largest=(end == "top"), tol=tol, maxiter=maxiter or 200)
            values, vectors = np.asarray(lo_values), np.asarray(lo_vectors)
            method = "eigsh+lobpcg"
            note += "; estimates by LOBPCG"
        else:
            values, vectors, method = got_values, got_vectors, "eigsh"
        values, vectors = _order(values, vectors, end)
        converged = False
    residuals = _residuals(hessian.matvec, values, vectors)
    limit = max(100 * tol, 1e-6)  # ARPACK's tol bounds the Ritz estimate; a true residual far above it is not met
    if converged and max(residuals) > limit:
        converged, note = False, f"a residual of {max(residuals):.1e} is above {limit:.0e}"
    return Eigenvalues(
        end,
        [float(v) for v in values],
        residuals,
        converged,
        hessian.products - start,
        tol,
        method,
        note,
        vectors,
        _dtype(hessian),
    )


def _operator(hessian):
    from scipy.sparse.linalg import LinearOperator

    n = hessian.dim
    return LinearOperator((n, n), matvec=hessian.matvec, rmatvec=hessian.matvec, dtype=np.float64)


def extremes(
    hessian,
    k: int = 1,
    which: str = "both",
    tol: float = 1e-6,
    maxiter: int | None = None,
    seed: int = 0,
    method: str = "lanczos",
    stop: str = "residual",
) -> dict[str, Eigenvalues]:
    """``{'top': ..., 'bottom': ...}`` (or one of them, as ``which`` says), each end by its own run."""
    if which not in WHICH:
        raise ValueError(f"which={which}: expected one of {', '.join(WHICH)}")
    ends = ("top", "bottom") if which == "both" else (which,)
    return {end: extreme(hessian, k, end, tol, maxiter, seed, method, stop) for end in ends}


__all__ = ["Eigenvalues", "extreme", "extremes", "WHICH", "METHODS"]
