"""Surfaces for ParaView: VTK XML files (``.vts``, ``.vtu``) written with the standard library's XML writer.

A 2-D surface becomes a structured grid (``.vts``): its points are (α, β, z) with z the chosen
quantity (optionally log10), so ParaView shows the landscape as a 3-D sheet straight away; every
quantity of the file and the ``done`` mask are point data, NaN where a point was not computed.
Points not computed, and with ``zmax`` the points above it, are hidden (VTK's ``vtkGhostType``
blanking, which ParaView honours): the sheet has a hole there, never a flat lid that would read as a
plateau of the landscape.  Any grid shape is kept as it is: point (i, j) is (x[i], y[j]), x varying
fastest as VTK stores it.  A 1-D surface becomes a polyline (``.vtu``) through (α, z, 0) with the same
point data.

Why our own writer: the names of a file's quantities end up in XML attributes, and a file from someone
else can name a quantity ``a" offset="0" Injected="1``; ``xml.etree.ElementTree`` escapes every
attribute, where string formatting (``pyevtk``) would let the name add attributes of its own.  The
arrays are VTK's inline ``binary`` format: little-endian values, base64-encoded after a UInt64 byte
count.  The tests read the files back with VTK's own readers.
"""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import InputError, UsageError, param
from .atomic import write_with
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


VTK_TYPES = {np.dtype("float64"): "Float64", np.dtype("int64"): "Int64", np.dtype("uint8"): "UInt8"}
POLY_LINE = 4  # VTK's cell type of a polyline


def _array(parent: ET.Element, values: np.ndarray, name: str | None = None, components: int = 1) -> None:
    """A ``DataArray`` of ``values`` (C order, flattened) under ``parent``, inline binary: base64 of a
    UInt64 byte count, then base64 of the little-endian values."""
    values = np.asarray(values)
    kind = VTK_TYPES[values.dtype]
    payload = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")).tobytes()
    attrs = {"type": kind, "NumberOfComponents": str(components), "format": "binary"}
    if name is not None:
        attrs["Name"] = name
    element = ET.SubElement(parent, "DataArray", attrs)
    element.text = (
        base64.b64encode(np.array([len(payload)], dtype="<u8").tobytes()) + base64.b64encode(payload)
    ).decode("ascii")


def _document(kind: str) -> tuple[ET.ElementTree, ET.Element]:
    root = ET.Element(
        "VTKFile", {"type": kind, "version": "1.0", "byte_order": "LittleEndian", "header_type": "UInt64"}
    )
    return ET.ElementTree(root), root


def _point_data(piece: ET.Element, data: dict[str, np.ndarray], order: str) -> None:
    """Every array as point data; ``order`` "F" lists a grid's points x fastest, as VTK stores them."""
    point = ET.SubElement(piece, "PointData")
    for name, values in data.items():
        _array(point, np.ravel(values, order=order), name)


def _points(piece: ET.Element, xyz: np.ndarray) -> None:
    _array(ET.SubElement(piece, "Points"), np.ascontiguousarray(xyz, dtype=np.float64), components=3)


def write_vtk(surface: Surface, stem: str, z: str = "train_loss", log: bool = False, zmax: float | None = None) -> str:
    """Write ``stem.vts`` (2-D) or ``stem.vtu`` (1-D), whole or not at all (``io.atomic``); return its path."""
    height, hidden = heights(surface, z, log, zmax)
    data = {name: np.asarray(values, dtype=np.float64) for name, values in surface.values.items()}
    data["done"] = surface.done.astype(np.float64)
    data[GHOST] = np.where(hidden, HIDDEN_POINT, 0).astype(np.uint8)
    if surface.ndim == 2:
        nx, ny = len(surface.x), len(surface.y)
        tree, root = _document("StructuredGrid")
        extent = f"0 {nx - 1} 0 {ny - 1} 0 0"
        piece = ET.SubElement(ET.SubElement(root, "StructuredGrid", WholeExtent=extent), "Piece", Extent=extent)
        _point_data(piece, data, order="F")
        X, Y = np.meshgrid(surface.x, surface.y, indexing="ij")
        _points(piece, np.stack([np.ravel(c, order="F") for c in (X, Y, height)], axis=1))
        path = stem + ".vts"
    else:
        n = len(surface.x)
        tree, root = _document("UnstructuredGrid")
        piece = ET.SubElement(
            ET.SubElement(root, "UnstructuredGrid"), "Piece", NumberOfPoints=str(n), NumberOfCells="1"
        )
        _point_data(piece, data, order="C")
        _points(piece, np.stack([np.asarray(surface.x, dtype=np.float64), height, np.zeros(n)], axis=1))
        cells = ET.SubElement(piece, "Cells")
        _array(cells, np.arange(n, dtype=np.int64), "connectivity")
        _array(cells, np.array([n], dtype=np.int64), "offsets")
        _array(cells, np.array([POLY_LINE], dtype=np.uint8), "types")
        path = stem + ".vtu"
    write_with(path, "VTK file", lambda handle: tree.write(handle, encoding="utf-8", xml_declaration=True))
    return path


__all__ = ["quantities", "heights", "write_vtk"]
