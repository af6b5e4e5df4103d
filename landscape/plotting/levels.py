"""Contour levels and the colour scale that several panels share, and the style that chooses them.

As in the reference code, ``levels = arange(vmin, vmax + tiny, vlevel)``; what is not given is chosen
from the data: a round step, and a top level that one diverged corner does not decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib import colormaps

from ..errors import InputError, UsageError
from . import plain_number

CMAP = colormaps["viridis"]
AUTO_LEVELS = 20  # about this many levels when none are given
MAX_LEVELS = 500  # more than this is a typo in --vlevel, not a wish


@dataclass(frozen=True)
class Style2D:
    """Levels and words of a 2-D figure; ``None`` = chosen from the data."""

    vmin: float | None = None
    vmax: float | None = None
    vlevel: float | None = None
    log: bool = False
    title: str | None = None
    columns: int | None = None  # panels per row when several surfaces are drawn (default: all in one row)

    def __post_init__(self):
        for flag in ("vmin", "vmax", "vlevel"):
            value = getattr(self, flag)
            if value is not None and not math.isfinite(value):
                raise UsageError(f"--{flag} {value}: expected a finite number")
        if self.vlevel is not None and not self.vlevel > 0:
            raise UsageError(f"--vlevel {self.vlevel:g}: expected a positive step between contour levels")
        if self.vmin is not None and self.vmax is not None and not self.vmin < self.vmax:
            raise UsageError(f"--vmin {self.vmin:g} must be smaller than --vmax {self.vmax:g}")
        if self.log and self.vmin is not None and self.vmin <= 0:
            raise UsageError(f"--vmin {self.vmin:g} with --log: expected a positive value")
        if self.log and self.vmax is not None and self.vmax <= 0:
            raise UsageError(f"--vmax {self.vmax:g} with --log: expected a positive value")


def _nice_step(span: float, count: int) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving about ``count`` levels."""
    raw = span / count
    power = 10.0 ** np.floor(np.log10(raw))
    for mult in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= mult * power * 1.0001:
            return mult * power
    return 10.0 * power


def _robust_max(finite: np.ndarray) -> float:
    """The top level: the maximum, unless a few diverged points dwarf the rest.

    A loss surface often explodes at one corner (loss 1e3 next to a bowl of 0.1-2);
    levels up to such a maximum leave the bowl as one colour.  Then the 95th
    percentile is used and the rest is shown as "above the top level".
    """
    lo, hi = float(finite.min()), float(finite.max())
    q = float(np.percentile(finite, 95))
    return hi if hi - lo <= 3.0 * (q - lo) else q


def levels_for(
    arrays: list[np.ndarray],
    vmin: float | None = None,
    vmax: float | None = None,
    vlevel: float | None = None,
    log: bool = False,
) -> np.ndarray:
    """Contour levels shared by all panels.

    As in the reference code, ``levels = arange(vmin, vmax + tiny, vlevel)``; what is
    not given is chosen from the finite data: ``vmin`` its minimum, ``vmax`` a robust
    maximum, ``vlevel`` a round step giving about 20 levels.  With ``log`` the levels
    are evenly spaced in log10 and ``vlevel`` is the step in decades (0.1 = 10 per decade).
    """
    Style2D(vmin, vmax, vlevel, log)  # the same checks as for flags
    finite = np.concatenate([a[np.isfinite(a)].ravel() for a in arrays])
    if log:
        finite = finite[finite > 0]
    if finite.size == 0 and (vmin is None or vmax is None):
        what = "positive finite" if log else "finite"
        raise InputError(f"no {what} values to choose contour levels from; give --vmin and --vmax")
    lo = vmin if vmin is not None else float(finite.min())
    hi = vmax if vmax is not None else _robust_max(finite)
    if hi <= lo and vmin is not None and vmax is None:
        hi = float(finite.max())  # the robust maximum fell below the given --vmin
    if hi <= lo:
        if vmax is not None:
            raise UsageError(f"--vmax {vmax:g} is not above the smallest value {lo:g}; expected a larger --vmax")
        if vmin is not None:
            raise UsageError(f"--vmin {vmin:g} is not below the largest value {hi:g}; expected a smaller --vmin")
        hi = lo * 10.0 if log else lo + max(abs(lo), 1.0)  # a flat surface: one band around its value
    where = f"between {lo:g} and {hi:g}"
    if log:
        lo, hi = np.log10(lo), np.log10(hi)
    step = vlevel if vlevel is not None else _nice_step(hi - lo, AUTO_LEVELS)
    if vmin is None:  # start at a round number (a round power of ten with --log) below the minimum
        lo = np.floor(lo / step + 1e-9) * step
    count = int(np.floor((hi - lo) / step + 1e-9)) + 1
    if count > MAX_LEVELS:
        raise UsageError(f"--vlevel {step:g} gives {count} contour levels {where}; expected at most {MAX_LEVELS}")
    levels = lo + step * np.arange(count)
    if count < 2:
        raise UsageError(f"--vlevel {step:g} leaves fewer than two contour levels {where}; expected a smaller step")
    return 10.0**levels if log else levels


def level_format(levels: np.ndarray, log: bool):
    """Labels as short as the levels allow: 0.5, 1.0, 1.5 rather than 0.5000001."""
    tolerance = 1e-9 * max(np.ptp(levels), 1e-300)
    for decimals in range(0, 5):
        if not log and np.allclose(levels, np.round(levels, decimals), rtol=0, atol=tolerance):
            return lambda v: f"{v:.{decimals}f}"
    return plain_number
