"""A surface job from start to end: one configuration per concern, then a sequence of named steps.

This is the only module that composes the pieces: model and data, directions,
the evaluation kernel, the surface file, its lock, the writer and the scheduler.
It talks to other ranks only through the small communicator interface of
``parallel.comm``; every step that can fail on one rank is ``agree``d, so a
failure ends all ranks together and is printed once.
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, replace

import numpy as np
import torch

from .. import directions as dirs
from ..data import Data, made_once
from ..errors import CollectiveFailure, RanksLost, Stopped
from ..io import surface_file
from ..io.lock import SurfaceLock
from ..io.writer import choose, open_writer
from ..parallel import devices
from ..parallel import stop as stop_signals
from ..parallel.comm import agree, placement, same_everywhere, threads_per_rank
from ..parallel.scheduler import run_points
from ..parallel.stop import StopSignals
from ..provenance import command_line, machine, sha256_tensors, versions
from . import inputs, settings
from .config import SurfaceJob
from .evaluation import LOW_PRECISION, Evaluator
from .identity import how, identity
from .progress import Progress, duration


@dataclass(frozen=True)
class Summary:
    """What a job did, the same on every rank."""

    surf_file: str
    dir_file: str
    quantities: list[str]
    ndim: int
    points_computed: int
    computed_here: int
    seconds: float
    points_per_second: float
    points_per_second_per_rank: float
    stopped_by: str | None = None


def _columns(ev: Evaluator, float32_centre=None) -> dict[str, dict]:
    """Each quantity's dataset attributes; in bfloat16 or float16 also the centre in both precisions,
    so a reader of the file sees what the low precision does (``float32_centre()`` evaluates it)."""
    columns = {q.name: {"long_name": q.long_name, "units": q.units(ev.loss.name)} for q in ev.quantities}
    if float32_centre is not None:
        low, high = ev.evaluate(np.zeros((1, 2)))[0], float32_centre()
        for name, a, b in zip(ev.names, low, high):
            columns[name].update({"at_centre": a, "float32_at_centre": b, "difference_at_centre": a - b})
    return columns


@dataclass(frozen=True)
class _Opened:
    done: np.ndarray  # the done mask of the file as this run finds it
    run: int  # this run's number in the file's run records
    previous: str = ""  # how the file's last run ended when not complete ("stopped by SIGTERM", "lost rank 1 on node2")


def _start_record(job: SurfaceJob, ranks: int, threads: int, io: str) -> dict:
    return {
        "command_line": command_line(list(job.run.argv) or None),
        "ranks": ranks,
        "threads_per_rank": threads,
        "io": io,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "surf_file": job.surf_file,
        "dir_file": job.dir_file,
        "settings": job.run.settings,
        **machine(),
        **versions(),
    }


def _open_surface(
    job: SurfaceJob, ev: Evaluator, identity: dict, record: dict, held: ExitStack, rank: int, float32_centre=None
) -> _Opened | None:
    """Rank 0: lock the surface file, make it or check it, and record the start of this run."""
    if rank != 0:
        return None
    path, grid = job.surf_file, job.grid
    held.enter_context(SurfaceLock(path, record["command_line"]))
    previous = ""
    if os.path.exists(path):
        done = surface_file.open_for_resume(path, grid.xcoordinates(), grid.ycoordinates(), ev.names, identity)
        recorded = surface_file.recorded_runs(path)
        if recorded and recorded[-1].get("ended") != "complete":
            previous = recorded[-1].get("ended", "killed (no end recorded)")
    else:
        surface_file.create(path, grid.xcoordinates(), grid.ycoordinates(), _columns(ev, float32_centre), identity)
        done = np.zeros(grid.shape, bool)
    return _Opened(done, surface_file.append_run(path, "start", record), previous)


# --------------------------------------------------------------------------- the job


def run_surface(job: SurfaceJob, comm, say=print, *, model=None, data: Data | None = None, loss=None) -> Summary:
    """Compute (or finish) the surface described by ``job``; return a summary on every rank.

    ``model`` (an ``nn.Module``, never modified), ``data`` and ``loss`` (a callable)
    replace what ``job`` names: that is how the Python API passes objects.
    """
    loud = comm.rank == 0 and not job.run.quiet
    show = say if loud else (lambda *a, **k: None)
    surf_path, dir_path = job.surf_file, job.dir_file

    # every rank runs this very job (an MPMD launch may give the ranks other flags): before any work
    agree(comm, same_everywhere, comm, "the job", replace(job, run=replace(job.run, argv=())))
    threads = agree(comm, threads_per_rank, comm, job.run.threads)
    if threads.note:
        show(f"note: {threads.note}")
    torch.set_num_threads(threads.count)
    agree(comm, inputs.check_outputs, job)
    io = agree(comm, choose, job.run.io, comm.size)
    device = agree(comm, devices.for_rank, job.run.device, comm, job.run.allow_shared_gpus)

    if data is None:  # a plug-in's generated data set: made once, sent to every rank
        data = made_once(comm, job.data)
    loaded = agree(comm, inputs.load, job, model, data, show)
    loaded.prints = inputs.fingerprints(loaded)
    agree(comm, same_everywhere, comm, "the model and data", loaded.prints, inputs.DIFFERENT_INPUTS)

    agree(comm, inputs.draw_directions, job, loaded, comm.rank, show)  # its allgather keeps others from reading early
    directions = agree(comm, inputs.read_directions, job, loaded.model)
    if (
        loud
        and directions.origin_sha256
        and directions.origin_sha256 != sha256_tensors(dirs.origin_tensors(loaded.model, directions.dir_type))
    ):
        show(
            f"note: {dir_path} was normalized against other weights than this model's "
            "(fine for a shared direction, but not filter-normalized for this model)"
        )

    tuning_started = time.perf_counter()
    resolved, chosen = comm.bcast(agree(comm, settings.resolve, job, loaded, directions, loss, device, comm))
    tuned_in = round(time.perf_counter() - tuning_started, 3)
    if chosen:
        show(f"auto: {chosen}")
    ev = agree(comm, settings.evaluator, job, loaded, directions, loss, device, resolved)
    if ev.note:
        show(f"note: {ev.note}")
    recorded_identity = identity(job, loaded, directions, ev)
    agree(comm, same_everywhere, comm, "the surface", {**recorded_identity, **how(ev)})  # all that makes a value
    grid = job.grid

    with ExitStack() as held:  # rank 0 holds the surface file's lock until the end record is written
        record = {
            **_start_record(job, comm.size, threads.count, io),
            "placement": placement(comm),  # every rank's host
            **devices.record(device),
            **how(ev),
            **({"auto": chosen, "tune_seconds": tuned_in} if chosen else {}),
        }
        float32_centre = None
        if ev.cfg.dtype in LOW_PRECISION:
            reference = replace(ev.cfg, dtype="float32", kernel="reference", points_per_pass=1)
            float32_centre = lambda: settings.evaluator(job, loaded, directions, loss, device, reference).evaluate(
                np.zeros((1, 2))
            )[0]
        opened = comm.bcast(
            agree(comm, _open_surface, job, ev, recorded_identity, record, held, comm.rank, float32_centre)
        )
        done, run_number = opened.done, opened.run
        if opened.previous and done.any():
            show(f"the last run of {surf_path} ended: {opened.previous}")
        todo = np.flatnonzero(~done.reshape(-1))
        where = (
            f"{comm.size} rank{'s' * (comm.size > 1)} x {threads.count} thread{'s' * (threads.count > 1)}"
            if device == "cpu"
            else f"{comm.size} rank{'s' * (comm.size > 1)} on {device} (rank 0)"
        )
        show(
            f"{surf_path}: {grid.size} points ({' x '.join(map(str, grid.shape))}), {grid.size - len(todo)} already "
            f"done, {len(todo)} to compute on {where} ({io} writes); quantities {', '.join(ev.names)}"
        )
        compiled_in = None
        if len(todo) and ev.kernel.name == "compiled":  # before the clock starts: every rank compiles once, seconds
            compiled_in = comm.max(agree(comm, settings.compile_seconds, ev))
            show(f"compiled in {compiled_in:.1f} s (torch.compile, slowest rank)")
        writer = agree(comm, open_writer, io, comm, surf_path, ev.names)
        progress = Progress(grid.size, grid.size - len(todo), enabled=loud, every=job.run.progress_seconds)
        # No try/finally around the writer: closing an mpio file is collective, so only a failure
        # every rank knows of (an agreed one) closes it; a rank that failed alone must reach the
        # error boundary (which aborts the job) instead of waiting for ranks that never come.
        try:
            with nullcontext(stop_signals.installed()) if stop_signals.installed() else StopSignals() as stop:
                outcome = run_points(
                    ev.evaluate,
                    grid.points(np.arange(grid.size)),
                    todo,
                    comm,
                    writer,
                    progress=progress,
                    round_seconds=job.run.round_seconds,
                    per_pass=ev.points_per_pass,
                    stop=stop,
                )
        except CollectiveFailure:
            writer.close()
            raise
        except RanksLost as lost:  # the other ranks are gone or leaving: rank 0 records how the run ended
            if comm.rank == 0 and not writer.collective_close:
                writer.close()
                seconds = progress.elapsed()
                ending = {
                    "points_computed": int(lost.computed),
                    "seconds": round(seconds, 3),
                    "ended": f"lost {lost.named}",
                }
                surface_file.append_run(surf_path, "end", ending, run=run_number)
            raise
        writer.close()
        seconds = progress.elapsed()
        rate = outcome.computed / seconds if seconds > 0 and outcome.computed else 0.0
        ending = {
            "points_computed": int(outcome.computed),
            "seconds": round(seconds, 3),
            "points_per_second": round(rate, 3),
            "points_per_second_per_rank": round(rate / comm.size, 3),
            "ended": f"stopped by {outcome.stopped_by}" if outcome.stopped_by else "complete",
            **({"compile_seconds": round(compiled_in, 3)} if compiled_in is not None else {}),
        }
        if comm.rank == 0:
            surface_file.append_run(surf_path, "end", ending, run=run_number)
    if len(todo):
        progress.update(outcome.computed, final=True)
    if outcome.stopped_by:
        left = len(todo) - outcome.computed
        raise Stopped(
            f"stopped by {outcome.stopped_by} after saving {outcome.computed} points; {left} of "
            f"{grid.size} are left in {surf_path}: rerun the same command to finish"
        )
    if len(todo):
        show(
            f"done: {outcome.computed} points in {duration(seconds)} ({seconds:.2f} s), {rate:.1f} points/s, "
            f"{rate / comm.size:.1f} per rank; surface in {surf_path}"
        )
    else:
        show(f"nothing to compute: all {grid.size} points of {surf_path} are done")
    return Summary(
        surf_path,
        dir_path,
        ev.names,
        grid.ndim,
        outcome.computed,
        outcome.computed_here,
        round(seconds, 3),
        round(rate, 3),
        round(rate / comm.size, 3),
        outcome.stopped_by,
    )
