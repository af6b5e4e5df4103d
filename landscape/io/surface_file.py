"""Surface files: made whole, checked before they are resumed or read, written point by point.

The names and the layout are those of ``io.schema``.  Every read of an existing
file checks it: a file made by another computation is a mismatch; a file whose
done marks, values or checksums disagree (a disk error, a copy cut short, bytes
overwritten) is refused as damaged instead of being used or silently finished.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import h5py
import numpy as np

from .. import checks
from ..errors import InputError, MismatchError, param
from ..grid import LIMIT, Axis
from ..plugins import recorded_canonically
from . import atomic, reference, runs
from .hdf5 import reading
from .schema import (
    BOOKKEEPING,
    CHECKSUM,
    COORDINATE_NAMES,
    DONE,
    IDENTITY,
    PROVENANCE,
    RUNS,
    SCHEMA_VERSION,
    SURFACE_SCHEMA,
    X,
    Y,
    point_checksums,
)


@dataclass
class Surface:
    """A surface file read back: coordinates, values (NaN where not computed), done mask, provenance."""

    path: str
    x: np.ndarray
    y: np.ndarray | None
    values: dict[str, np.ndarray]
    done: np.ndarray
    attrs: dict = field(default_factory=dict)  # root attributes: schema, identity fields
    runs: list[dict] = field(default_factory=list)  # oldest first (io.runs)
    units: dict[str, str] = field(default_factory=dict)
    version: int = 0  # the schema version (``schema_of``); 0: a file of the reference code

    @property
    def ndim(self) -> int:
        return 1 if self.y is None else 2

    @property
    def run(self) -> dict:
        """The latest run's record (command line, ranks, points computed, seconds...)."""
        return self.runs[-1] if self.runs else {}


def _damaged(path: str, detail: str) -> InputError:
    return InputError(
        f"surface file {path} is damaged: {detail}; it is left as it is: move it away and compute the surface again"
    )


# --------------------------------------------------------------------------- making


def _allocated(f: h5py.File, name: str, shape: tuple, dtype, fill):
    """A dataset whose storage exists from the start: later writes change raw data only."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    return f.create_dataset(name, shape=shape, dtype=dtype, fillvalue=fill, dcpl=dcpl)


def create(
    path: str, xcoords: np.ndarray, ycoords: np.ndarray | None, columns: dict[str, dict], identity: dict
) -> None:
    """Make an empty surface file (all NaN, nothing done) at ``path`` atomically.

    ``columns`` maps each quantity's name to its dataset attributes (``long_name``, ``units``).
    """
    shape = (len(xcoords),) if ycoords is None else (len(xcoords), len(ycoords))

    def fill(f: h5py.File) -> None:  # its datasets stay in this frame (atomic.make_hdf5)
        scales = []
        for name, coords in ((X, xcoords), (Y, ycoords)):
            if coords is None:
                continue
            scale = f.create_dataset(name, data=np.asarray(coords, dtype=np.float64))
            scale.attrs["long_name"] = COORDINATE_NAMES[name]
            scale.make_scale(name)
            scales.append(scale)
        datasets = {name: (np.float64, np.nan, attrs) for name, attrs in columns.items()}
        datasets[DONE] = (np.uint8, 0, {"long_name": "1 where the point has been computed"})
        datasets[CHECKSUM] = (
            np.uint64,
            0,
            {"long_name": "checksum of the point's index and values (landscape.io.schema.point_checksums)"},
        )
        for name, (dtype, blank, attrs) in datasets.items():
            dset = _allocated(f, name, shape, dtype, blank)
            for key, value in attrs.items():
                dset.attrs[key] = value
            for axis, scale in enumerate(scales):
                dset.dims[axis].attach_scale(scale)
        slots = f.create_dataset(RUNS, data=runs.empty_slots())
        slots.attrs["long_name"] = "run records: JSON, one per slot (landscape.io.runs)"
        f.attrs["schema"] = SURFACE_SCHEMA
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs[IDENTITY] = json.dumps(identity, sort_keys=True)
        for key, value in identity.items():
            f.attrs[key] = value

    atomic.make_hdf5(path, "surface file", fill)


# --------------------------------------------------------------------------- checking


def _differences(stored: dict, wanted: dict) -> list[str]:
    out = []
    for key in sorted((set(stored) | set(wanted)) - PROVENANCE):
        a, b = stored.get(key, "(absent)"), wanted.get(key, "(absent)")
        if a != b:
            short = lambda v: (v[:12] + "…") if isinstance(v, str) and len(v) == 64 else v
            out.append(f"{key}: file has {short(a)!r}, this run has {short(b)!r}")
    return out


def quantity_names(f: h5py.File) -> list[str]:
    return sorted(k for k in f if k not in BOOKKEEPING and isinstance(f[k], h5py.Dataset))


def verified_done(f: h5py.File, path: str) -> np.ndarray:
    """The done mask, after checking every done point's values against its checksum."""
    done = f[DONE][()]
    if done.size and done.max(initial=0) > 1:
        bad = int(np.count_nonzero(done > 1))
        raise _damaged(path, f"{bad} done marks are neither 0 nor 1")
    done = done.astype(bool)
    flat = np.flatnonzero(done.reshape(-1))
    if len(flat):
        names = quantity_names(f)
        values = np.stack([f[name][()].reshape(-1)[flat] for name in names], axis=1)
        stored = f[CHECKSUM][()].reshape(-1)[flat]
        wrong = flat[point_checksums(flat, values) != stored]
        if len(wrong):
            where = np.unravel_index(int(wrong[0]), done.shape)
            raise _damaged(
                path,
                f"{len(wrong)} of {len(flat)} computed points do not match their checksums "
                f"(the first at index {tuple(int(i) for i in where)})",
            )
    return done


def open_for_resume(
    path: str, xcoords: np.ndarray, ycoords: np.ndarray | None, names: list[str], identity: dict
) -> np.ndarray:
    """Check that ``path`` was made by this very computation and is intact; return its done mask."""
    with reading(path, "surface file") as f:
        if f.attrs.get("schema") != SURFACE_SCHEMA:
            raise InputError(
                f"surface file {path} exists and is not a landscape surface file; choose "
                f"another {param('surf_file')} or move it away (it is left untouched)",
            )
        version = schema_of(f)
        if version != SCHEMA_VERSION:
            raise MismatchError(
                f"surface file {path} has schema version {version}, this landscape writes "
                f"{SCHEMA_VERSION}: it can be plotted but not resumed; give another {param('surf_file')}",
            )
        missing = [name for name in (DONE, CHECKSUM, RUNS, IDENTITY) if name not in f and name not in f.attrs]
        if missing:
            raise _damaged(path, f"it lacks {', '.join(missing)}")
        try:
            recorded = checks.json_loads(f.attrs[IDENTITY])
        except (TypeError, ValueError) as exc:
            raise _damaged(path, f"its identity is not a JSON object ({exc})") from None
        if not isinstance(recorded, dict):
            raise _damaged(path, "its identity is not a JSON object")
        problems = _differences(recorded_canonically(recorded), identity)
        if quantity_names(f) != sorted(names):
            problems.append(f"quantities: file has {quantity_names(f)}, this run has {sorted(names)}")
        if problems:
            raise MismatchError(
                f"surface file {path} was made by a different computation, "
                f"so it is left untouched: {'; '.join(problems)}. "
                f"Use another {param('surf_file')} to compute a new surface",
            )
        for name, coords in ((X, xcoords), (Y, ycoords)):
            if coords is not None and not np.array_equal(f[name][()], coords):
                raise _damaged(path, f"its {name} differ from the grid its identity records")
        return verified_done(f, path)


def recorded_identity(path: str) -> dict | None:
    """The identity an existing surface file records, or None (no file, or not one of ours: the checks
    that open it for resuming say what is wrong)."""
    try:
        with reading(path, "surface file") as f:
            return checks.json_loads(f.attrs[IDENTITY]) if f.attrs.get("schema") == SURFACE_SCHEMA else None
    except Exception:  # noqa: BLE001 - any failure here is reported by open_for_resume
        return None


def recorded_runs(path: str) -> list[dict]:
    """The run records of an existing surface file of ours, oldest first ([] for no file, or not one of
    ours: the checks that open it for resuming say what is wrong)."""
    try:
        with reading(path, "surface file") as f:
            return runs.read(f[RUNS][()]) if f.attrs.get("schema") == SURFACE_SCHEMA and RUNS in f else []
    except Exception:  # noqa: BLE001 - any failure here is reported by open_for_resume
        return []


def append_run(path: str, event: str, fields: dict, run: int | None = None) -> int:
    """Add a run record (``io.runs``) to the file; return the run number."""
    with reading(path, "surface file", "r+") as f:
        return runs.append(f, event, fields, run)


# --------------------------------------------------------------------------- reading


def schema_of(f: h5py.File) -> int:
    """0 for the reference code's file, else the version of this toolkit's schema it is written in.  A file
    with our ``done`` or ``checksum`` datasets is ours whatever its attributes say (an attribute is easily
    removed or edited, and a file read as the reference code's would have its checksums skipped); one
    with checksums or a run table is version 2 at least, whose points are verified."""
    schema = f.attrs.get("schema")
    schema = schema.decode(errors="replace") if isinstance(schema, bytes) else schema
    if schema != SURFACE_SCHEMA and DONE not in f and CHECKSUM not in f:
        return 0
    try:
        version = int(f.attrs.get("schema_version", 1))
    except (TypeError, ValueError):
        version = 1
    return max(version, 2) if (CHECKSUM in f or RUNS in f) else max(version, 1)


def read(path: str) -> Surface:
    """Read a surface file of this toolkit (schema 1 or 2, checked) or of the reference code."""
    with reading(path, "surface file") as f:
        if X not in f:
            raise InputError(f"{path} has no '{X}' dataset: not a loss-surface file")
        x = _coordinates(f, X, path)
        y = _coordinates(f, Y, path) if Y in f else None
        shape = (len(x),) if y is None else (len(x), len(y))
        attrs = {k: (v.decode(errors="replace") if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        version = schema_of(f)
        ours = version > 0
        numeric = [k for k in quantity_names(f) if f[k].dtype.kind in "fiu"]
        names = [k for k in numeric if f[k].size == int(np.prod(shape))]
        if numeric and not names:
            k = numeric[0]
            raise InputError(
                f"{path}: dataset {k} holds {f[k].size} values but the coordinates make a grid of "
                f"{' x '.join(map(str, shape))}; expected one value per grid point"
            )
        if version >= 2 and "grid_x" in attrs:
            _check_grid(path, attrs, x, y)
        # The done mask before the values: a job may be writing the file (``reading``), and a point
        # marked done by the time its mark is read has its values on disk by the time they are read.
        if not ours:
            done = None
            history = []
        elif version >= 2:
            missing = [name for name in (DONE, CHECKSUM, RUNS) if name not in f]
            if missing:
                raise _damaged(path, f"it lacks {', '.join(missing)}")
            done = verified_done(f, path)
            history = runs.read(f[RUNS][()])
        else:
            if DONE not in f:
                raise _damaged(path, f"it lacks {DONE}")
            done = f[DONE][()].astype(bool)
            history = runs.read_legacy(attrs.pop(RUNS, "[]"))
        values = {k: f[k][()].astype(np.float64) for k in names}
        units = {k: str(f[k].attrs.get("units", "")) for k in names}
        if done is None:
            values, done = reference.surface_values(values, shape)
    for k in values:  # points never computed read as NaN
        values[k] = np.where(done, values[k], np.nan)
    return Surface(path, x, y, values, done, attrs, history, units, version)


def _coordinates(f: h5py.File, name: str, path: str) -> np.ndarray:
    values = f[name][()] if isinstance(f[name], h5py.Dataset) else np.array([])
    if values.ndim != 1 or values.dtype.kind not in "fiu" or len(values) < 1 or not np.isfinite(values).all():
        raise InputError(
            f"{path}: {name} must be a 1-D array of finite numbers (found {values.dtype} "
            f"{values.shape}); it is damaged or not a loss-surface file"
        )
    values = values.astype(np.float64)
    if np.abs(values).max() > LIMIT:  # coordinates a grid never has (their span overflows in the figures)
        raise InputError(
            f"{path}: {name} reaches {np.abs(values).max():g}, beyond the {LIMIT:g} a grid may span; it is "
            "damaged or not a loss-surface file"
        )
    steps = np.diff(values)
    if np.any(steps <= 0):  # every grid, ours and the reference code's, runs from its low end to its high
        i = int(np.flatnonzero(steps <= 0)[0])
        raise InputError(
            f"{path}: {name} must be strictly ascending (found {values[i + 1]:g} after {values[i]:g} at index "
            f"{i + 1}); it is damaged or not a loss-surface file"
        )
    return values


def _check_grid(path: str, attrs: dict, x: np.ndarray, y: np.ndarray | None) -> None:
    """The coordinates are those of the grid the file's identity records."""

    for name, coords, spec in ((X, x, attrs.get("grid_x", "")), (Y, y, attrs.get("grid_y", ""))):
        expected = Axis.parse(spec, name).coordinates() if spec else None
        if (coords is None) != (expected is None) or (coords is not None and not np.array_equal(coords, expected)):
            raise _damaged(path, f"its {name} differ from the grid its identity records ({spec or 'none'})")


# --------------------------------------------------------------------------- writing


def contiguous_slices(flat: np.ndarray, shape: tuple[int, ...]):
    """Split sorted flat indices into pieces that are contiguous within one row.

    Yields ``(index, positions)``: an array index (a slice along the last axis)
    and the positions in ``flat`` it covers.
    """
    ncol = shape[-1]
    start = 0
    for stop in range(1, len(flat) + 1):
        if stop == len(flat) or flat[stop] != flat[stop - 1] + 1 or flat[stop] % ncol == 0:
            first, last = int(flat[start]), int(flat[stop - 1])
            if len(shape) == 1:
                yield np.s_[first : last + 1], slice(start, stop)
            else:
                row = first // ncol
                yield np.s_[row, first % ncol : last % ncol + 1], slice(start, stop)
            start = stop


def _block(flat: np.ndarray, shape: tuple[int, ...]):
    """The whole rows (the run of the first axis) that sorted flat indices span, as an array index, and
    the points' positions in that block flattened; None where the block holds over 8 times as many
    entries as the points plus a row (a resumed run's scattered points: written piece by piece)."""
    per_row = shape[-1] if len(shape) > 1 else 1
    first, last = int(flat[0]) // per_row, int(flat[-1]) // per_row
    if (last - first + 1) * per_row > 8 * len(flat) + per_row:
        return None
    return np.s_[first : last + 1], flat - first * per_row


def _write(dataset, flat: np.ndarray, new: np.ndarray, sole_writer: bool) -> None:
    """``new[i]`` into flat point ``flat[i]`` (sorted) of ``dataset``.  A sole writer reads the rows the
    points span, updates them and writes them back whole (one read and one write, not one per row
    piece); under mpio other ranks write into those rows at
    the same time, so each rank writes only its own pieces."""
    block = _block(flat, dataset.shape) if sole_writer else None
    if block is None:
        for index, rows in contiguous_slices(flat, dataset.shape):
            dataset[index] = new[rows]
        return
    index, positions = block
    rows = dataset[index]
    rows.reshape(-1)[positions] = new
    dataset[index] = rows


def write_values(datasets, flat: np.ndarray, values: np.ndarray, names: list[str], sole_writer: bool = False) -> None:
    """Write ``values[n, q]`` and the checksums of the sorted flat points ``flat``; ``done`` is not touched.

    ``datasets`` is the open file or a dict of its datasets by name; ``sole_writer``: no other process
    writes into the file meanwhile (see ``_write``).
    """
    if not len(flat):
        return
    sums = point_checksums(flat, values[:, np.argsort(names)])  # columns in the order of the names
    for q, name in enumerate(names):
        _write(datasets[name], flat, values[:, q], sole_writer)
    _write(datasets[CHECKSUM], flat, sums, sole_writer)


def mark_done(datasets, flat: np.ndarray, sole_writer: bool = False) -> None:
    if len(flat):
        _write(datasets[DONE], flat, np.ones(len(flat), np.uint8), sole_writer)
