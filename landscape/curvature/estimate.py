"""The standard error of a Monte Carlo estimate: the sample standard deviation of its draws over the
square root of their number (NaN for one draw). Hutchinson's trace, the per-layer traces, relative
flatness and the average-case sharpness measures report their values with it."""

from __future__ import annotations

import math

import numpy as np


def stderr(draws) -> float:
    """``std(draws, ddof=1) / sqrt(n)``: the standard error of the mean of ``draws``; NaN when n < 2."""
    values = np.asarray(draws, dtype=np.float64)
    return float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else math.nan


__all__ = ["stderr"]
