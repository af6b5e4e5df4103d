"""The tests of a scorecard: Kendall's τ-b and Friedman's statistic with p-values by permutation within
blocks, and Holm's adjustment for several tests.

Runs of one seed share an initialization and a data order, so they are not exchangeable with the runs
of another seed: under "batch size changes nothing", what may be shuffled is a seed's values among
that seed's batch sizes, not values across seeds.  Every p-value here is found that way, by
permutation *within blocks* (Good, *Permutation Tests*, 2000, §3.5), without the normal approximations
that a dozen runs do not justify.  With few runs every within-block order is enumerated (the product
over blocks of each block's size factorial, up to ``EXACT_UP_TO``) and the p-value is exact; otherwise
``samples`` orders are drawn from a seeded generator and the observed order counts as one of them,
``(k + 1) / (samples + 1)``, so it is never 0 (Phipson & Smyth, 2010).

- ``trend``: Kendall's τ-b between batch size and a measure over all runs of an arm (ties corrected for:
  batch sizes repeat once per seed), two-sided, blocks = seeds.  Kendall's S with a grouping variable
  is the Jonckheere-Terpstra statistic, so this is the JT test for a monotone trend, blocked.
- ``friedman``: Friedman's χ² with seeds as blocks and batch sizes as treatments (ranks within a seed):
  any difference among batch sizes, monotone or not (a peak at a middle batch size, which τ misses).
  Only seeds with a value at every batch size take part.
- ``within``: τ over the pairs of runs in the same stratum only (e.g. the same batch size), blocks =
  strata: whether a measure follows another (the gap) among networks trained alike, so that a
  correlation is not the batch size measured twice.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import rankdata

EXACT_UP_TO = 50_000  # within-block orders enumerated up to this many (3 seeds x 4 batch sizes: 24^3 = 13,824)
CHUNK = 2048  # orders scored at a time: bounded memory for large studies
TREND, ANY, GAP = "kendall_within_seeds", "friedman_within_seeds", "kendall_within_batch"  # methods, by name


@dataclass(frozen=True)
class Permutation:
    """A statistic and its within-block permutation p-value."""

    statistic: float  # NaN when it cannot be computed (a constant side, too few runs)
    p_value: float
    runs: int  # runs that took part (with a value; complete blocks for Friedman)
    permutations: int
    exact: bool

    def record(self) -> dict:
        return asdict(self)


NOT_COMPUTED = Permutation(math.nan, math.nan, 0, 0, False)


def _signs(values: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """sign(v[i] - v[j]) for the pairs (i, j), along the last axis."""
    return np.sign(values[..., i] - values[..., j])


def kendall_tau(x, y) -> float:
    """Kendall's τ-b of two sequences of equal length (ties in either corrected for)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(len(x), k=1)
    sx, sy = _signs(x, i, j), _signs(y, i, j)
    scale = math.sqrt(float((sx != 0).sum()) * float((sy != 0).sum()))
    return float((sx * sy).sum() / scale) if scale else math.nan


def block_orders(blocks, samples: int = 10000, seed: int = 0) -> tuple[np.ndarray, bool]:
    """Orders (rows) that shuffle positions only within their block: ``y[order]`` is a within-block
    permutation of ``y``.  Every such order (the first is the identity) when there are at most
    ``EXACT_UP_TO``, and True; else ``samples`` seeded random ones, and False.  Read-only: shared
    between the measures of one design."""
    return _orders(tuple(np.asarray(blocks).tolist()), samples, seed)


@functools.lru_cache(maxsize=64)
def _orders(blocks: tuple, samples: int, seed: int) -> tuple[np.ndarray, bool]:
    labels = np.asarray(blocks, dtype=object)
    groups = [np.flatnonzero(labels == b) for b in dict.fromkeys(blocks)]
    sizes = [math.factorial(len(g)) for g in groups]
    count, n = math.prod(sizes), len(blocks)
    orders = np.tile(np.arange(n, dtype=np.intp), (count if count <= EXACT_UP_TO else samples, 1))
    if count <= EXACT_UP_TO:
        which = np.unravel_index(np.arange(count), sizes)  # the row's choice of shuffle in every block
        for g, pick in zip(groups, which):
            orders[:, g] = np.array(list(itertools.permutations(g)), dtype=np.intp).reshape(-1, len(g))[pick]
    else:
        rng = np.random.default_rng(seed)
        for g in groups:
            orders[:, g] = g[np.argsort(rng.random((samples, len(g))), axis=1)]
    orders.flags.writeable = False
    return orders, count <= EXACT_UP_TO


def permutation_test(statistic, y, blocks, samples: int = 10000, seed: int = 0, two_sided: bool = True) -> Permutation:
    """``statistic`` (vectorized over leading axes) of ``y`` and its p-value over within-block orders:
    the share with a statistic at least as extreme (``|s| >= |observed|`` two-sided, ``s >= observed``
    otherwise)."""
    y = np.asarray(y, dtype=float)
    observed = float(statistic(y))
    if math.isnan(observed):
        return Permutation(math.nan, math.nan, len(y), 0, False)
    orders, exact = block_orders(blocks, samples, seed)
    tolerance = 1e-9 * max(1.0, abs(observed))  # the observed order itself counts, whatever the rounding
    extreme = 0
    for start in range(0, len(orders), CHUNK):
        scores = statistic(y[orders[start : start + CHUNK]])
        hit = np.abs(scores) >= abs(observed) - tolerance if two_sided else scores >= observed - tolerance
        extreme += int(hit.sum())
    if exact:
        return Permutation(observed, extreme / len(orders), len(y), len(orders), True)
    return Permutation(observed, (extreme + 1) / (samples + 1), len(y), samples, False)


def _finite(*columns):
    keep = np.all([np.isfinite(np.asarray(c, dtype=float)) for c in columns], axis=0)
    return [np.asarray(c)[keep] for c in columns]


def trend(batch_sizes, values, seeds, samples: int = 10000, seed: int = 0) -> Permutation:
    """Kendall's τ-b between batch size and ``values`` over the runs with a value; two-sided p-value by
    permutation of each seed's values among that seed's batch sizes."""
    x, y, blocks = _finite(batch_sizes, values, seeds)
    if len(y) < 3:
        return Permutation(math.nan, math.nan, len(y), 0, False)
    i, j = np.triu_indices(len(x), k=1)
    sx = _signs(x.astype(float), i, j)
    sy = _signs(y, i, j)
    scale = math.sqrt(float((sx != 0).sum()) * float((sy != 0).sum()))  # shuffling y keeps its ties

    def tau(v):
        return (_signs(v, i, j) * sx).sum(axis=-1) / scale if scale else np.full(v.shape[:-1], math.nan)

    return permutation_test(tau, y, blocks, samples, seed)


def within(x, y, strata, samples: int = 10000, seed: int = 0) -> Permutation:
    """τ between ``x`` and ``y`` over the pairs of runs in the same stratum only,
    Σ sign(Δx) sign(Δy) / sqrt(#pairs untied in x · #pairs untied in y); two-sided p-value by permuting
    ``y`` within strata."""
    x, y, strata = _finite(x, y, strata)
    i, j = np.triu_indices(len(y), k=1)
    same = strata[i] == strata[j]
    i, j = i[same], j[same]
    sx, sy = _signs(x.astype(float), i, j), _signs(y, i, j)
    scale = math.sqrt(float((sx != 0).sum()) * float((sy != 0).sum()))
    if not scale:
        return Permutation(math.nan, math.nan, len(y), 0, False)
    return permutation_test(lambda v: (_signs(v, i, j) * sx).sum(axis=-1) / scale, y, strata, samples, seed)


def friedman(batch_sizes, values, seeds, samples: int = 10000, seed: int = 0) -> Permutation:
    """Friedman's χ² (ties corrected for) with seeds as blocks, over the seeds with a value at every batch
    size (a seed's values at one batch size averaged if it has several); its p-value by permutation
    within seeds, the exact distribution rather than χ²'s approximation.  NaN with fewer than 2 such
    seeds or 2 batch sizes, or when every seed's values are all tied."""
    x, y, s = _finite(batch_sizes, values, seeds)
    batches = sorted(set(x.tolist()))
    rows = []
    for block in sorted(set(s.tolist())):
        cells = [y[(s == block) & (x == b)] for b in batches]
        if all(len(c) for c in cells):
            rows.append([c.mean() for c in cells])
    table = np.array(rows, dtype=float).reshape(len(rows), len(batches))
    n, k = table.shape
    if n < 2 or k < 2:
        return Permutation(math.nan, math.nan, n * k, 0, False)
    ranks = np.apply_along_axis(rankdata, 1, table)
    ties = sum(float((c**3 - c).sum()) for c in (np.unique(row, return_counts=True)[1] for row in table))
    correction = 1 - ties / (n * k * (k * k - 1))
    if correction <= 0:
        return Permutation(math.nan, math.nan, n * k, 0, False)

    def q(r):
        sums = r.reshape(*r.shape[:-1], n, k).sum(axis=-2)
        return (12 / (n * k * (k + 1)) * (sums**2).sum(axis=-1) - 3 * n * (k + 1)) / correction

    return permutation_test(q, ranks.ravel(), np.repeat(np.arange(n), k), samples, seed, two_sided=False)


def holm(p_values) -> list[float]:
    """Holm's step-down adjustment (1979): the i-th smallest of m p-values times (m - i + 1), made
    non-decreasing in that order and capped at 1; NaN stays NaN and does not count among the m."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(len(p), math.nan)
    tested = np.flatnonzero(np.isfinite(p))
    m, running = len(tested), 0.0
    for rank, index in enumerate(tested[np.argsort(p[tested], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[index]))
        out[index] = running
    return out.tolist()


def mean_sd(values) -> tuple[float, float, int]:
    """Mean, sample standard deviation (ddof 1; NaN for one value) and count of the finite ``values``."""
    v = np.asarray([a for a in values if a is not None and math.isfinite(a)], dtype=float)
    if not len(v):
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else math.nan, len(v)


__all__ = [
    "Permutation",
    "NOT_COMPUTED",
    "kendall_tau",
    "block_orders",
    "permutation_test",
    "trend",
    "within",
    "friedman",
    "holm",
    "mean_sd",
    "EXACT_UP_TO",
    "TREND",
    "ANY",
    "GAP",
]
