"""The evaluator a surface job runs with: ``auto`` settings resolved, as the file's latest run recorded
them, from the model's shape (``cost``), as measured before on the same problem (``choices``) or by
measurement on every rank at once (``tuning``), and the compiled kernel compiled before the clock
starts."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import numpy as np
import torch

from .. import directions as dirs
from ..data import Samples
from ..errors import EvaluationError
from ..io import surface_file
from ..io.paths import cache_folder
from ..losses import Loss
from ..parallel.comm import agree
from . import batchnorm, choices, cost, kernels, tuning
from .config import SurfaceJob
from .evaluation import EvaluationConfig, Evaluator
from .inputs import Loaded


def evaluator(
    job: SurfaceJob,
    loaded: Loaded,
    d: dirs.Directions,
    loss,
    device: str,
    cfg: EvaluationConfig,
    samples: int | None = None,
) -> Evaluator:
    """The evaluator for ``cfg``, on all the data or on its first ``samples`` samples per set (tuning)."""
    origin = dirs.origin_tensors(loaded.model, d.dir_type)
    sets = _sets(loaded)
    if samples is not None:
        sets = {name: Samples(s.inputs[:samples], s.targets[:samples]) for name, s in sets.items()}
    bn = batchnorm.resolve(cfg.bn, d.dir_type)[0]
    ev = Evaluator(
        loaded.model,
        origin,
        d.x,
        d.y,
        sets,
        Loss(loss if loss is not None else cfg.loss_name),
        cfg,
        bn=bn,
        stderr=job.data.train_subset is not None,
        device=device,
    )
    ev.probe()
    return ev


def _recorded(path: str, rank: int) -> dict | None:
    """Rank 0: the settings the latest run of a resumed surface file recorded (None: none, or no file)."""
    if rank != 0:
        return None
    for record in reversed(surface_file.recorded_runs(path)):
        if {"kernel", "batch_size", "points_per_pass"} <= record.keys():
            return {key: record[key] for key in ("kernel", "batch_size", "points_per_pass", "device")}
    return None


def _sets(loaded: Loaded) -> dict[str, Samples]:
    """The data sets a surface evaluates, by name."""
    return {"train": loaded.data.train, **({"test": loaded.data.test} if loaded.data.test is not None else {})}


def _remembered(loaded: Loaded, device: str, cfg: EvaluationConfig, loss, rank: int):
    """Rank 0: the key of this problem in the remembered choices, and the choice kept there (or None)."""
    if rank != 0:
        return None
    given = {
        "loss": cfg.loss_name if loss is None else f"{type(loss).__module__}.{type(loss).__qualname__}",
        "dtype": cfg.dtype,
        "bn": cfg.bn,
        "kernel": cfg.kernel,
        "batch_size": cfg.batch_size,
        "points_per_pass": cfg.points_per_pass,
    }
    digest = choices.key(loaded.model, _sets(loaded), device, torch.get_num_threads(), given)
    return digest, choices.recalled(digest)


def _shape(loaded: Loaded, rank: int) -> cost.Shape | None:
    """Rank 0: the model's per-sample shape (``cost``), on two training samples; None where the model
    cannot be run on them alone (``auto`` then starts at the reference's batch and measures)."""
    if rank != 0:
        return None
    try:
        return cost.shape_of(loaded.model, loaded.data.train.inputs[:2])
    except (RuntimeError, TypeError, ValueError):
        return None


def resolve(job: SurfaceJob, loaded: Loaded, d: dirs.Directions, loss, device: str, comm):
    """``auto`` kernel, batch size and points per pass resolved: as the latest run of a resumed file
    recorded them (on the same kind of device), else measured (every rank at once, as they will compute
    the surface; every step agreed).  Returns (config, how it was chosen)."""
    cfg = job.evaluation
    if cfg.resolved:
        return cfg, ""
    # every step below rests on what all ranks share (rank 0's reading, broadcast; failures agreed), so
    # that every rank takes the same steps and meets the others at the same exchanges
    stored = comm.bcast(agree(comm, _recorded, job.surf_file, comm.rank))
    samples = min(tuning.SAMPLES, len(loaded.data.train))
    built = {}  # one evaluator per kernel and points per pass, rebatched for each batch size

    def make(setting: tuning.Setting) -> Evaluator:
        key = (setting.kernel, setting.points_per_pass)
        if key not in built:
            built[key] = evaluator(
                job,
                loaded,
                d,
                loss,
                device,
                replace(
                    cfg, kernel=setting.kernel, batch_size=setting.batch_size, points_per_pass=setting.points_per_pass
                ),
                samples,
            )
        return built[key].rebatched(setting.batch_size)

    first = agree(
        comm,
        make,
        tuning.Setting(
            "reference" if cfg.kernel == tuning.AUTO else cfg.kernel,
            tuning.FIRST_BATCH if cfg.batch_size == tuning.AUTO else cfg.batch_size,
            1 if cfg.points_per_pass == tuning.AUTO else min(cfg.points_per_pass, job.grid.size),
        ),
    )
    names = kernels.candidates(first.problem) if cfg.kernel == tuning.AUTO else [cfg.kernel]
    largest, names = comm.bcast((first.sets.largest_pass, names))
    if (
        stored
        and stored.get("device", "cpu").split(":")[0] == device.split(":")[0]
        and (cfg.kernel == tuning.AUTO and stored["kernel"] in names or cfg.kernel == stored["kernel"])
    ):
        chosen = replace(
            cfg,
            **{
                key: stored[key] if getattr(cfg, key) == tuning.AUTO else getattr(cfg, key)
                for key in ("kernel", "batch_size", "points_per_pass")
            },
        )
        return chosen, (
            f"kernel {chosen.kernel}, batch {chosen.batch_size}, {chosen.points_per_pass} point(s) "
            "per pass (as the surface file's latest run records)"
        )
    measured = sum(min(len(s), samples) for s in (loaded.data.train, loaded.data.test) if s is not None)
    whole = sum(len(s) for s in (loaded.data.train, loaded.data.test) if s is not None)
    shape = comm.bcast(agree(comm, _shape, loaded, comm.rank))  # rank 0's reading: one start for every rank
    start = cost.start_batch(shape, largest) if shape is not None else tuning.FIRST_BATCH
    work = cost.predicted_seconds(shape, whole, job.grid.size, device) if shape is not None else None
    if work is not None and work < cost.MEASURE_AFTER:
        batch = start if cfg.batch_size == tuning.AUTO else cfg.batch_size
        chosen = replace(
            cfg,
            kernel=names[0] if cfg.kernel == tuning.AUTO else cfg.kernel,
            batch_size=batch,
            points_per_pass=(
                cost.start_points(shape, batch, largest, job.grid.size)
                if cfg.points_per_pass == tuning.AUTO
                else cfg.points_per_pass
            ),
        )
        return chosen, (
            f"kernel {chosen.kernel}, batch {chosen.batch_size}, {chosen.points_per_pass} point(s) per pass, "
            f"from the model's shape (about {work:.1f} s of forward work at full speed: too short to be worth "
            "measuring)"
        )
    digest, remembered = comm.bcast(agree(comm, _remembered, loaded, device, cfg, loss, comm.rank))
    if remembered and (
        remembered["kernel"] in names if cfg.kernel == tuning.AUTO else remembered["kernel"] == cfg.kernel
    ):
        chosen = replace(
            cfg, **{k: remembered[k] if getattr(cfg, k) == tuning.AUTO else getattr(cfg, k) for k in choices.FIELDS}
        )
        return chosen, (
            f"kernel {chosen.kernel}, batch {chosen.batch_size}, {chosen.points_per_pass} point(s) per pass, as "
            f"measured before for this model, data, device and threads ({os.path.join(cache_folder(), choices.FILE)})"
        )
    request = tuning.Request(
        largest,
        cfg.batch_size,
        cfg.points_per_pass,
        tuple(names),
        points=job.grid.size,
        points_per_rank=job.grid.size / comm.size,
        ranks=comm.size,
        scale=whole / measured,
        start=start,
    )
    choice = tuning.tune(make, request, together=lambda measure: comm.allgather(agree(comm, measure)))
    if comm.rank == 0 and choice.points_per_second > 0:
        choices.remember(digest, {k: getattr(choice, k) for k in choices.FIELDS})
    return replace(
        cfg, kernel=choice.kernel, batch_size=choice.batch_size, points_per_pass=choice.points_per_pass
    ), choice.describe(samples=samples)


def compile_seconds(ev: Evaluator) -> float:
    """Seconds to compile ``ev``'s kernel, by evaluating the centre (compilation happens at the first call)."""
    started = time.perf_counter()
    try:
        ev.evaluate(np.zeros((ev.points_per_pass, 2)))
        if ev.points_per_pass > 1:  # a chunk of one point (the grid's last, say) takes the one-point kernel
            ev.evaluate(np.zeros((1, 2)))
    except EvaluationError as exc:
        raise EvaluationError(f"kernel compiled: {exc}; choose another kernel") from None
    return time.perf_counter() - started
