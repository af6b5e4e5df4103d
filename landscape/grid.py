"""The grid of direction coefficients: parsing ``--x=-1:1:51`` and indexing points.

Convention used everywhere: value ``[i, j]`` of a 2-D surface belongs to the
point ``(x[i], y[j])`` (C order, ``indexing='ij'``); point number ``k`` of the
flattened grid is ``(i, j) = divmod(k, len(y))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ConfigError, UsageError, param

EXAMPLE = "MIN:MAX:NUM, e.g. -1:1:51"
DEFAULT_X = "-1:1:51"
# A larger grid needs force=True (--force): it is more often a typo than a wish, and its file,
# its done mask and its list of points to do are all held whole.
MAX_POINTS = 1024 * 1024
BYTES_PER_POINT = 4 * 8 + 1 + 8  # four float64 quantities, the done mark and the checksum


LIMIT = 1e12  # the largest coefficient along a direction: beyond it no weight is a number a model computes with


@dataclass(frozen=True)
class Axis:
    """``num`` evenly spaced coefficients from ``lo`` to ``hi``, both included."""

    lo: float
    hi: float
    num: int

    @classmethod
    def parse(cls, spec: str, field: str = "x") -> Axis:
        parts = str(spec).split(":")
        if len(parts) != 3:
            raise ConfigError(field, spec, EXAMPLE)
        try:
            lo, hi = float(parts[0]), float(parts[1])
        except ValueError:
            raise ConfigError(field, spec, f"numbers for MIN and MAX ({EXAMPLE})") from None
        try:
            num = int(parts[2])
        except ValueError:
            raise ConfigError(field, spec, f"a whole number of points for NUM ({EXAMPLE})") from None
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ConfigError(field, spec, f"finite MIN and MAX ({EXAMPLE})")
        if num < 2:
            raise ConfigError(field, spec, f"NUM at least 2, got {num} ({EXAMPLE})")
        if not lo < hi:
            raise ConfigError(field, spec, f"MIN {parts[0]} below MAX {parts[1]} ({EXAMPLE})")
        # Every coefficient is a convex combination of lo*(n-1) and hi*(n-1), divided by n-1:
        # all are finite exactly when these two are.
        if not (np.isfinite(lo * (num - 1)) and np.isfinite(hi * (num - 1))) or max(abs(lo), abs(hi)) > LIMIT:
            raise ConfigError(
                field,
                spec,
                f"MIN and MAX small enough for every coefficient to be finite, at most {LIMIT:g} ({EXAMPLE})",
            )
        return cls(lo, hi, num)

    @property
    def spec(self) -> str:
        return f"{self.lo!r}:{self.hi!r}:{self.num}"  # repr: exact, so 1 and 1.0000001 differ

    def coordinates(self) -> np.ndarray:
        """Endpoints exact; the centre of a symmetric odd axis is exactly 0.

        ``(lo*(n-1-i) + hi*i) / (n-1)``: for ``lo == -hi`` the two products at the
        centre are exact negations of each other, so their sum is exactly 0.0.
        """
        i = np.arange(self.num, dtype=np.float64)
        n1 = self.num - 1
        return (self.lo * (n1 - i) + self.hi * i) / n1


@dataclass(frozen=True)
class Grid:
    """A 1-D (``y is None``) or 2-D grid of points ``(x[i], y[j])``."""

    x: Axis
    y: Axis | None = None

    @classmethod
    def parse(cls, x: str, y: str | None = None, force: bool = False) -> Grid:
        """The grid of ``x`` and ``y`` (``MIN:MAX:NUM``), refused beyond ``MAX_POINTS`` unless ``force``."""
        grid = cls(Axis.parse(x, "x"), None if y is None else Axis.parse(y, "y"))
        if grid.size > MAX_POINTS and not force:
            given = f"x={x}" + ("" if y is None else f" y={y}")
            raise UsageError(
                f"{given}: {grid.size:,} points, more than the {MAX_POINTS:,} allowed without {param('force')}; "
                f"the surface file would take about {_size(grid.size * BYTES_PER_POINT)}: choose a "
                f"smaller NUM, or give {param('force')} to compute it anyway",
            )
        return grid

    @property
    def ndim(self) -> int:
        return 1 if self.y is None else 2

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.x.num,) if self.y is None else (self.x.num, self.y.num)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def xcoordinates(self) -> np.ndarray:
        return self.x.coordinates()

    def ycoordinates(self) -> np.ndarray | None:
        return None if self.y is None else self.y.coordinates()

    def index(self, k: int) -> tuple[int, ...]:
        """Array index of flat point ``k``."""
        return tuple(int(v) for v in np.unravel_index(k, self.shape))

    def point(self, k: int) -> tuple[float, float]:
        """Coefficients ``(a, b)`` of flat point ``k``; ``b`` is 0 on a 1-D grid."""
        idx = self.index(k)
        a = float(self.xcoordinates()[idx[0]])
        b = 0.0 if self.y is None else float(self.ycoordinates()[idx[1]])
        return a, b

    def points(self, ks: np.ndarray) -> np.ndarray:
        """Coefficients of many flat points as an ``(n, 2)`` array."""
        ks = np.asarray(ks, dtype=np.int64)
        if self.y is None:
            return np.stack([self.xcoordinates()[ks], np.zeros(len(ks))], axis=1)
        i, j = np.unravel_index(ks, self.shape)
        return np.stack([self.xcoordinates()[i], self.ycoordinates()[j]], axis=1)


def _size(nbytes: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if nbytes < 1000 or unit == "TB":
            return f"{nbytes:,.0f} {unit}" if unit == "bytes" else f"{nbytes:,.1f} {unit}"
        nbytes /= 1000
    return ""
