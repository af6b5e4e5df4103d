"""Direction files: written once (atomically, never over another file), read back checked.

Every read recomputes the digest of the tensors and compares it with the one
the file records, so a direction file damaged on disk is refused instead of
silently giving a surface of NaN.  The reference code's files record no digest;
they are read as they are (``io.reference``).
"""

from __future__ import annotations

from dataclasses import asdict

import h5py
import numpy as np
import torch

from ..directions import AxisInfo, Directions, Trajectory, digest
from ..errors import InputError, param
from . import atomic, reference
from .hdf5 import reading
from .schema import AXES, DIRECTION_SCHEMA, DIRECTION_SCHEMA_VERSION, TRAJECTORY

ROOT_FIELDS = ("dir_type", "seed", "same_dir", "origin_sha256", "model", "digest")


def write(path: str, directions: Directions) -> None:
    """Write ``directions`` to ``path`` atomically; an existing file is never replaced."""

    def fill(f: h5py.File) -> None:  # its groups and datasets stay in this frame (atomic.make_hdf5)
        f.attrs["schema"] = DIRECTION_SCHEMA
        f.attrs["schema_version"] = DIRECTION_SCHEMA_VERSION
        root = {
            "dir_type": directions.dir_type,
            "seed": directions.seed,
            "same_dir": directions.same_dir,
            "origin_sha256": directions.origin_sha256,
            "model": directions.model,
            "digest": directions.digest,
            **directions.extra,
        }
        for key, value in root.items():
            f.attrs[key] = value
        for group_name, tensors, info in zip(AXES, (directions.x, directions.y), directions.axes):
            group = f.create_group(group_name)
            for key, value in asdict(info).items():
                group.attrs[key] = value
            for name, tensor in tensors.items():
                group.create_dataset(name, data=tensor.detach().cpu().to(torch.float64).numpy())
        path_ = directions.trajectory
        if path_ is not None:
            group = f.create_group(TRAJECTORY)
            group.create_dataset("coordinates", data=np.asarray(path_.coordinates, dtype=np.float64))
            group.create_dataset("files", data=np.array(path_.files, dtype=object), dtype=h5py.string_dtype())
            group.create_dataset("labels", data=np.asarray(path_.labels, dtype=np.int64))
            group.attrs["explained_variance_ratio"] = np.asarray(path_.explained, dtype=np.float64)
            group.attrs["random_walk_ratio"] = np.asarray(path_.random_walk, dtype=np.float64)

    atomic.make_hdf5(path, "direction file", fill)


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _axis_info(attrs) -> AxisInfo:
    known = AxisInfo.__dataclass_fields__
    values = {k: _text(v) for k, v in attrs.items() if k in known}
    for key in ("seed",):
        if key in values:
            values[key] = int(values[key])
    return AxisInfo(**{"kind": "", **values})


def _trajectory(group) -> Trajectory:
    files = tuple(v.decode() if isinstance(v, bytes) else str(v) for v in group["files"][()])
    return Trajectory(
        files,
        tuple(int(v) for v in group["labels"][()]),
        np.asarray(group["coordinates"][()]),
        tuple(float(v) for v in group.attrs["explained_variance_ratio"]),
        tuple(float(v) for v in group.attrs["random_walk_ratio"]),
    )


def read(path: str) -> Directions:
    """The directions in ``path``: checked against their digest, or as the reference code wrote them."""
    with reading(path, "direction file") as f:
        if reference.is_direction_file(f):
            axes = [reference.in_order(f[name]) for name in AXES if name in f]
            info = AxisInfo("reference file", "as in the file", "as in the file")
            tensors = [{k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in a.items()} for a in axes]
            return Directions(
                tensors[0],
                tensors[1] if len(tensors) > 1 else None,
                (info,) * len(tensors),
                dir_type="",
                reference=True,
            )
        if _text(f.attrs.get("schema")) != DIRECTION_SCHEMA:
            raise InputError(
                f"direction file {path} was written neither by landscape nor by the reference code "
                f"(expected groups {AXES[0]}/{AXES[1]} holding tensors named by parameter, or 0..n-1)"
            )
        attrs = {k: _text(v) for k, v in f.attrs.items()}
        tensors, infos = [], []
        for name in AXES:
            if name in f:
                tensors.append({k: torch.from_numpy(np.asarray(f[name][k][()], dtype=np.float64)) for k in f[name]})
                infos.append(_axis_info(f[name].attrs))
        path_ = _trajectory(f[TRAJECTORY]) if TRAJECTORY in f else None
    if not tensors:
        raise InputError(f"direction file {path} holds no {AXES[0]} group")
    found = digest(tensors[0], tensors[1] if len(tensors) > 1 else None)
    if attrs.get("digest") != found:
        raise InputError(
            f"direction file {path} is damaged: its tensors do not match the digest it records "
            f"({str(attrs.get('digest'))[:12]}…, found {found[:12]}…); it is left as it is: "
            f"give another {param('dir_file')}",
        )
    extra = {k: v for k, v in attrs.items() if k not in (*ROOT_FIELDS, "schema", "schema_version")}
    return Directions(
        tensors[0],
        tensors[1] if len(tensors) > 1 else None,
        tuple(infos),
        dir_type=str(attrs.get("dir_type", "")),
        seed=int(attrs.get("seed", -1)),
        same_dir=bool(attrs.get("same_dir", False)),
        origin_sha256=str(attrs.get("origin_sha256", "")),
        model=str(attrs.get("model", "")),
        extra=extra,
        trajectory=path_,
    )
