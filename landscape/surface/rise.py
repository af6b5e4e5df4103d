"""The rise around the centre of a computed surface: how fast loss and error grow away from the minimum.

All figures are differences from the centre of the surface (the trained model),
along filter-normalized directions, so networks of different weight scales
compare fairly (Li et al. 2018, Sec. 5).  Hessian and epsilon-sharpness
measures belong elsewhere; these need nothing but the surface file.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..io.surface_file import Surface


def _centre(surface: Surface, name: str) -> float:
    values = surface.values[name]
    if surface.ndim == 1:
        if not np.any(surface.x == 0):
            raise InputError(f"{surface.path}: the x coordinates do not include 0, the trained model")
        return float(values[np.flatnonzero(surface.x == 0)[0]])
    i, j = np.flatnonzero(surface.x == 0), np.flatnonzero(surface.y == 0)
    if not (len(i) and len(j)):
        raise InputError(f"{surface.path}: the grid does not include (0, 0), the trained model")
    return float(values[i[0], j[0]])


def rise_1d(surface: Surface, name: str, alpha: float) -> float:
    """Mean of ``f(-alpha)`` and ``f(+alpha)`` minus ``f(0)`` (linear interpolation between points)."""
    values = surface.values[name]
    both = np.interp([-alpha, alpha], surface.x, values)
    return float(both.mean() - _centre(surface, name))


def mean_rise_2d(surface: Surface, name: str, radius: float) -> float:
    """Mean of ``f - f(0, 0)`` over the grid points within ``radius`` of the origin."""
    a, b = np.meshgrid(surface.x, surface.y, indexing="ij")
    inside = np.hypot(a, b) <= radius
    return float(np.nanmean(surface.values[name][inside]) - _centre(surface, name))


def summary_1d(surface: Surface) -> dict[str, float]:
    out = {"train_loss_at_minimum": _centre(surface, "train_loss")}
    for alpha in (0.25, 0.5, 1.0):
        if surface.x[0] <= -alpha and surface.x[-1] >= alpha:
            out[f"train_loss_rise_at_{alpha:g}"] = rise_1d(surface, "train_loss", alpha)
            if "train_acc" in surface.values:
                out[f"train_error_rise_at_{alpha:g}"] = -rise_1d(surface, "train_acc", alpha)
    if "test_acc" in surface.values:
        out["test_error_at_minimum"] = 100.0 - _centre(surface, "test_acc")
    return out


def summary_2d(surface: Surface, radius: float = 0.5) -> dict[str, float]:
    return {
        "train_loss_at_minimum": _centre(surface, "train_loss"),
        f"mean_train_loss_rise_within_{radius:g}": mean_rise_2d(surface, "train_loss", radius),
    }
