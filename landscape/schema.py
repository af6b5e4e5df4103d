"""The one HDF5 schema: every dataset and attribute name of surface and direction files.

Surface file (one per network and grid)::

    /xcoordinates            (nx,)      float64  dimension scale: coefficient of the x direction
    /ycoordinates            (ny,)      float64  dimension scale (2-D surfaces only)
    /train_loss, /train_acc  (nx[,ny])  float64  NaN until computed; [i, j] is (x[i], y[j])
    /test_loss,  /test_acc   (nx[,ny])  float64  when test data were evaluated
    /done                    (nx[,ny])  uint8    1 where the point has been computed
    attrs: schema, schema_version, identity (JSON), one attribute per identity
           field, runs (JSON list: command line, ranks, threads, versions, time)

``done`` is the only record of progress: a loss of 0, a negative value, NaN or
inf from a diverged point is a result like any other.  Files are created under a
temporary name and renamed into place, so a crash never leaves a half-made file.

Direction file::

    /xdirection/<parameter name>   float64 tensors keyed by the model's own names
    /ydirection/<parameter name>   (2-D only)
    attrs on each group: kind (random|target), norm, ignore, seed, target_sha256
    root attrs: schema, dir_type, same_dir, origin_sha256, digest, versions
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import h5py
import numpy as np

from .errors import InputError, MismatchError, describe

SURFACE_SCHEMA = "landscape.surface"
DIRECTION_SCHEMA = "landscape.directions"
SCHEMA_VERSION = 1
X, Y = "xcoordinates", "ycoordinates"
DONE = "done"
IDENTITY = "identity"
RUNS = "runs"
AXES = ("xdirection", "ydirection")
REFERENCE_NOT_COMPUTED = -1.0  # the reference code's marker for "to do" in its surface files

DESCRIPTIONS = {
    "loss": "mean loss over the evaluated samples",
    "acc": "accuracy in percent (argmax of the output equals the label)",
}


def quantity_description(name: str) -> str:
    split, _, metric = name.partition("_")
    return f"{DESCRIPTIONS.get(metric, metric)} on the {split} data"


# --------------------------------------------------------------------------- surfaces

def _atomic_path(path: str) -> str:
    return f"{path}.partial-{os.getpid()}"


def _publish(tmp: str, path: str, what: str) -> None:
    """Move the finished ``tmp`` to ``path``, never replacing a file that appeared meanwhile."""
    try:
        os.link(tmp, path)  # fails if path exists: no window between a check and a rename
    except FileExistsError:
        raise InputError(f"{what} {path} appeared while this one was being written; it is left as it is") from None
    except OSError:  # a file system without hard links
        if os.path.exists(path):
            raise InputError(f"{what} {path} appeared while this one was being written; "
                             "it is left as it is") from None
        os.replace(tmp, path)


def _open_error(path: str, exc: OSError, what: str) -> InputError:
    if "lock" in str(exc).lower():
        return InputError(f"{what} {path} is open in another job (HDF5 file lock); wait for it to end, or on a "
                          "file system without locking set HDF5_USE_FILE_LOCKING=FALSE")
    return InputError(f"{what} {path} exists but is not a readable HDF5 file ({describe(exc)}); "
                      "choose another file name or move it away (it is left untouched)")


def create_surface(path: str, xcoords, ycoords, quantities, identity: dict) -> None:
    """Create an empty surface file (all NaN, nothing done) at ``path`` atomically."""
    shape = (len(xcoords),) if ycoords is None else (len(xcoords), len(ycoords))
    tmp = _atomic_path(path)
    try:
        with h5py.File(tmp, "w") as f:
            scales = [f.create_dataset(X, data=np.asarray(xcoords, dtype=np.float64))]
            scales[0].attrs["long_name"] = "coefficient of the x direction"
            if ycoords is not None:
                scales.append(f.create_dataset(Y, data=np.asarray(ycoords, dtype=np.float64)))
                scales[1].attrs["long_name"] = "coefficient of the y direction"
            for scale, name in zip(scales, (X, Y)):
                scale.make_scale(name)
            # Written in full now so that the file layout never changes again:
            # later writes only touch raw data, which a kill -9 cannot corrupt.
            for name in list(quantities) + [DONE]:
                if name == DONE:
                    dset = f.create_dataset(DONE, data=np.zeros(shape, np.uint8))
                    dset.attrs["long_name"] = "1 where the point has been computed"
                else:
                    dset = f.create_dataset(name, data=np.full(shape, np.nan), fillvalue=np.nan)
                    dset.attrs["long_name"] = quantity_description(name)
                for axis, scale in enumerate(scales):
                    dset.dims[axis].attach_scale(scale)
            f.attrs["schema"] = SURFACE_SCHEMA
            f.attrs["schema_version"] = SCHEMA_VERSION
            f.attrs[IDENTITY] = json.dumps(identity, sort_keys=True)
            for key, value in identity.items():
                f.attrs[key] = value
            f.attrs[RUNS] = "[]"
        _publish(tmp, path, "surface file")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _differences(stored: dict, wanted: dict) -> list[str]:
    out = []
    for key in sorted(set(stored) | set(wanted)):
        a, b = stored.get(key, "(absent)"), wanted.get(key, "(absent)")
        if a != b:
            short = lambda v: (v[:12] + "…") if isinstance(v, str) and len(v) == 64 else v
            out.append(f"{key}: file has {short(a)!r}, this run has {short(b)!r}")
    return out


def open_existing_surface(path: str, quantities, identity: dict) -> np.ndarray:
    """Check that ``path`` was made by this very computation; return its done mask (bool)."""
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise _open_error(path, exc, "surface file") from None
    with f:
        if f.attrs.get("schema") != SURFACE_SCHEMA or DONE not in f:
            raise MismatchError(f"surface file {path} exists and is not a landscape surface file; "
                                "choose another --surf_file or move it away (it is left untouched)")
        stored = json.loads(f.attrs[IDENTITY])
        problems = _differences(stored, identity)
        present = sorted(k for k in f if k not in (X, Y, DONE))
        if present != sorted(quantities):
            problems.append(f"quantities: file has {present}, this run has {sorted(quantities)}")
        if problems:
            raise MismatchError(f"surface file {path} was made by a different computation, "
                                f"so it is left untouched: {'; '.join(problems)}. "
                                "Use another --surf_file to compute a new surface")
        return f[DONE][()].astype(bool)


def _update_runs(path: str, fields: dict, new_run: bool) -> None:
    """Start a run record or add to the latest one; the latest also as plain attributes."""
    with h5py.File(path, "r+") as f:
        runs = json.loads(f.attrs[RUNS])
        if new_run:
            runs.append(dict(fields))
        else:
            runs[-1].update(fields)
        f.attrs[RUNS] = json.dumps(runs)
        for key, value in fields.items():  # readable without JSON
            f.attrs[key] = value


def record_run(path: str, run: dict) -> None:
    """Append one run's provenance (command line, ranks, versions, time) to ``runs``."""
    _update_runs(path, run, new_run=True)


def finish_run(path: str, summary: dict) -> None:
    """Add the end-of-run figures (points computed, seconds, rate) to the latest run."""
    _update_runs(path, summary, new_run=False)


def row_runs(flat: np.ndarray, shape: tuple[int, ...]):
    """Split sorted flat indices into runs that are contiguous within one row.

    Yields ``(index, positions)``: an array index (a slice along the last axis)
    and the positions in ``flat`` it covers.
    """
    ncol = shape[-1]
    start = 0
    for stop in range(1, len(flat) + 1):
        if stop == len(flat) or flat[stop] != flat[stop - 1] + 1 or flat[stop] % ncol == 0:
            first, last = int(flat[start]), int(flat[stop - 1])
            if len(shape) == 1:
                yield np.s_[first:last + 1], slice(start, stop)
            else:
                row = first // ncol
                yield np.s_[row, first % ncol:last % ncol + 1], slice(start, stop)
            start = stop


def write_values(f, flat: np.ndarray, values: np.ndarray, quantities) -> None:
    """Write ``values[n, q]`` of the sorted flat points ``flat``; ``done`` is not touched.

    ``f`` is the open file or a dict of its datasets by name.
    """
    shape = f[DONE].shape
    for index, rows in row_runs(flat, shape):
        for q, name in enumerate(quantities):
            f[name][index] = values[rows, q]


def mark_done(f, flat: np.ndarray) -> None:
    shape = f[DONE].shape
    for index, rows in row_runs(flat, shape):
        f[DONE][index] = np.ones(rows.stop - rows.start, np.uint8)


@dataclass
class Surface:
    """A surface file read back: coordinates, values, done mask, attributes."""

    path: str
    x: np.ndarray
    y: np.ndarray | None
    values: dict[str, np.ndarray]
    done: np.ndarray
    attrs: dict = field(default_factory=dict)

    @property
    def ndim(self) -> int:
        return 1 if self.y is None else 2


def read_surface(path: str) -> Surface:
    """Read a surface file of this toolkit (or one with the reference code's names)."""
    if not os.path.exists(path):
        raise InputError(f"surface file {path} does not exist")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise _open_error(path, exc, "surface file") from None
    with f:
        if X not in f:
            raise InputError(f"{path} has no '{X}' dataset: not a loss-surface file")
        x = f[X][()]
        y = f[Y][()] if Y in f else None
        shape = (len(x),) if y is None else (len(x), len(y))
        names = [k for k in f if k not in (X, Y, DONE) and isinstance(f[k], h5py.Dataset)
                 and f[k].dtype.kind in "fiu" and f[k].size == int(np.prod(shape))]
        values = {k: f[k][()].astype(np.float64) for k in names}
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        if attrs.get("schema") == SURFACE_SCHEMA:
            done = f[DONE][()].astype(bool)
        else:
            values, done = _from_reference(values, shape)
    for k in values:  # points never computed read as NaN
        values[k] = np.where(done, values[k], np.nan)
    return Surface(path, x, y, values, done, attrs)


def _from_reference(values: dict, shape: tuple[int, ...]) -> tuple[dict, np.ndarray]:
    """Values of a surface file written by the reference code, in this schema's order.

    The reference code declares its arrays ``(len(x), len(y))`` but fills them in
    ``np.meshgrid(x, y)`` order, so flat position ``j*nx + i`` holds the point
    ``(x[i], y[j])``: reshaping to ``(ny, nx)`` and transposing restores
    ``[i, j] = (x[i], y[j])`` for square and non-square grids alike.  It marks
    points not computed with -1.
    """
    if len(shape) == 2:
        nx, ny = shape
        values = {k: v.reshape(-1).reshape(ny, nx).T.copy() for k, v in values.items()}
    else:
        values = {k: v.reshape(shape) for k, v in values.items()}
    done = np.ones(shape, bool)
    for v in values.values():
        done &= v != REFERENCE_NOT_COMPUTED
    return values, done


# --------------------------------------------------------------------------- directions

def write_directions(path: str, axes: list[dict], axis_meta: list[dict], meta: dict) -> None:
    """Write direction tensors keyed by parameter name, atomically (never overwrites)."""
    tmp = _atomic_path(path)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["schema"] = DIRECTION_SCHEMA
            f.attrs["schema_version"] = SCHEMA_VERSION
            for key, value in meta.items():
                f.attrs[key] = value
            for group_name, tensors, info in zip(AXES, axes, axis_meta):
                group = f.create_group(group_name)
                for key, value in info.items():
                    group.attrs[key] = value
                for name, tensor in tensors.items():
                    group.create_dataset(name, data=tensor.detach().cpu().numpy())
        _publish(tmp, path, "direction file")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def read_directions(path: str) -> tuple[list[dict], list[dict], dict]:
    """Return ``(axes, axis_meta, meta)``: per axis a dict name -> float64 array, and attributes."""
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise _open_error(path, exc, "direction file") from None
    with f:
        reference = f.attrs.get("schema") is None and AXES[0] in f and all(k.isdigit() for k in f[AXES[0]])
        if f.attrs.get("schema") != DIRECTION_SCHEMA and not reference:
            raise InputError(f"direction file {path} was written neither by landscape nor by the reference code "
                             f"(expected groups {AXES[0]}/{AXES[1]} holding tensors named by parameter, or 0..n-1)")
        meta = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        if reference:  # tensors "0".."n-1" in the model's parameter (or state_dict) order
            meta = {"reference": True}
        axes, axis_meta = [], []
        for group_name in AXES:
            if group_name not in f:
                continue
            group = f[group_name]
            axes.append({name: group[name][()] for name in group})
            if reference:
                axes[-1] = dict(sorted(axes[-1].items(), key=lambda item: int(item[0])))
            axis_meta.append({k: (v.decode() if isinstance(v, bytes) else v) for k, v in group.attrs.items()})
    return axes, axis_meta, meta
