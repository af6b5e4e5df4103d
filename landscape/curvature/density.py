"""The Hessian's spectral density by stochastic Lanczos quadrature (Lin, Saad, Yang 2016; Ghorbani,
Krishnan, Xiao 2019; Yao et al. 2020, PyHessian).

For a random unit vector v, m steps of Lanczos from v give a tridiagonal T whose eigenvalues θ_k
(nodes) and the squared first components of its eigenvectors τ_k (weights) form the Gauss quadrature
of the measure vᵀ δ(H − t) v: averaged over several v it estimates the density of eigenvalues
φ(t) = (1/n) Σ_i δ(t − λ_i).  The density is reported as its nodes and weights (exact information)
and drawn smoothed by a Gaussian of width ``sigma``.

The Lanczos recurrence here keeps every basis vector and reorthogonalizes against all of them at each
step (m is tens, so this costs m vectors of the parameters' size): without it the nodes of a
finite-precision run repeat and the weights are wrong.  It yields only T; the extreme eigenvalues
themselves come from ARPACK (``eigen.py``).  The vectors are drawn from ``seed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Density:
    nodes: np.ndarray  # (runs, m) Ritz values
    weights: np.ndarray  # (runs, m) quadrature weights, each row summing to 1
    steps: int
    runs: int
    products: int

    def smoothed(self, grid: np.ndarray, sigma: float) -> np.ndarray:
        """φ on ``grid``: the quadrature's nodes broadened by Gaussians of width ``sigma``, averaged
        over the runs (integrates to 1 over the real line)."""
        t = np.asarray(grid, dtype=np.float64)[:, None]
        out = np.zeros(len(t))
        for nodes, weights in zip(self.nodes, self.weights):
            out += (weights * np.exp(-0.5 * ((t - nodes) / sigma) ** 2)).sum(axis=1)
        return out / (self.runs * sigma * math.sqrt(2 * math.pi))

    def record(self) -> dict:
        return {
            "steps": self.steps,
            "runs": self.runs,
            "products": self.products,
            "nodes": self.nodes.tolist(),
            "weights": self.weights.tolist(),
        }


def lanczos_tridiagonal(matvec, v0: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Diagonal and off-diagonal of the Lanczos tridiagonal T after ``steps`` steps from ``v0``, with
    full reorthogonalization; stops early (a smaller T) when the Krylov space is exhausted."""
    basis = [v0 / np.linalg.norm(v0)]
    alphas, betas = [], []
    for j in range(steps):
        w = matvec(basis[j])
        alpha = float(basis[j] @ w)
        alphas.append(alpha)
        Q = np.array(basis)
        w = w - Q.T @ (Q @ w)
        w = w - Q.T @ (Q @ w)  # twice is enough (Kahan, Parlett)
        beta = float(np.linalg.norm(w))
        if j == steps - 1 or beta < 1e-12 * max(1.0, abs(alpha)):
            break
        betas.append(beta)
        basis.append(w / beta)
    return np.array(alphas), np.array(betas)


def slq(hessian, steps: int = 80, runs: int = 4, seed: int = 0) -> Density:
    """Stochastic Lanczos quadrature of ``hessian`` (a ``Hessian``): ``runs`` random vectors, ``steps``
    Lanczos steps each (at most the dimension)."""
    from scipy.linalg import eigh_tridiagonal

    if steps < 1 or runs < 1:
        raise ValueError(f"steps={steps}, runs={runs}: expected positive numbers")
    steps = min(steps, hessian.dim)
    rng = np.random.default_rng(seed)
    start = hessian.products
    nodes, weights = np.full((runs, steps), np.nan), np.zeros((runs, steps))
    for r in range(runs):
        alphas, betas = lanczos_tridiagonal(hessian.matvec, rng.standard_normal(hessian.dim), steps)
        theta, vectors = eigh_tridiagonal(alphas, betas)
        nodes[r, : len(theta)] = theta
        weights[r, : len(theta)] = vectors[0] ** 2
    nodes = np.where(np.isnan(nodes), 0.0, nodes)  # an early stop: the missing nodes carry no weight
    return Density(nodes, weights, steps, runs, hessian.products - start)


__all__ = ["Density", "slq", "lanczos_tridiagonal"]
