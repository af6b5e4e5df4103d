"""A surface job from start to end: set up on every rank, agree, compute, write.

This is the only module that composes the pieces: data and model loading,
directions, the evaluator, the surface file, the writer and the scheduler.  It
talks to other ranks only through the small communicator interface of
``landscape.comm``.
"""
from __future__ import annotations

import copy
import os
import socket
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from . import batchnorm
from . import directions as dirs
from . import schema
from .checkpoint import load_into, read_state_dict
from .comm import agree, threads_per_rank
from .data import load_data, split_chunk, train_subset
from .errors import InputError, MismatchError, UsageError
from .evaluation import DTYPES, Evaluator
from .grid import Axis, Grid
from .models import build_model
from .losses import BUILTIN as BUILTIN_LOSSES
from .losses import Loss
from .plugins import canonical, is_plugin
from .progress import Progress, duration
from .provenance import command_line, sha256_file, sha256_tensors, versions
from .scheduler import run_points
from .writer import choose, open_writer

SUBSET_SEED = 0  # --train_subset draws the same samples in every run and on every rank
DEFAULTS = {"dir_type": "weights", "xnorm": "filter", "xignore": "biasbn", "seed": 0}


@dataclass
class SurfaceConfig:
    """Everything a surface depends on; ``None`` means "not given" (a default, or the direction file's)."""

    model: str
    model_file: str | None = None
    model_file2: str | None = None
    model_file3: str | None = None
    dataset: str = "digits"
    num_classes: int | None = None
    datapath: str | None = None
    raw_data: bool = False
    data_split: int = 1
    split_idx: int = 0
    train_subset: int | None = None
    allow_pickle: bool = False
    x: str = "-1:1:51"
    y: str | None = None
    dir_type: str | None = None
    xnorm: str | None = None
    xignore: str | None = None
    ynorm: str | None = None
    yignore: str | None = None
    same_dir: bool = False
    seed: int | None = None
    dir_file: str | None = None
    surf_file: str | None = None
    batch_size: int = 128
    loss_name: str = "crossentropy"
    bn: str | None = None
    bn_batches: int = 10
    dtype: str = "float32"
    threads: int | None = None
    test: bool = True
    io: str = "auto"
    round_seconds: float = 5.0
    quiet: bool = False
    argv: list[str] = field(default_factory=list)

    def grid(self) -> Grid:
        return Grid(Axis.parse(self.x, "--x"), None if self.y is None else Axis.parse(self.y, "--y"))

    def validate(self) -> None:
        grid = self.grid()
        if self.dtype not in DTYPES:
            raise UsageError(f"--dtype={self.dtype}: expected one of {', '.join(DTYPES)}")
        if self.batch_size < 1:
            raise UsageError(f"--batch_size={self.batch_size}: expected a positive number")
        if self.dir_type is not None:
            dirs.check_dir_type(self.dir_type)
        batchnorm.resolve(self.bn, self.dir_type)
        if self.bn_batches < 1:
            raise UsageError(f"--bn_batches={self.bn_batches}: expected a positive number of batches")
        if not is_plugin(self.loss_name) and self.loss_name not in BUILTIN_LOSSES:
            raise UsageError(f"--loss_name={self.loss_name}: expected one of {', '.join(BUILTIN_LOSSES)} "
                             "or package.module:callable")
        for flag in ("xnorm", "ynorm"):
            if getattr(self, flag) is not None:
                dirs.AxisSettings(norm=getattr(self, flag))
        for flag in ("xignore", "yignore"):
            if getattr(self, flag) is not None:
                dirs.AxisSettings(ignore=getattr(self, flag))
        if grid.ndim == 1 and (self.model_file3 or self.same_dir):
            raise UsageError("--model_file3 and --same_dir need a 2-D grid: add --y=MIN:MAX:NUM")
        if self.model_file3 and self.same_dir:
            raise UsageError("--model_file3 and --same_dir both define the y direction: give one")
        for axis, target, how in (("x", self.model_file2, "--model_file2"), ("y", self.model_file3, "--model_file3"),
                                  ("y", self.same_dir, "--same_dir")):
            for setting in ("norm", "ignore"):
                if target and getattr(self, f"{axis}{setting}") is not None:
                    raise UsageError(f"--{axis}{setting} does not apply with {how}: that direction is "
                                     f"{'the x direction' if how == '--same_dir' else 'a difference of models'}")
        if self.seed is not None and not 0 <= self.seed < 2**63:
            raise UsageError(f"--seed={self.seed}: expected a whole number from 0 to 2**63-1")
        if self.train_subset is not None and self.train_subset < 1:
            raise UsageError(f"--train_subset={self.train_subset}: expected a positive number of samples")
        if self.data_split < 1 or not 0 <= self.split_idx < self.data_split:
            raise UsageError(f"--data_split={self.data_split} --split_idx={self.split_idx}: expected "
                             "data_split >= 1 and 0 <= split_idx < data_split")
        if self.round_seconds <= 0:
            raise UsageError(f"round length {self.round_seconds}: expected a positive number of seconds")

    def classes(self) -> int:
        """Output classes of a registry model: as given, else 100 for CIFAR-100, else 10."""
        return self.num_classes or (100 if self.dataset == "cifar100" else 10)

    def wanted_dir_type(self) -> str | None:
        """The direction type asked for, by --dir_type or implied by --bn; None: default or the file's."""
        return self.dir_type if self.bn is None else batchnorm.resolve(self.bn, self.dir_type)[1]

    def paths(self) -> tuple[str, str]:
        surf = self.surf_file or (f"{self.model_file}.surface.h5" if self.model_file else "surface.h5")
        stem = surf[:-3] if surf.endswith(".h5") else surf
        return surf, self.dir_file or f"{stem}.directions.h5"


# --------------------------------------------------------------------------- directions

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
            "digest": sha256_tensors({f"{a}/{k}": v for a, d in zip("xy", axes) for k, v in d.items()}),
            **versions()}
    schema.write_directions(path, axes, metas, meta)


def checked_directions(cfg: SurfaceConfig, stored, origin: dict, path: str):
    """Directions read from ``path``, checked against the model and any flags given explicitly."""
    axes, metas, meta = stored
    grid = cfg.grid()
    if meta.get("reference"):  # how it was made is not recorded: only the model match can be checked
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


def _name_reference(stored, model, dir_type: str | None, path: str):
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


# --------------------------------------------------------------------------- the job

def run_surface(cfg: SurfaceConfig, comm, say=print, *, model=None, data=None, loss=None) -> dict:
    """Compute (or finish) the surface described by ``cfg``; return a summary on every rank.

    ``model`` (an ``nn.Module``, copied, never modified), ``data`` (a ``Data``) and ``loss``
    (a callable) replace what ``cfg`` names: that is how the Python API passes objects.
    """
    given_model, given_data = model, data
    agree(comm, cfg.validate)
    grid = cfg.grid()
    surf_path, dir_path = cfg.paths()
    threads = agree(comm, threads_per_rank, comm, cfg.threads)
    torch.set_num_threads(threads)
    loud = comm.rank == 0 and not cfg.quiet
    show = say if loud else (lambda *a, **k: None)

    def load():
        data = given_data if given_data is not None else load_data(cfg.dataset, cfg.datapath, cfg.raw_data)
        if cfg.data_split > 1:  # as the reference code: one chunk of the training data
            data.train = split_chunk(data.train, cfg.data_split, cfg.split_idx)
        if cfg.train_subset is not None:
            data.train = train_subset(data.train, cfg.train_subset, SUBSET_SEED)
        if given_model is not None:
            return data, copy.deepcopy(given_model)
        torch.manual_seed(DEFAULTS["seed"] if cfg.seed is None else cfg.seed)  # same init on every rank
        model = build_model(cfg.model, cfg.classes())
        if cfg.model_file:
            load_into(model, read_state_dict(cfg.model_file, cfg.allow_pickle), cfg.model_file)
        return data, model

    data, model = agree(comm, load)

    use_test = cfg.test and data.test is not None
    prints = {"origin": sha256_tensors(model.state_dict()),
              "train": sha256_tensors({"x": data.train.inputs, "y": data.train.targets}),
              "test": sha256_tensors({"x": data.test.inputs, "y": data.test.targets}) if use_test else ""}

    def same_everywhere():  # a model or data that differ between ranks would make a silent patchwork
        if len({tuple(p.values()) for p in comm.allgather(prints)}) > 1:
            raise InputError("the ranks hold different models or data (a factory that is not deterministic?); "
                             "every rank must build the same network and data set")

    agree(comm, same_everywhere)

    def directions():
        if comm.rank == 0 and not os.path.exists(dir_path):
            origin = dirs.origin_tensors(model, cfg.wanted_dir_type() or DEFAULTS["dir_type"])
            make_directions(cfg, origin, dir_path)
            show(f"wrote directions to {dir_path}")

    agree(comm, directions)  # its allgather also keeps the other ranks from reading too early

    def evaluator():
        stored = schema.read_directions(dir_path)  # the one read of the directions
        if stored[2].get("reference"):
            stored = _name_reference(stored, model, cfg.wanted_dir_type(), dir_path)
        origin = dirs.origin_tensors(model, stored[2]["dir_type"])
        dx, dy, metas, meta = checked_directions(cfg, stored, origin, dir_path)
        splits = {"train": data.train, **({"test": data.test} if use_test else {})}
        bn = batchnorm.resolve(cfg.bn, meta["dir_type"])[0]
        ev = Evaluator(model, origin, dx, dy, splits, Loss(loss if loss is not None else cfg.loss_name),
                       cfg.batch_size, cfg.dtype,
                       bn=bn, bn_batches=cfg.bn_batches, stderr=cfg.train_subset is not None)
        return ev, origin, metas, meta, sha256_tensors({**dx, **({} if dy is None else {f"y/{k}": v for k, v in dy.items()})})

    ev, origin, metas, meta, dir_digest = agree(comm, evaluator)
    if loud and meta.get("origin_sha256") and meta["origin_sha256"] != sha256_tensors(origin):
        show(f"note: {dir_path} was normalized against other weights than this model's "
             "(fine for a shared direction, but not filter-normalized for this model)")

    identity = _identity(cfg, grid, data, prints, metas, meta, dir_digest, ev)

    def prepare():
        if comm.rank != 0:
            return None
        if os.path.exists(surf_path):
            done = schema.open_existing_surface(surf_path, ev.quantities, identity)
        else:
            schema.create_surface(surf_path, grid.xcoordinates(), grid.ycoordinates(), ev.quantities, identity)
            done = np.zeros(grid.shape, bool)
        schema.record_run(surf_path, _run_record(cfg, comm, threads, surf_path, dir_path))
        return done

    done = comm.bcast(agree(comm, prepare))
    todo = np.flatnonzero(~done.reshape(-1))
    io = agree(comm, choose, cfg.io, comm)
    show(f"{surf_path}: {grid.size} points ({' x '.join(map(str, grid.shape))}), {grid.size - len(todo)} already done, "
         f"{len(todo)} to compute on {comm.size} rank{'s' * (comm.size > 1)} x {threads} thread{'s' * (threads > 1)}"
         f" ({io} writes); quantities {', '.join(ev.quantities)}")
    writer = agree(comm, open_writer, io, comm, surf_path, ev.quantities)
    progress = Progress(grid.size, grid.size - len(todo), enabled=loud)
    points = grid.points(np.arange(grid.size))
    # No try/finally: closing an mpio file is collective, and a rank that failed must reach
    # the error boundary (which aborts the job) instead of waiting for ranks that never come.
    mine = run_points(ev, points, todo, comm, writer, progress, cfg.round_seconds)
    writer.close()
    seconds = progress.elapsed()
    rate = len(todo) / seconds if seconds > 0 and len(todo) else 0.0
    summary = {"points_computed": int(len(todo)), "seconds": round(seconds, 3),
               "points_per_second": round(rate, 3), "points_per_second_per_rank": round(rate / comm.size, 3)}
    if comm.rank == 0:
        schema.finish_run(surf_path, summary)
    progress.update(len(todo), final=True)
    show(f"done: {len(todo)} points in {duration(seconds)} ({seconds:.2f} s), {rate:.1f} points/s, "
         f"{rate / comm.size:.1f} per rank; surface in {surf_path}")
    return {**summary, "surf_file": surf_path, "dir_file": dir_path, "computed_here": mine,
            "quantities": ev.quantities, "ndim": grid.ndim}


def _identity(cfg, grid, data, prints, metas, meta, dir_digest, ev) -> dict:
    """What a surface's values depend on; an existing file must match it field for field."""
    identity = {
        "grid_x": grid.x.spec, "grid_y": grid.y.spec if grid.y else "",
        "model": canonical(cfg.model), "origin_sha256": prints["origin"],
        "model_file_sha256": sha256_file(cfg.model_file) if cfg.model_file else "",
        "dataset": canonical(data.name), "train_size": len(data.train), "raw_data": bool(cfg.raw_data),
        "data_split": cfg.data_split, "split_idx": cfg.split_idx,
        "train_subset": -1 if cfg.train_subset is None else cfg.train_subset, "subset_seed": SUBSET_SEED,
        "train_sha256": prints["train"],
        "test_size": len(data.test) if prints["test"] else 0, "test_sha256": prints["test"],
        "loss_name": ev.loss.name, "dtype": cfg.dtype, "batch_size": cfg.batch_size,
        "bn": "recalibrate" if ev.recalibrate else ("states" if meta["dir_type"] == "states" else "eval"),
        "bn_batches": len(ev.recalibrate.batches) if ev.recalibrate else 0,
        "dir_type": meta["dir_type"], "dir_seed": int(meta.get("seed", -1)), "same_dir": bool(meta.get("same_dir")),
        "directions_sha256": dir_digest,
    }
    for axis, info in zip("xy", metas[:grid.ndim]):
        identity[f"{axis}direction"] = info.get("kind", "")
        identity[f"{axis}norm"] = info.get("norm", "")
        identity[f"{axis}ignore"] = info.get("ignore", "")
        if info.get("target_sha256"):
            identity[f"model_file{2 if axis == 'x' else 3}_sha256"] = info["target_sha256"]
    return identity


def _run_record(cfg, comm, threads, surf_path, dir_path) -> dict:
    return {"command_line": command_line(cfg.argv or None), "ranks": comm.size, "threads_per_rank": threads,
            "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "surf_file": surf_path, "dir_file": dir_path, **versions()}
