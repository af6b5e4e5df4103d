"""The Hessian's trace by Hutchinson's estimator (Hutchinson 1990; Avron and Toledo 2011).

For Rademacher vectors z (entries ±1 with probability 1/2), E[zᵀHz] = tr(H); the mean of m samples
estimates the trace with standard error s/√m, s the samples' standard deviation.  The vectors come
from ``seed``: ranks draw the same ones and a rerun repeats the estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Trace:
    value: float  # the mean of the samples zᵀHz
    stderr: float  # their standard deviation / sqrt(samples)
    samples: int
    products: int  # Hessian-vector products spent (one per sample)

    def record(self) -> dict:
        return {"trace": self.value, "stderr": self.stderr, "samples": self.samples, "products": self.products}


def hutchinson(hessian, samples: int = 100, seed: int = 0) -> Trace:
    if samples < 2:
        raise ValueError(f"samples={samples}: expected at least 2 (a standard error needs two)")
    rng = np.random.default_rng(seed)
    values = []
    start = hessian.products
    for _ in range(samples):
        z = rng.integers(0, 2, hessian.dim).astype(np.float64) * 2 - 1
        values.append(float(z @ hessian.matvec(z)))
    values = np.asarray(values)
    return Trace(
        float(values.mean()), float(values.std(ddof=1) / math.sqrt(samples)), samples, hessian.products - start
    )


__all__ = ["Trace", "hutchinson"]
