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

import numpy as np
import torch

from . import batchnorm
from . import directions as dirs
from . import schema
from .checkpoint import load_into, read_state_dict
from .comm import agree, threads_per_rank
from .config import DEFAULTS, SUBSET_SEED, SurfaceConfig
from .data import load_data, split_chunk, train_subset
from .direction_set import checked_directions, make_directions, name_reference
from .errors import InputError
from .evaluation import Evaluator
from .losses import Loss
from .models import build_model
from .plugins import canonical
from .progress import Progress, duration
from .provenance import command_line, sha256_file, sha256_tensors, versions
from .scheduler import run_points
from .writer import choose, open_writer

__all__ = ["SurfaceConfig", "run_surface"]

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
            stored = name_reference(stored, model, cfg.wanted_dir_type(), dir_path)
        origin = dirs.origin_tensors(model, stored[2]["dir_type"])
        dx, dy, metas, meta = checked_directions(cfg, stored, origin, dir_path)
        splits = {"train": data.train, **({"test": data.test} if use_test else {})}
        bn = batchnorm.resolve(cfg.bn, meta["dir_type"])[0]
        ev = Evaluator(model, origin, dx, dy, splits, Loss(loss if loss is not None else cfg.loss_name),
                       cfg.batch_size, cfg.dtype,
                       bn=bn, bn_batches=cfg.bn_batches, stderr=cfg.train_subset is not None)
        return ev, origin, metas, meta, dirs.digest(dx, dy)

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
