"""Big-batch SGD's norm test (De, Yadav, Jacobs, Goldstein 2017, "Automated Inference with Adaptive
Batches", Sec. 3): grow the batch so the gradient's signal-to-noise ratio stays constant.

The mini-batch gradient ``G`` of a batch of ``B`` samples is a descent direction with high
probability when its variance is small next to its squared norm:

    Var(G) = sigma^2 / B  <=  theta^2 |G|^2,

``sigma^2`` being the trace of the covariance of one sample's gradient.  When the test fails the batch
grows to the size that passes it, ``B' = sigma^2 / (theta^2 |G|^2)``; it never shrinks.

``sigma^2`` is estimated without per-sample gradients from the step's micro-batches, which the ranks
compute anyway: ``M`` micro-batch gradients ``g_j`` (each the mean over its ``m`` samples) have sample
variance ``S = sum_j |g_j - G|^2 / (M - 1)`` with ``E[S] = sigma^2 / m``, so ``sigma^2 ~ m S``.  The
ranks contribute ``sum_j |g_j|^2`` and ``M`` through one all-reduce beside the gradient itself, and
``sum_j |g_j - G|^2 = sum_j |g_j|^2 - M |G|^2`` when ``G`` is the mean of the ``g_j``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class NormTest:
    """One step's test: the variance estimate, the bound, and the batch for the next step."""

    sample_variance: float  # sigma^2: trace of one sample's gradient covariance, estimated
    gradient_sq: float  # |G|^2
    passed: bool
    next_batch: int


def norm_test(
    sum_sq: float, count: int, gradient_sq: float, micro_batch: int, batch: int, theta: float, max_batch: int
) -> NormTest:
    """The norm test of one step from its ``count`` micro-batch gradients of ``micro_batch`` samples.

    ``sum_sq`` is ``sum_j |g_j|^2``, ``gradient_sq`` is ``|G|^2`` of their mean.  The next batch is a
    whole number of micro-batches, at least ``batch``,
    at most ``max_batch``.  With fewer than two micro-batches there is no variance to estimate: the
    batch stays.
    """
    if count < 2:
        return NormTest(math.nan, gradient_sq, True, batch)
    spread = max(sum_sq - count * gradient_sq, 0.0) / (count - 1)
    sigma2 = micro_batch * spread
    passed = sigma2 / batch <= theta * theta * gradient_sq
    if passed:
        return NormTest(sigma2, gradient_sq, True, batch)
    wanted = sigma2 / (theta * theta * gradient_sq) if gradient_sq > 0 else math.inf
    grown = max_batch if not math.isfinite(wanted) else micro_batch * math.ceil(wanted / micro_batch)
    return NormTest(sigma2, gradient_sq, False, max(batch, min(grown, max_batch)))


__all__ = ["NormTest", "norm_test"]
