"""Contour levels and the colour scale that several panels share, and the style that chooses them.

As in the reference code, ``levels = arange(vmin, vmax + tiny, vlevel)``; what is not given is chosen
from the data: a round step, and a top level that one diverged corner does not decide.

The scale is logarithmic by default where the values span decades (``log="auto"``, ``log_scale``): a
trained network's basin sits at a loss of 0.001-0.1 and the grid's edge at 10-50, and on a linear scale
the whole basin is one colour (or one flat stretch of a curve).  The 1-D figures follow the same rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib import colormaps
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ..errors import InputError, UsageError
from . import log_ticks, plain_number

CMAP = colormaps["viridis"]
AUTO_LEVELS = 20  # about this many levels when none are given
MAX_LEVELS = 500  # more than this is a typo in --vlevel, not a wish
AUTO = "auto"  # the scale's default: log where the values span more than DECADES decades, else linear
DECADES = 2.0


def spans_decades(arrays, decades: float = DECADES) -> bool:
    """Whether the finite values of ``arrays`` are all positive and the largest is more than
    ``10 ** decades`` times the smallest (NaN, not computed, and inf, diverged, are left out)."""
    finite = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays] or [np.empty(0)])
    finite = finite[np.isfinite(finite)]
    if finite.size == 0 or not finite.min() > 0:
        return False
    return bool(finite.max() > finite.min() * 10.0**decades)


def log_scale(log, arrays, lowest: float | None = None) -> bool:
    """The scale a figure uses: ``log`` when it is True or False; for ``"auto"``, log where the values
    span decades (``spans_decades``) and a given lower limit ``lowest`` is positive."""
    if log != AUTO:
        return bool(log)
    return (lowest is None or lowest > 0) and spans_decades(arrays)


def log_axis(axis, arrays) -> None:
    """Ticks of a log-scaled ``axis`` drawn over ``arrays``: at 1, 2 and 5 times powers of ten within three
    decades, at the powers of ten alone beyond (where 1-2-5 labels would crowd), written plainly."""
    finite = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays] or [np.empty(0)])
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if finite.size and finite.max() > 1e3 * finite.min():
        axis.set_major_locator(LogLocator(base=10.0))
        axis.set_major_formatter(FuncFormatter(plain_number))
        axis.set_minor_formatter(NullFormatter())
    else:
        log_ticks(axis)


@dataclass(frozen=True)
class Style2D:
    """Levels and words of a 2-D figure; ``None`` = chosen from the data."""

    vmin: float | None = None
    vmax: float | None = None
    vlevel: float | None = None
    log: bool | str = AUTO  # True, False, or "auto": log where the values span decades and no vlevel is given
    title: str | None = None
    columns: int | None = None  # panels per row when several surfaces are drawn (default: all in one row)

    def __post_init__(self):
        if not (isinstance(self.log, bool) or self.log == AUTO):
            raise UsageError(f"log {self.log!r}: expected True, False or {AUTO!r}")
        for flag in ("vmin", "vmax", "vlevel"):
            value = getattr(self, flag)
            if value is not None and not math.isfinite(value):
                raise UsageError(f"--{flag} {value}: expected a finite number")
        if self.vlevel is not None and not self.vlevel > 0:
            raise UsageError(f"--vlevel {self.vlevel:g}: expected a positive step between contour levels")
        if self.vmin is not None and self.vmax is not None and not self.vmin < self.vmax:
            raise UsageError(f"--vmin {self.vmin:g} must be smaller than --vmax {self.vmax:g}")
        if self.log is True and self.vmin is not None and self.vmin <= 0:
            raise UsageError(f"--vmin {self.vmin:g} with --log: expected a positive value")
        if self.log is True and self.vmax is not None and self.vmax <= 0:
            raise UsageError(f"--vmax {self.vmax:g} with --log: expected a positive value")

    def uses_log(self, arrays) -> bool:
        """Whether ``arrays`` are drawn on a log scale: as given, or for "auto" where the values within the
        given limits span decades, no ``vlevel`` is given (a step is in the values' units unless --log
        says decades) and the given limits are positive."""
        if self.log != AUTO:
            return bool(self.log)
        if self.vlevel is not None or (self.vmax is not None and self.vmax <= 0):
            return False
        low = -np.inf if self.vmin is None else self.vmin
        high = np.inf if self.vmax is None else self.vmax
        return log_scale(AUTO, [np.clip(np.asarray(a, dtype=float), low, high) for a in arrays], self.vmin)


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
