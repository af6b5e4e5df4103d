"""A surface job from start to end: one configuration per concern, then a sequence of named steps.

This is the only module that composes the pieces: model and data, directions,
the evaluation kernel, the surface file, its lock, the writer and the scheduler.
It talks to other ranks only through the small communicator interface of
``parallel.comm``; every step that can fail on one rank is ``agree``d, so a
failure ends all ranks together and is printed once.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from .. import directions as dirs
from ..data import SUBSET_SEED, Data, DataConfig, Samples, load_data
from ..errors import CollectiveFailure, ConfigError, EvaluationError, InputError, Stopped, UsageError, param
from ..grid import Grid
from ..io import direction_file, paths, surface_file
from ..io.lock import SurfaceLock
from ..io.writer import IO_MODES, choose, open_writer
from ..losses import Loss
from ..models import ModelConfig, load_model
from ..parallel import devices
from ..parallel import stop as stop_signals
from ..parallel.comm import agree, threads_per_rank
from ..parallel.scheduler import run_points
from ..parallel.stop import StopSignals
from ..plugins import canonical
from ..provenance import command_line, machine, sha256_file, sha256_tensors, versions
from . import batchnorm, direction_set, kernels, tuning
from .direction_set import DirectionConfig
from .evaluation import LOW_PRECISION, EvaluationConfig, Evaluator
from .progress import Progress, duration


@dataclass(frozen=True)
class RunConfig:
    """Where the surface goes and how the job runs."""

    surf_file: str | None = None  # default: <model_file>.surface.h5, or surface.h5
    threads: int | None = None  # torch threads per rank; default: the node's cores / its ranks
    io: str = "auto"  # mpio, gather, auto
    round_seconds: float = 5.0  # target time between writes: the most a crash can lose
    quiet: bool = False
    progress_seconds: float | None = None  # between progress lines; default 1 in a terminal, 60 in a file
    device: str = "auto"  # auto (CUDA when there is one), cpu, cuda, cuda:N
    allow_shared_gpus: bool = False  # let several ranks of a node share a GPU
    argv: tuple[str, ...] = ()  # the command line, for the run record

    def __post_init__(self):
        object.__setattr__(self, "surf_file", paths.config_path(self.surf_file, "surf_file"))
        devices.check_spec(self.device)
        if self.threads is not None and (
            isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1
        ):
            raise ConfigError("threads", self.threads, "a positive number of threads", literal=True)
        if self.io not in IO_MODES:
            raise ConfigError("io", self.io, f"one of {', '.join(IO_MODES)}")
        if (
            isinstance(self.round_seconds, bool)
            or not isinstance(self.round_seconds, (int, float))
            or not math.isfinite(self.round_seconds)
            or self.round_seconds <= 0
        ):
            raise ConfigError("round_seconds", self.round_seconds, "a positive, finite number of seconds", literal=True)
        if self.progress_seconds is not None and (
            isinstance(self.progress_seconds, bool)
            or not isinstance(self.progress_seconds, (int, float))
            or not math.isfinite(self.progress_seconds)
            or self.progress_seconds < 0
        ):
            raise ConfigError(
                "progress_seconds", self.progress_seconds, "a finite number of seconds >= 0", literal=True
            )


@dataclass(frozen=True)
class SurfaceJob:
    """Everything a surface depends on, one validated part per concern."""

    model: ModelConfig
    grid: Grid
    data: DataConfig = DataConfig()
    directions: DirectionConfig = DirectionConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    run: RunConfig = RunConfig()

    def __post_init__(self):
        self.directions.check_grid(self.grid.ndim)
        batchnorm.resolve(self.evaluation.bn, self.directions.dir_type)

    @property
    def surf_file(self) -> str:
        model_file = self.model.model_file
        return self.run.surf_file or (f"{model_file}.surface.h5" if model_file else "surface.h5")

    @property
    def dir_file(self) -> str:
        surf = self.surf_file
        return self.directions.dir_file or f"{surf[:-3] if surf.endswith('.h5') else surf}.directions.h5"

    def wanted_dir_type(self) -> str | None:
        """The direction type asked for, by dir_type or implied by bn; None: the default or the file's."""
        if self.evaluation.bn is None:
            return self.directions.dir_type
        return batchnorm.resolve(self.evaluation.bn, self.directions.dir_type)[1]


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


@dataclass
class _Loaded:
    data: Data
    model: torch.nn.Module
    prints: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- steps


def _check_outputs(job: SurfaceJob) -> None:
    """Before any work: the folders exist and can be written, an existing surface can be updated."""
    surf, directions = job.surf_file, job.dir_file
    if os.path.abspath(surf) == os.path.abspath(directions):
        raise UsageError(f"{param('surf_file')} and {param('dir_file')} are both {surf}: expected two files")
    paths.output_path(surf, "surface file", "surf_file")
    if os.path.lexists(directions):
        paths.readable_file(directions, "direction file")
    else:
        paths.output_path(directions, "direction file", "dir_file")
    if os.path.exists(surf) and not (
        os.access(surf, os.R_OK | os.W_OK) and os.access(os.path.dirname(os.path.abspath(surf)), os.W_OK)
    ):
        raise InputError(
            f"surface file {surf} cannot be read and written (or its folder cannot be written), so "
            f"it cannot be resumed or recorded; change its permissions or choose another {param('surf_file')}",
        )


def _load(job: SurfaceJob, given_model, given_data, say) -> _Loaded:
    data = load_data(job.data, given_data)
    if given_model is not None:
        return _Loaded(data, given_model)
    seed = direction_set.DEFAULT_SEED if job.directions.seed is None else job.directions.seed
    model = load_model(job.model, job.model.classes(job.data.dataset), job.model.model_file, seed, say)
    return _Loaded(data, model)


def _fingerprints(loaded: _Loaded) -> dict:
    data = loaded.data
    return {
        "origin": sha256_tensors(loaded.model.state_dict()),
        "train": sha256_tensors({"x": data.train.inputs, "y": data.train.targets}),
        "test": sha256_tensors({"x": data.test.inputs, "y": data.test.targets}) if data.test is not None else "",
    }


def _same_everywhere(comm, prints: dict) -> None:
    """A model or data that differ between ranks would make a silent patchwork."""
    if len({tuple(p.values()) for p in comm.allgather(prints)}) > 1:
        raise InputError(
            "the ranks hold different models or data (a factory that is not deterministic?); "
            "every rank must build the same network and data set"
        )


def _directions(job: SurfaceJob, model, rank: int, say) -> None:
    """Rank 0 draws the directions and writes them, unless the direction file exists."""
    if rank != 0 or os.path.exists(job.dir_file):
        return
    dir_type = job.wanted_dir_type() or direction_set.DEFAULT_DIR_TYPE
    origin = _origin(job, model, dir_type)

    def target(path: str) -> dict:
        other = load_model(job.model, job.model.classes(job.data.dataset), path, 0)
        return dirs.origin_tensors(other, dir_type)

    drawn = direction_set.draw(job.directions, job.grid.ndim, origin, dir_type, target, job.model.model)
    direction_file.write(job.dir_file, drawn)
    say(f"wrote directions to {job.dir_file}")
    if drawn.trajectory is not None:
        xy, t = drawn.trajectory.coordinates, drawn.trajectory
        inside = all(
            axis.lo <= lo and hi <= axis.hi
            for axis, lo, hi in (
                (job.grid.x, xy[:, 0].min(), xy[:, 0].max()),
                (job.grid.y, xy[:, 1].min(), xy[:, 1].max()),
            )
        )
        say(
            f"trajectory of {len(xy)} checkpoints: PC1 {100 * t.explained[0]:.1f} %, "
            f"PC2 {100 * t.explained[1]:.1f} % of its variance (a random walk: {100 * t.random_walk[0]:.0f} %, "
            f"{100 * t.random_walk[1]:.0f} %); it spans "
            f"x {xy[:, 0].min():.3g}..{xy[:, 0].max():.3g}, y {xy[:, 1].min():.3g}..{xy[:, 1].max():.3g}"
            + ("" if inside else " — beyond this grid: widen x and y to see all of it")
        )


def _origin(job: SurfaceJob, model, dir_type: str) -> dict:
    """The tensors the directions move, at the centre: there must be some, and they must be finite."""
    origin = dirs.origin_tensors(model, dir_type)
    if not origin:
        raise InputError(
            f"model {job.model.model} has no floating-point "
            f"{'parameters' if dir_type == 'weights' else 'state_dict entries'} for the directions "
            f"to move ({param('dir_type')}={dir_type})",
        )
    dirs.check_finite(
        origin, f"checkpoint {job.model.model_file}" if job.model.model_file else f"model {job.model.model}"
    )
    return origin


def _read_directions(job: SurfaceJob, model) -> dirs.Directions:
    stored = direction_file.read(job.dir_file)
    if stored.reference:
        stored = direction_set.named(stored, model, job.wanted_dir_type(), job.dir_file)
    origin = _origin(job, model, stored.dir_type)
    return direction_set.check(job.directions, stored, job.grid.ndim, origin, job.dir_file)


def _identity(job: SurfaceJob, loaded: _Loaded, d: dirs.Directions, ev: Evaluator) -> dict:
    """What a surface's values are values of: an existing file must match it field for field.

    How they were computed (kernel, batch size, points per pass, device, threads, versions) is
    provenance, kept in each run's record: it changes the values' last bits only, so a surface begun one
    way may be finished another, and its run records say which points came from which run."""
    data, prints = loaded.data, loaded.prints
    identity = {
        "grid_x": job.grid.x.spec,
        "grid_y": job.grid.y.spec if job.grid.y else "",
        "model": canonical(job.model.model),
        "origin_sha256": prints["origin"],
        "model_file_sha256": sha256_file(job.model.model_file) if job.model.model_file else "",
        "dataset": canonical(data.name),
        "train_size": len(data.train),
        "raw_data": bool(job.data.raw_data),
        "data_split": job.data.data_split,
        "split_idx": job.data.split_idx,
        "train_subset": -1 if job.data.train_subset is None else job.data.train_subset,
        "subset_seed": SUBSET_SEED,
        "train_sha256": prints["train"],
        "test_size": len(data.test) if data.test is not None else 0,
        "test_sha256": prints["test"],
        "loss_name": ev.loss.name,
        "dtype": ev.cfg.dtype,
        "bn": "recalibrate" if ev.problem.recalibrator else ("states" if d.dir_type == "states" else "eval"),
        "bn_batches": len(ev.problem.recalibrator.batches) if ev.problem.recalibrator else 0,
        "bn_batch_size": len(ev.problem.recalibrator.batches[0]) if ev.problem.recalibrator else 0,
        "dir_type": d.dir_type,
        "dir_seed": d.seed,
        "same_dir": bool(d.same_dir),
        "directions_sha256": d.digest,
    }
    if ev.cfg.curvature:  # only then: files without curvature keep the identity they always had
        identity.update(curvature=True, curvature_tol=ev.cfg.curvature_tol, curvature_method="eigsh")
    for axis, info in zip("xy", d.axes[: job.grid.ndim]):
        identity[f"{axis}direction"] = info.kind
        identity[f"{axis}norm"] = info.norm
        identity[f"{axis}ignore"] = info.ignore
        if info.target_sha256:
            identity[f"model_file{2 if axis == 'x' else 3}_sha256"] = info.target_sha256
    return identity


def _how(ev: Evaluator) -> dict:
    """How this run computes its points: its run record's part that the identity leaves out."""
    return {
        "kernel": ev.kernel.name,
        "batch_size": ev.cfg.batch_size,
        "points_per_pass": ev.points_per_pass,
        "set_passes": "joined" if ev.sets.joined else "apart",
        **({"first_layer": "by linearity"} if getattr(ev.kernel, "start", None) is not None else {}),
    }


def _columns(ev: Evaluator, float32_centre=None) -> dict[str, dict]:
    """Each quantity's dataset attributes; in bfloat16 or float16 also the centre in both precisions,
    so a reader of the file sees what the low precision does (``float32_centre()`` evaluates it)."""
    columns = {q.name: {"long_name": q.long_name, "units": q.units(ev.loss.name)} for q in ev.quantities}
    if float32_centre is not None:
        low, high = ev.evaluate(np.zeros((1, 2)))[0], float32_centre()
        for name, a, b in zip(ev.names, low, high):
            columns[name].update({"at_centre": a, "float32_at_centre": b, "difference_at_centre": a - b})
    return columns


def _evaluator(
    job: SurfaceJob,
    loaded: _Loaded,
    d: dirs.Directions,
    loss,
    device: str,
    cfg: EvaluationConfig,
    samples: int | None = None,
) -> Evaluator:
    """The evaluator for ``cfg``, on all the data or on its first ``samples`` samples per set (tuning)."""
    origin = dirs.origin_tensors(loaded.model, d.dir_type)
    sets = {"train": loaded.data.train, **({"test": loaded.data.test} if loaded.data.test is not None else {})}
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


def _settings(job: SurfaceJob, loaded: _Loaded, d: dirs.Directions, loss, device: str, comm):
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
            built[key] = _evaluator(
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
    choice = tuning.tune(
        make,
        largest,
        cfg.batch_size,
        cfg.points_per_pass,
        names,
        points_per_rank=job.grid.size / comm.size,
        ranks=comm.size,
        scale=whole / measured,
        together=lambda measure: comm.allgather(agree(comm, measure)),
        points=job.grid.size,
    )
    return replace(
        cfg, kernel=choice.kernel, batch_size=choice.batch_size, points_per_pass=choice.points_per_pass
    ), choice.describe(samples=samples)


def _compile(ev: Evaluator) -> float:
    """Seconds to compile ``ev``'s kernel, by evaluating the centre (compilation happens at the first call)."""
    started = time.perf_counter()
    try:
        ev.evaluate(np.zeros((ev.points_per_pass, 2)))
        if ev.points_per_pass > 1:  # a chunk of one point (the grid's last, say) takes the one-point kernel
            ev.evaluate(np.zeros((1, 2)))
    except EvaluationError as exc:
        raise EvaluationError(f"kernel compiled: {exc}; choose another kernel") from None
    return time.perf_counter() - started


@dataclass(frozen=True)
class _Opened:
    done: np.ndarray  # the done mask of the file as this run finds it
    run: int  # this run's number in the file's run records


def _start_record(job: SurfaceJob, ranks: int, threads: int, io: str) -> dict:
    return {
        "command_line": command_line(list(job.run.argv) or None),
        "ranks": ranks,
        "threads_per_rank": threads,
        "io": io,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "surf_file": job.surf_file,
        "dir_file": job.dir_file,
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
    if os.path.exists(path):
        done = surface_file.open_for_resume(path, grid.xcoordinates(), grid.ycoordinates(), ev.names, identity)
    else:
        surface_file.create(path, grid.xcoordinates(), grid.ycoordinates(), _columns(ev, float32_centre), identity)
        done = np.zeros(grid.shape, bool)
    return _Opened(done, surface_file.append_run(path, "start", record))


# --------------------------------------------------------------------------- the job


def run_surface(job: SurfaceJob, comm, say=print, *, model=None, data: Data | None = None, loss=None) -> Summary:
    """Compute (or finish) the surface described by ``job``; return a summary on every rank.

    ``model`` (an ``nn.Module``, never modified), ``data`` and ``loss`` (a callable)
    replace what ``job`` names: that is how the Python API passes objects.
    """
    loud = comm.rank == 0 and not job.run.quiet
    show = say if loud else (lambda *a, **k: None)
    surf_path, dir_path = job.surf_file, job.dir_file

    threads = agree(comm, threads_per_rank, comm, job.run.threads)
    if threads.note:
        show(f"note: {threads.note}")
    torch.set_num_threads(threads.count)
    agree(comm, _check_outputs, job)
    io = agree(comm, choose, job.run.io, comm.size)
    device = agree(comm, devices.for_rank, job.run.device, comm, job.run.allow_shared_gpus)

    loaded = agree(comm, _load, job, model, data, show)
    loaded.prints = _fingerprints(loaded)
    agree(comm, _same_everywhere, comm, loaded.prints)

    agree(comm, _directions, job, loaded.model, comm.rank, show)  # its allgather keeps others from reading early
    directions = agree(comm, _read_directions, job, loaded.model)
    if (
        loud
        and directions.origin_sha256
        and directions.origin_sha256 != sha256_tensors(dirs.origin_tensors(loaded.model, directions.dir_type))
    ):
        show(
            f"note: {dir_path} was normalized against other weights than this model's "
            "(fine for a shared direction, but not filter-normalized for this model)"
        )

    settings, chosen = comm.bcast(agree(comm, _settings, job, loaded, directions, loss, device, comm))
    if chosen:
        show(f"auto: {chosen}")
    ev = agree(comm, _evaluator, job, loaded, directions, loss, device, settings)
    if ev.note:
        show(f"note: {ev.note}")
    identity = _identity(job, loaded, directions, ev)
    grid = job.grid

    with ExitStack() as held:  # rank 0 holds the surface file's lock until the end record is written
        record = {
            **_start_record(job, comm.size, threads.count, io),
            **devices.record(device),
            **_how(ev),
            **({"auto": chosen} if chosen else {}),
        }
        float32_centre = None
        if ev.cfg.dtype in LOW_PRECISION:
            reference = replace(ev.cfg, dtype="float32", kernel="reference", points_per_pass=1)
            float32_centre = lambda: _evaluator(job, loaded, directions, loss, device, reference).evaluate(
                np.zeros((1, 2))
            )[0]
        opened = comm.bcast(agree(comm, _open_surface, job, ev, identity, record, held, comm.rank, float32_centre))
        done, run_number = opened.done, opened.run
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
            compiled_in = comm.max(agree(comm, _compile, ev))
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
