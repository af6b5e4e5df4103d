"""The statistics of a scorecard: mean and standard deviation over seeds, and Kendall's rank correlation
with a permutation p-value.

Kendall's τ-b counts, over all pairs of runs, whether two quantities move the same way (concordant)
or opposite ways (discordant), and corrects for ties: batch sizes repeat once per seed, so ties are
the rule here, not the exception.  Its p-value is found by permutation, without the normal
approximation that small studies (a dozen runs) do not justify: the measure's values are shuffled
among the runs and τ recomputed.  With few runs every permutation is enumerated and the p-value is
exact; otherwise ``samples`` random permutations are drawn from a seeded generator, and the p-value
counts the observed order as one of them, so it is never 0.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np

EXACT_UP_TO = 8  # 8! = 40,320 orders: enumerated; above, random permutations


@dataclass(frozen=True)
class Correlation:
    tau: float  # Kendall's τ-b; NaN when either side is constant or fewer than 3 runs have both values
    p_value: float  # two-sided: the share of permutations with |τ| at least the observed |τ|
    runs: int  # runs with both values (NaN values are left out)
    permutations: int
    exact: bool

    def record(self) -> dict:
        return asdict(self)


def _signs(values: np.ndarray) -> np.ndarray:
    """sign(v[i] - v[j]) for every pair i < j, along the last axis."""
    i, j = np.triu_indices(values.shape[-1], k=1)
    return np.sign(values[..., i] - values[..., j])


def kendall_tau(x, y) -> float:
    """Kendall's τ-b of two sequences of equal length (ties in either corrected for)."""
    sx, sy = _signs(np.asarray(x, dtype=float)), _signs(np.asarray(y, dtype=float))
    scale = math.sqrt(float((sx != 0).sum()) * float((sy != 0).sum()))
    return float((sx * sy).sum() / scale) if scale else math.nan


def correlation(x, y, samples: int = 10000, seed: int = 0) -> Correlation:
    """τ-b of ``x`` and ``y`` over the pairs where both are numbers, with its permutation p-value."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    tau = kendall_tau(x, y) if n >= 3 else math.nan
    if math.isnan(tau):
        return Correlation(tau, math.nan, n, 0, False)
    sx = _signs(x)
    scale = math.sqrt(float((sx != 0).sum()) * float((_signs(y) != 0).sum()))  # permuting y keeps its ties
    if n <= EXACT_UP_TO:
        orders = np.array(list(itertools.permutations(range(n))))
    else:
        rng = np.random.default_rng(seed)
        orders = np.argsort(rng.random((samples, n)), axis=1)
    taus = (_signs(y[orders]) * sx).sum(axis=1) / scale
    extreme = int((np.abs(taus) >= abs(tau) - 1e-12).sum())
    if n <= EXACT_UP_TO:
        return Correlation(tau, extreme / len(orders), n, len(orders), True)
    return Correlation(tau, (extreme + 1) / (samples + 1), n, samples, False)


def mean_sd(values) -> tuple[float, float, int]:
    """Mean, sample standard deviation (ddof 1; NaN for one value) and count of the finite ``values``."""
    v = np.asarray([a for a in values if a is not None and math.isfinite(a)], dtype=float)
    if not len(v):
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else math.nan, len(v)


__all__ = ["Correlation", "kendall_tau", "correlation", "mean_sd", "EXACT_UP_TO"]
