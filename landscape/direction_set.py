"""The directions of a job: drawn and written once, then read, named and checked by every rank.

A direction file made earlier (by this toolkit or by the reference code) is
reused only if it fits the model and the flags of this run; otherwise the run
is refused with what differs.
"""
from __future__ import annotations

import numpy as np
import torch

from . import directions as dirs
from . import schema
from .checkpoint import load_into, read_state_dict
from .config import DEFAULTS, SurfaceConfig
from .errors import InputError, MismatchError
from .models import build_model
from .provenance import sha256_file, sha256_tensors, versions

def _axis_settings(cfg: SurfaceConfig, axis: str) -> dirs.AxisSettings:
    norm = getattr(cfg, f"{axis}norm") or (cfg.xnorm if axis == "y" else None) or DEFAULTS["xnorm"]
    ignore = getattr(cfg, f"{axis}ignore") or (cfg.xignore if axis == "y" else None) or DEFAULTS["xignore"]
    return dirs.AxisSettings(norm, ignore)


def make_directions(cfg: SurfaceConfig, origin: dict, path: str) -> None:
    """Draw (or take from target models) the directions and write them to ``path``."""
    grid = cfg.grid()
    dir_type = cfg.wanted_dir_type() or DEFAULTS["dir_type"]
    seed = DEFAULTS["seed"] if cfg.seed is None else cfg.seed
    generator = torch.Generator().manual_seed(seed)
    axes, metas = [], []
    for axis, target_file in (("x", cfg.model_file2), ("y", cfg.model_file3)):
        if axis == "y" and grid.ndim == 1:
            break
        if target_file:
            model = build_model(cfg.model, cfg.classes())
            load_into(model, read_state_dict(target_file, cfg.allow_pickle), target_file)
            target = dirs.origin_tensors(model, dir_type)
            axes.append(dirs.target_direction(origin, target, f"--model_file{2 if axis == 'x' else 3} {target_file}"))
            metas.append({"kind": "target", "norm": "none", "ignore": "none",
                          "target_file": target_file, "target_sha256": sha256_file(target_file)})
        elif axis == "y" and cfg.same_dir:
            axes.append({k: v.clone() for k, v in axes[0].items()})
            metas.append(dict(metas[0], kind=f"same as x ({metas[0]['kind']})"))
        else:
            settings = _axis_settings(cfg, axis)
            axes.append(dirs.random_direction(origin, settings, generator))
            metas.append({"kind": "random", "norm": settings.norm, "ignore": settings.ignore, "seed": seed})
    meta = {"dir_type": dir_type, "same_dir": bool(cfg.same_dir), "seed": seed,
            "origin_sha256": sha256_tensors(origin), "model": cfg.model,
            "digest": dirs.digest(axes[0], axes[1] if len(axes) > 1 else None),
            **versions()}
    schema.write_directions(path, axes, metas, meta)


def checked_directions(cfg: SurfaceConfig, stored, origin: dict, path: str):
    """Directions read from ``path``, checked against the model and any flags given explicitly."""
    axes, metas, meta = stored
    grid = cfg.grid()
    if meta.get("reference"):  # how it was made is not recorded: only the model match can be checked
        defining = [flag for flag, value in (("--model_file2", cfg.model_file2), ("--model_file3", cfg.model_file3),
                                             ("--same_dir", cfg.same_dir), ("--seed", cfg.seed)) if value]
        if defining:
            raise MismatchError(f"direction file {path} is a reference-code file, whose directions are fixed; "
                                f"{', '.join(defining)} cannot change them: drop {'it' if len(defining) == 1 else 'them'}"
                                " or give another --dir_file")
        if grid.ndim == 2 and len(axes) < 2:
            raise MismatchError(f"direction file {path} holds only an x direction; a 2-D grid needs two")
        return axes[0], (axes[1] if grid.ndim == 2 else None), metas, meta
    wanted = {"dir_type": cfg.wanted_dir_type(), "seed": cfg.seed}
    given = {"xnorm": cfg.xnorm, "xignore": cfg.xignore, "ynorm": cfg.ynorm, "yignore": cfg.yignore}
    conflicts = [f"--{k}={v} but the file has {meta.get(k)!r}" for k, v in wanted.items()
                 if v is not None and meta.get(k) != v]
    for flag, value in given.items():
        axis = 0 if flag[0] == "x" else 1
        if value is not None and axis < len(metas) and metas[axis].get(flag[1:]) not in (value, None):
            conflicts.append(f"--{flag}={value} but the file has {metas[axis].get(flag[1:])!r}")
    if conflicts:
        raise MismatchError(f"direction file {path} was made with other settings: {'; '.join(conflicts)}; "
                            "drop those flags to reuse it, or give another --dir_file")
    conflicts = []
    if grid.ndim == 2 and len(axes) < 2:
        raise MismatchError(f"direction file {path} holds only an x direction; a 2-D grid needs two")
    # What each axis is must match the flags: a random direction, a target model, or x again.
    wanted_kinds = [("x", cfg.model_file2, "--model_file2"), ("y", cfg.model_file3, "--model_file3")][:grid.ndim]
    for (axis, target, flag), info in zip(wanted_kinds, metas):
        if axis == "y" and (cfg.same_dir or meta.get("same_dir")):
            if bool(cfg.same_dir) != bool(meta.get("same_dir")):
                conflicts.append(f"--same_dir is {'given' if cfg.same_dir else 'not given'} but the file's y "
                                 f"direction is {'' if meta.get('same_dir') else 'not '}the x direction")
            continue
        if target and info.get("target_sha256") != sha256_file(target):
            conflicts.append(f"{flag} {target} but the file's {axis} direction is "
                             f"{'towards ' + str(info.get('target_file')) if info.get('kind') == 'target' else 'random'}")
        elif not target and info.get("kind") == "target":
            conflicts.append(f"no {flag} but the file's {axis} direction points to {info.get('target_file')}")
    if conflicts:
        raise MismatchError(f"direction file {path} was made differently: {'; '.join(conflicts)}; "
                            "give another --dir_file (or none) for a new one")
    for axis, direction in zip("xy", axes):
        dirs.check_matches(direction, origin, f"direction file {path} ({axis}direction)")
    tensors = [{k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in d.items()} for d in axes]
    return tensors[0], (tensors[1] if grid.ndim == 2 else None), metas, meta


def name_reference(stored, model, dir_type: str | None, path: str):
    """A reference-code direction file in this module's terms: named tensors and settings."""
    axes, _, _ = stored
    named = [dirs.from_reference(axis, model, dir_type, f"direction file {path} ({name})")
             for axis, name in zip(axes, schema.AXES)]
    types = {t for t, _ in named}
    if len(types) > 1:
        raise InputError(f"direction file {path}: its two directions hold different numbers of tensors")
    meta = {"dir_type": types.pop(), "seed": -1, "same_dir": False, "reference": True, "origin_sha256": ""}
    metas = [{"kind": "reference file", "norm": "as in the file", "ignore": "as in the file"} for _ in named]
    return [d for _, d in named], metas, meta
