"""Sharpness in a neighbourhood of the weights, as each paper defines it.

- ``epsilon``: Keskar et al. (2017), Sec. 2.2.  The largest loss rise in the box
  |δᵢ| ≤ ε (|wᵢ| + 1), reported as ``100 · (max f(w + δ) − f(w)) / (1 + f(w))``; in the full space,
  or in a random subspace of dimension p (δ = A y with A an n×p Gaussian matrix, the box on y being
  ε (|A⁺w| + 1), their "A" variant).  The maximum is searched by L-BFGS-B (``scipy.optimize``) from
  δ = 0 with the exact gradient, within the box.
- ``adaptive``: worst-case adaptive sharpness (Kwon et al. 2021; Andriushchenko et al. 2023): the
  largest loss rise in the box |δᵢ| ≤ ρ |wᵢ|, the raw rise ``max f(w + δ) − f(w)``.
- ``average``: the loss and 0-1 error rise at radius r along m random filter-normalized directions
  (Li et al.'s directions): their mean and standard error over the directions.

The two worst-case searches run in coordinates scaled to the box (δ = s ⊙ u, |uᵢ| ≤ ε or ρ, s the
per-weight scale), so a network whose BatchNorm makes it invariant to rescaling its conv filters
gives the same search, step by step, whatever the filters' scale: the adaptive measure is
scale-invariant in fact, not only in definition.  The loss is the mean over the whole data set, as
``hessian.Hessian`` computes it (BatchNorm in eval mode).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .. import directions as dirs

MEASURES = ("epsilon", "adaptive", "average")


@dataclass(frozen=True)
class Sharpness:
    measure: str
    value: float  # epsilon: Keskar's percentage; adaptive: the loss rise; average: mean rise
    stderr: float  # average: over the directions; NaN for the worst-case searches
    loss: float  # f(w)
    settings: dict  # every hyper-parameter used
    evaluations: int  # loss (and gradient) evaluations spent
    error_rise: float = math.nan  # average: mean 0-1 error rise (points of %), where the data has classes

    def record(self) -> dict:
        return asdict(self)


def _search(hessian, scale: np.ndarray, bound: float, basis: np.ndarray | None, maxiter: int) -> tuple[float, int]:
    """max over |u| <= bound of f(w + scale * (basis @ u or u)) by L-BFGS-B; returns (max f, evaluations)."""
    from scipy.optimize import minimize

    count = [0]
    w0 = hessian.flat_params()

    def negative(u: np.ndarray) -> tuple[float, np.ndarray]:
        count[0] += 1
        step = basis @ u if basis is not None else u
        value, gradient = hessian.loss_and_gradient(w0 + scale * step)
        g = scale * gradient
        return -value, -(basis.T @ g if basis is not None else g)

    size = basis.shape[1] if basis is not None else len(w0)
    result = minimize(
        negative,
        np.zeros(size),
        jac=True,
        method="L-BFGS-B",
        bounds=[(-bound, bound)] * size,
        options={"maxiter": maxiter},
    )
    return -float(result.fun), count[0]


def epsilon_sharpness(
    hessian, epsilon: float = 1e-3, subspace: int | None = None, maxiter: int = 10, seed: int = 0
) -> Sharpness:
    """Keskar et al.'s ε-sharpness in the full space, or in a random ``subspace`` of that dimension."""
    w = hessian.flat_params()
    base, _ = hessian.loss_and_gradient(w)
    if subspace:
        A = np.random.default_rng(seed).standard_normal((len(w), subspace))
        pinv_w = np.linalg.pinv(A) @ w
        basis = A * (np.abs(pinv_w) + 1.0)[None, :]  # y = (|A⁺w| + 1) u, |u| <= ε
        best, count = _search(hessian, np.ones_like(w), epsilon, basis, maxiter)
    else:
        best, count = _search(hessian, np.abs(w) + 1.0, epsilon, None, maxiter)
    value = 100.0 * (best - base) / (1.0 + base)
    return Sharpness(
        "epsilon",
        value,
        math.nan,
        base,
        {"epsilon": epsilon, "subspace": subspace or 0, "maxiter": maxiter, "seed": seed, "method": "L-BFGS-B"},
        count + 1,
    )


def adaptive_sharpness(hessian, rho: float = 0.01, maxiter: int = 10) -> Sharpness:
    """Worst-case adaptive sharpness: max f(w + δ) − f(w) over |δᵢ| ≤ ρ |wᵢ|."""
    w = hessian.flat_params()
    base, _ = hessian.loss_and_gradient(w)
    best, count = _search(hessian, np.abs(w), rho, None, maxiter)
    return Sharpness(
        "adaptive", best - base, math.nan, base, {"rho": rho, "maxiter": maxiter, "method": "L-BFGS-B"}, count + 1
    )


def average_rise(
    hessian, radius: float = 0.5, directions: int = 20, norm: str = "filter", ignore: str = "biasbn", seed: int = 0
) -> Sharpness:
    """The loss (and 0-1 error) rise at ``radius`` along random ``norm``-normalized directions, averaged."""
    w = hessian.flat_params()
    origin = {n: p.detach().to("cpu", torch.float64) for n, p in hessian.params.items()}
    base, _ = hessian.loss_and_gradient(w)
    base_error = hessian.error(w)
    generator = torch.Generator().manual_seed(seed)
    rises, error_rises = [], []
    for _ in range(directions):
        d = dirs.random_direction(origin, norm, ignore, generator)
        flat = torch.cat([d[n].reshape(-1) for n in hessian.names]).numpy()
        value, _ = hessian.loss_and_gradient(w + radius * flat)
        rises.append(value - base)
        error_rises.append(hessian.error(w + radius * flat) - base_error)
    rises, error_rises = np.asarray(rises), np.asarray(error_rises)
    spread = float(rises.std(ddof=1) / math.sqrt(directions)) if directions > 1 else math.nan
    return Sharpness(
        "average",
        float(rises.mean()),
        spread,
        base,
        {"radius": radius, "directions": directions, "norm": norm, "ignore": ignore, "seed": seed},
        2 * directions + 2,
        float(error_rises.mean()),
    )


__all__ = ["Sharpness", "MEASURES", "epsilon_sharpness", "adaptive_sharpness", "average_rise"]
