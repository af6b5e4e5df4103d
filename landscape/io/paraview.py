"""Surfaces for ParaView: VTK XML files written with ``pyevtk``.

A 2-D surface becomes a structured grid (``.vts``): its points are (α, β, z) with z the chosen
quantity (optionally log10), so ParaView shows the landscape as a 3-D sheet straight away; every
quantity of the file and the ``done`` mask are point data, NaN where a point was not computed.
Points not computed, and with ``zmax`` the points above it, are hidden (VTK's ``vtkGhostType``
blanking, which ParaView honours): the sheet has a hole there, never a flat lid that would read as a
plateau of the landscape.  Any
grid shape is kept as it is: point (i, j) is (x[i], y[j]), x varying fastest as VTK stores it.  A
1-D surface becomes a polyline (``.vtu``) through (α, z, 0) with the same point data.

Why ``pyevtk``: it writes VTK's XML formats (structured grids included) with binary data from numpy
arrays in 20 kB of pure Python; ``vtk`` itself would do it too but is a 140 MB wheel to install for
writing a file, and ``meshio`` writes unstructured meshes only, which would lose the grid's structure.
The tests read the files back with VTK's own readers.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError, UsageError, param
from .surface_file import Surface

GHOST, HIDDEN_POINT = "vtkGhostType", 2  # VTK's name for blanking, and its flag for a hidden point


def quantities(surface: Surface) -> dict[str, np.ndarray]:
    """The file's quantities and, where it has an accuracy, the error: 100 − accuracy (``train_err``)."""
    out = dict(surface.values)
    for split in ("train", "test"):
        if f"{split}_acc" in out:
            out[f"{split}_err"] = 100.0 - out[f"{split}_acc"]
    return out


def heights(surface: Surface, name: str, log: bool = False, zmax: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The z of every point, the quantity ``name`` (log10 with ``log``), and the points to hide: not
    computed (or not finite), or above ``zmax``; hidden points get a finite height all the same."""
    values = quantities(surface)
    if name not in values:
        raise UsageError(
            f"{param('z')}={name}: {surface.path} has no such quantity; expected one of {', '.join(values)}"
        )
    z = values[name].astype(np.float64).copy()
    if log:
        if np.any(z[np.isfinite(z)] <= 0):
            raise UsageError(f"log: {name} has values <= 0 in {surface.path}; a log height needs positive values")
        z = np.log10(z)
    hidden = ~np.isfinite(z)
    if zmax is not None:
        hidden |= np.isfinite(z) & (z > (np.log10(zmax) if log else zmax))
    if hidden.all():
        raise InputError(
            f"{surface.path}: no point of {name} is computed"
            + (f" at or below zmax {zmax:g}" if zmax is not None else "")
            + "; nothing to export"
        )
    z[hidden] = z[~hidden].max()
    return z, hidden


def write_vtk(surface: Surface, stem: str, z: str = "train_loss", log: bool = False, zmax: float | None = None) -> str:
    """Write ``stem.vts`` (2-D) or ``stem.vtu`` (1-D); return its path."""
    from pyevtk.hl import gridToVTK, polyLinesToVTK

    height, hidden = heights(surface, z, log, zmax)
    data = {name: np.ascontiguousarray(values, dtype=np.float64) for name, values in surface.values.items()}
    data["done"] = surface.done.astype(np.float64)
    data[GHOST] = np.where(hidden, HIDDEN_POINT, 0).astype(np.uint8)
    if surface.ndim == 2:
        X, Y = np.meshgrid(surface.x, surface.y, indexing="ij")
        shape = (len(surface.x), len(surface.y), 1)
        point = {k: np.asfortranarray(v.reshape(shape)) for k, v in data.items()}
        gridToVTK(
            stem,
            np.asfortranarray(X.reshape(shape)),
            np.asfortranarray(Y.reshape(shape)),
            np.asfortranarray(height.reshape(shape)),
            pointData=point,
        )
        return stem + ".vts"
    n = len(surface.x)
    polyLinesToVTK(
        stem,
        np.ascontiguousarray(surface.x, dtype=np.float64),
        np.ascontiguousarray(height),
        np.zeros(n),
        pointsPerLine=np.array([n]),
        pointData={k: np.ascontiguousarray(v) for k, v in data.items()},
    )
    return stem + ".vtu"


__all__ = ["quantities", "heights", "write_vtk"]
