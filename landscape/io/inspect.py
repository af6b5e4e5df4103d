"""What a surface or direction file holds, as plain data: the first thing to look at in a file from
a colleague.  ``describe(path)`` reads a file of this toolkit (checked as every reader checks it) or
of the reference code, and returns its kind, grid, progress, value ranges, identity and run records;
``cli/info.py`` prints it."""

from __future__ import annotations

import math

import h5py
import numpy as np

from .. import checks
from ..errors import InputError
from . import direction_file, reference, surface_file
from .hdf5 import reading
from .paths import readable_file
from .schema import AXES, DIRECTION_SCHEMA, IDENTITY, SURFACE_SCHEMA, X


def _kind(path: str) -> str:
    if not h5py.is_hdf5(path):
        raise InputError(f"{path} is not an HDF5 file: expected a surface or direction file")
    with reading(path, "file") as f:
        schema = f.attrs.get("schema")
        schema = schema.decode() if isinstance(schema, bytes) else schema
        if schema == SURFACE_SCHEMA or (X in f and surface_file.schema_of(f) > 0):  # ours, attributes or not
            return "surface"
        if schema == DIRECTION_SCHEMA:
            return "directions"
        if reference.is_direction_file(f):
            return "reference directions"
        if X in f and schema is None:
            return "reference surface"
    raise InputError(
        f"{path} is an HDF5 file but neither a surface nor a direction file (of landscape or of the reference code)"
    )


def _axis(values: np.ndarray) -> dict:
    return {
        "points": int(len(values)),
        "min": float(values[0]),
        "max": float(values[-1]),
        "holds_zero": bool(np.any(values == 0)),
    }


def _range(values: np.ndarray, done: np.ndarray) -> dict:
    got = values[done]
    finite = got[np.isfinite(got)]
    return {
        "min": float(finite.min()) if finite.size else math.nan,
        "max": float(finite.max()) if finite.size else math.nan,
        "not_finite": int(got.size - finite.size),
    }


def _surface(path: str, ours: bool) -> dict:

    s = surface_file.read(path)
    shape = s.done.shape
    centre = None
    if np.any(s.x == 0) and (s.y is None or np.any(s.y == 0)):
        centre = (int(np.flatnonzero(s.x == 0)[0]),) + (() if s.y is None else (int(np.flatnonzero(s.y == 0)[0]),))
    quantities = {}
    for name, values in s.values.items():
        q = {"units": s.units.get(name, ""), **_range(values, s.done)}
        if centre is not None and s.done[centre]:
            q["at_centre"] = float(values[centre])
        quantities[name] = q
    identity = {}
    if IDENTITY in s.attrs:
        try:
            identity = checks.json_loads(s.attrs[IDENTITY])
        except ValueError:
            identity = {}
    return {
        "kind": "surface",
        "path": path,
        "written_by": "landscape" if ours else "the reference code",
        "schema_version": s.version if ours else None,
        "ndim": s.ndim,
        "x": _axis(s.x),
        "y": None if s.y is None else _axis(s.y),
        "points": int(np.prod(shape)),
        "done": int(s.done.sum()),
        "quantities": quantities,
        "identity": identity,
        "runs": s.runs,
    }


def _directions(path: str, ours: bool) -> dict:

    d = direction_file.read(path)
    axes = []
    for name, tensors, info in zip(AXES, (d.x, d.y), d.axes):
        if tensors is None:
            continue
        flat = np.concatenate([t.numpy().reshape(-1) for t in tensors.values()]) if tensors else np.zeros(0)
        axes.append(
            {
                "name": name,
                "tensors": len(tensors),
                "elements": int(flat.size),
                "length": float(np.linalg.norm(flat)),
                **{k: v for k, v in vars(info).items() if v not in ("", None, -1)},
            }
        )
    out = {
        "kind": "directions",
        "path": path,
        "written_by": "landscape" if ours else "the reference code",
        "axes": axes,
    }
    if len(axes) == 2:
        x = np.concatenate([t.numpy().reshape(-1) for t in d.x.values()])
        y = np.concatenate([t.numpy().reshape(-1) for t in d.y.values()])
        out["cosine_xy"] = float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))) if x.size == y.size else math.nan
    if ours:
        out.update(
            dir_type=d.dir_type,
            seed=d.seed,
            same_dir=d.same_dir,
            model=d.model,
            origin_sha256=d.origin_sha256,
            **{k: v for k, v in d.extra.items()},
        )
    if d.trajectory is not None:
        t = d.trajectory
        xy = np.asarray(t.coordinates)
        out["trajectory"] = {
            "checkpoints": len(t.files),
            "first": t.files[0],
            "last": t.files[-1],
            "epochs": [t.labels[0], t.labels[-1]],
            "explained": list(t.explained),
            "random_walk": list(t.random_walk),
            "x_span": [float(xy[:, 0].min()), float(xy[:, 0].max())],
            "y_span": [float(xy[:, 1].min()), float(xy[:, 1].max())],
        }
    return out


def describe(path: str) -> dict:
    """Everything ``landscape info`` prints about ``path``, as a JSON-ready dict."""
    path = readable_file(path, "file")
    kind = _kind(path)
    if kind.endswith("surface"):
        return _surface(path, kind == "surface")
    return _directions(path, kind == "directions")


__all__ = ["describe"]
