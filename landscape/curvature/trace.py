"""The Hessian's trace by Hutchinson's estimator (Hutchinson 1990; Avron and Toledo 2011).

For Rademacher vectors z (entries ±1 with probability 1/2), E[zᵀHz] = tr(H); the mean of m samples
estimates the trace with standard error s/√m, s the samples' standard deviation.  The vectors come
from ``seed``: ranks draw the same ones and a rerun repeats the estimate.

With ``se`` the estimate stops as soon as its standard error is at most ``se`` times its magnitude
(a relative standard error: ``se=0.01`` is a trace known to about 1 %), after at least ``min_samples``
samples, ``samples`` then being the most it draws.  A relative rule because a trace's scale is unknown
beforehand; a minimum because a standard error from a handful of samples is itself too uncertain to
trust (with 10 samples it is off by more than 20 % about a third of the time).  Stopping on the
observed error biases the estimate slightly towards runs whose samples happened to agree; with the
minimum of 10 this is small against the error it reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from . import estimate

MIN_SAMPLES = 10  # the fewest samples whose standard error may stop the estimate


@dataclass(frozen=True)
class Trace:
    value: float  # the mean of the samples zᵀHz
    stderr: float  # their standard deviation / sqrt(samples)
    samples: int
    products: int  # Hessian-vector products spent (one per sample)
    se: float | None = None  # the relative standard error that stops it (None: all samples drawn)
    max_samples: int | None = None  # the most samples it would draw
    dtype: str | None = None  # the products' precision (float32 or float64)

    def record(self) -> dict:
        return {
            "trace": self.value,
            "stderr": self.stderr,
            "samples": self.samples,
            "products": self.products,
            "se": self.se,
            "max_samples": self.max_samples,
            "dtype": self.dtype,
        }


def hutchinson(
    hessian, samples: int = 100, seed: int = 0, se: float | None = None, min_samples: int = MIN_SAMPLES
) -> Trace:
    """Hutchinson's trace of ``hessian`` (any object with ``matvec``, ``dim`` and ``products``) from
    ``samples`` Rademacher vectors, or fewer: with ``se``, it stops once the standard error is at most
    ``se`` · |trace| and at least ``min_samples`` were drawn."""
    if samples < 2:
        raise ValueError(f"samples={samples}: expected at least 2 (a standard error needs two)")
    if se is not None and not se > 0:
        raise ValueError(f"se={se}: expected a positive relative standard error, or None")
    if min_samples < 2:
        raise ValueError(f"min_samples={min_samples}: expected at least 2")
    rng = np.random.default_rng(seed)
    values = []
    start = hessian.products
    for _ in range(samples):
        z = rng.integers(0, 2, hessian.dim).astype(np.float64) * 2 - 1
        # the dot product in torch, on its threads: numpy's BLAS would start threads that compete with them
        values.append(float(torch.as_tensor(z) @ torch.as_tensor(np.asarray(hessian.matvec(z), dtype=np.float64))))
        m = len(values)
        if se is not None and m >= min_samples:
            if estimate.stderr(values) <= se * abs(float(np.mean(values))):
                break
    values = np.asarray(values)
    dtype = getattr(hessian, "dtype", None)
    return Trace(
        float(values.mean()),
        estimate.stderr(values),
        len(values),
        hessian.products - start,
        se,
        samples,
        str(dtype).removeprefix("torch.") if dtype is not None else None,
    )


__all__ = ["Trace", "hutchinson", "MIN_SAMPLES"]
