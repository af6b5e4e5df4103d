"""The Hessian's extreme eigenvalues by Lanczos (ARPACK through ``scipy.sparse.linalg.eigsh``).

The top k (``which='LA'``, largest algebraic) and the bottom k (``'SA'``, smallest algebraic) are each
computed directly: no shift trick (the reference code's λmin = λmax + eig(H − λmax I) is only as good
as its λmax estimate, and it sums per-batch eigenvalues, which are not the eigenvalues of the sum).

At a trained classifier the Hessian has an exact null space (softmax's shift invariance, dead units)
and many eigenvalues near zero; Lanczos may then miss its tolerance.  That is reported, not hidden:
each eigenvalue comes with its residual |Hv − λv| / max(|λ|, tiny), and ``converged`` says whether
ARPACK met the tolerance.  When it does not, the best estimates are those of the converged pairs,
completed by LOBPCG from the same library (``scipy.sparse.linalg.lobpcg``), whose residuals say how
good they are.  The starting vector is drawn from ``seed``: ranks agree and reruns repeat.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

WHICH = ("top", "bottom", "both")


@dataclass
class Eigenvalues:
    """Eigenvalues of one end of the spectrum, the most extreme first, with how they were found."""

    end: str  # top or bottom
    values: list[float]
    residuals: list[float]  # |H v - lambda v| / max(|lambda|, 1e-30), per value
    converged: bool
    products: int  # Hessian-vector products spent on this end
    tol: float
    method: str = "eigsh"  # eigsh, or eigsh+lobpcg when ARPACK did not converge
    note: str = ""
    vectors: np.ndarray | None = field(default=None, repr=False)

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


def extreme(
    hessian, k: int = 1, end: str = "top", tol: float = 1e-6, maxiter: int | None = None, seed: int = 0
) -> Eigenvalues:
    """The k most extreme eigenvalues at one ``end`` of the spectrum of ``hessian`` (a ``Hessian``)."""
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh, lobpcg

    n = hessian.dim
    if not 1 <= k < n:
        raise ValueError(f"k={k}: expected 1 <= k < {n} (the number of parameters)")
    op = hessian.operator()
    v0 = np.random.default_rng(seed).standard_normal(n)
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
        end, [float(v) for v in values], residuals, converged, hessian.products - start, tol, method, note, vectors
    )


def extremes(
    hessian, k: int = 1, which: str = "both", tol: float = 1e-6, maxiter: int | None = None, seed: int = 0
) -> dict[str, Eigenvalues]:
    """``{'top': ..., 'bottom': ...}`` (or one of them, as ``which`` says)."""
    if which not in WHICH:
        raise ValueError(f"which={which}: expected one of {', '.join(WHICH)}")
    ends = ("top", "bottom") if which == "both" else (which,)
    return {end: extreme(hessian, k, end, tol, maxiter, seed) for end in ends}


__all__ = ["Eigenvalues", "extreme", "extremes", "WHICH"]
