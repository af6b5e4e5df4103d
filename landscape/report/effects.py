"""How large a difference between batch sizes is, and how large one the seeds could have seen.

The effect is the difference of a measure between the largest and the smallest batch size, paired by
seed: each seed trained at both gives one difference ``d_s = value(seed s, largest) - value(seed s,
smallest)``, so what the seeds share (the initialization, the data order) cancels.

- ``bootstrap``: the percentile interval of the mean difference over resampled seeds (the pairs are
  resampled whole, Efron & Tibshirani 1993, ch. 13).  With few seeds every one of the ``n^n`` equally
  likely resamples is enumerated (exact, no Monte-Carlo error); else ``samples`` are drawn from a
  seeded generator.  With 3 seeds it cannot reach beyond the range of the observed differences: it is
  a description of these seeds, narrower than a t interval, and says so by its width alone.
- ``detectable``: the minimum detectable effect (MDE), the smallest true mean difference that a
  two-sided paired t-test at level ``alpha`` on the ``n`` seeds' differences detects with probability
  ``power`` (80 %), given their standard deviation ``sd``: δ = λ sd / √n with λ the noncentrality at
  which the noncentral t with n - 1 degrees of freedom exceeds the critical value with that
  probability (Cohen 1988, ch. 2).  The paired t-test is the yardstick because it has a closed form
  for any n; it is a statement of the seeds' precision, in the measure's units, not of the rank tests'
  power (at 3 seeds the blocked τ over 4 batch sizes can see a consistent monotone trend that a t-test
  on two batch sizes would call noise, and the reverse).  An endpoint's MDE is at the level of Holm's
  first step (alpha over the number of endpoint tests), which a single real effect must pass.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.special import ndtr
from scipy.stats import chi2
from scipy.stats import t as student

EXACT_UP_TO = 50_000  # resamples enumerated up to this many: n^n, so up to 6 seeds
POWER = 0.8


def paired_differences(batch_sizes, values, seeds) -> tuple[np.ndarray, int | None, int | None]:
    """Per seed with a value at both, value at the largest batch size minus value at the smallest
    (a seed's values at one batch size averaged if it has several), and those two batch sizes."""
    x, y, s = (np.asarray(a) for a in (batch_sizes, values, seeds))
    keep = np.isfinite(y.astype(float))
    x, y, s = x[keep], y[keep].astype(float), s[keep]
    batches = sorted({int(b) for b in np.asarray(batch_sizes).tolist()})
    if len(batches) < 2:
        return np.array([]), None, None
    small, large = batches[0], batches[-1]
    out = []
    for seed in sorted(set(s.tolist())):
        a, b = y[(s == seed) & (x == large)], y[(s == seed) & (x == small)]
        if len(a) and len(b):
            out.append(a.mean() - b.mean())
    return np.asarray(out, dtype=float), small, large


def bootstrap(differences, level: float = 0.95, samples: int = 10000, seed: int = 0) -> tuple[float, float, bool]:
    """The percentile interval of the mean of ``differences`` over resamples of them, and whether every
    resample was enumerated; NaN with fewer than 2 differences."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n < 2:
        return math.nan, math.nan, False
    exact = n**n <= EXACT_UP_TO
    if exact:
        picks = np.array(list(itertools.product(range(n), repeat=n)), dtype=np.intp)
    else:
        picks = np.random.default_rng(seed).integers(0, n, size=(samples, n))
    means = d[picks].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high), exact


def detectable(sd: float, n: int, alpha: float, power: float = POWER) -> float:
    """The minimum detectable mean difference of ``n`` paired differences with standard deviation
    ``sd`` (two-sided paired t-test at ``alpha``, with probability ``power``); NaN below 2 pairs."""
    if n < 2 or not math.isfinite(sd):
        return math.nan
    return noncentrality(n - 1, alpha, power) * sd / math.sqrt(n)


@functools.lru_cache(maxsize=256)
def noncentrality(df: int, alpha: float, power: float = POWER) -> float:
    """The noncentrality λ at which a noncentral t with ``df`` degrees of freedom exceeds the two-sided
    critical value at ``alpha`` with probability ``power``."""
    critical = student.ppf(1 - alpha / 2, df)

    def short(ncp: float) -> float:
        """P(|T| > critical) - power, as an integral over the χ² of the variance (scipy's noncentral t
        returns NaN in far tails)."""

        def given(v: float) -> float:
            scale = critical * math.sqrt(v / df)
            return chi2.pdf(v, df) * (ndtr(ncp - scale) + ndtr(-ncp - scale))

        return quad(given, 0, math.inf, limit=200)[0] - power

    high = 1.0
    while short(high) < 0:
        high *= 2
    return float(brentq(short, 0.0, high, xtol=1e-10))


__all__ = ["paired_differences", "bootstrap", "detectable", "noncentrality", "POWER"]
