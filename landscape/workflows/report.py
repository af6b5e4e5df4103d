"""``landscape report`` as a function: the scorecard of a batch-size study, from a manifest of trained
networks.

For every finished run of the manifest it computes (or reads back) a 1-D and a 2-D surface and the
curvature measures (``report.measures``), then writes the tables (CSV, Markdown, LaTeX, JSON), the
figures and the verdict.  Under ``mpiexec`` the ranks share the runs, each network on one rank (rank r
takes runs r, r + size, ...): the right split for a study of many networks.  ``config`` names a study
file whose report settings fill what is not given.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, replace

import torch

from .. import checks
from ..data import DataConfig
from ..errors import ConfigError, InputError, Stopped, UsageError, param
from ..models import NUM_CLASSES_HELP, ModelConfig
from ..parallel import comm as comm_module
from ..parallel import devices, stop
from ..parallel.comm import agree, same_everywhere, threads_per_rank
from ..parallel.devices import DEVICE_HELP, SHARED_GPUS_HELP
from ..plugins import ALLOW_RECORDED_HELP, check_recorded
from ..report.measure_config import MeasureConfig, Target
from ..report.measures import flagged, measure_run
from ..report.rescaling import origin_of
from ..report.runs import describe, manifest_files, read_runs
from ..report.scorecard import DEFAULT_ENDPOINTS, endpoints_of
from ..surface.kernels import CHOICES as KERNEL_CHOICES
from . import study_file as studies
from .command import Result
from .params import int_or_auto, option
from .report_files import FORMATS, STYLES, check_outputs, write_report
from .report_matched import ABANDONED, add_matched, add_path, levels_of, unless_stopped
from .sharpness_params import GROUP, SharpnessParams

_M = MeasureConfig  # the measures' defaults: one per setting, recorded with every run's measures
RUNS = "the runs"
MEASURES = "measures"
VERDICT = "verdict, tables and figures"
RUN = "execution"


@dataclass(frozen=True, kw_only=True)
class ReportParams(SharpnessParams):
    """``landscape report``'s parameters."""

    COMMAND = "report"
    DESCRIPTION = (
        "Scorecard of trained networks by batch size and recipe: losses, errors, gap, Hessian λmax and trace (also "
        "per layer), relative flatness, Fisher–Rao norm, gradient noise scale, six sharpness measures by name, the "
        "Hessian's spectral density, 1-D surfaces along a random and the top Hessian direction; tables, figures and "
        "a verdict."
    )
    GROUPS = (RUNS, MEASURES, GROUP, VERDICT, RUN)
    manifest: str | None = option(
        None,
        "a landscape sweep's manifest (or its folder), or a CSV of checkpoints (given by --config otherwise)",
        positional=True,
        nargs="?",
        group=RUNS,
    )
    config: str | None = option(
        None,
        "a landscape study file: its sweep's manifest, out/report, figures, name and [report] table, under the "
        "flags given here",
        group=RUNS,
    )
    out: str | None = option(
        None, "folder of the measurements: one runs/<run>/ per network (required, or from --config)", group=RUNS
    )
    figures: str | None = option(None, "folder of the scorecard: its tables and figures", shown="--out", group=VERDICT)
    name: str = option("scorecard", "stem of the tables' and figures' names", group=VERDICT)
    model: str | None = option(None, "the runs' model where the manifest does not say", group=RUNS)
    dataset: str | None = option(None, "the runs' data set where the manifest does not say", shown="digits", group=RUNS)
    datapath: str | None = option(None, "folder of the CIFAR files", group=RUNS)
    model_args: str | None = option(
        None, "the runs' model factory's arguments where their records say none", metavar="JSON", group=RUNS
    )
    data_args: str | None = option(
        None, "the runs' data set factory's arguments where their records say none", metavar="JSON", group=RUNS
    )
    num_classes: int | None = option(None, NUM_CLASSES_HELP, group=RUNS)
    allow_recorded_plugins: bool = option(False, ALLOW_RECORDED_HELP, group=RUNS)
    skip: tuple[str, ...] = option(
        _M.skip,
        "measures of the curvature suite not computed (their columns empty): lambda_max, trace, relative_flatness, "
        "fisher_rao, noise_scale, layers and the sharpness searches' keys",
        metavar="MEASURE",
        shown="none",
        group=MEASURES,
    )
    grid_1d: str = option(_M.grid_1d, "the 1-D surface, MIN:MAX:NUM", group=MEASURES)
    grid_2d: str = option(_M.grid_2d, "the 2-D surface along x and y", group=MEASURES)
    radius: float = option(_M.radius, "average and 2-D rise: the distance from the minimum", group=GROUP)
    trace_samples: int = option(_M.trace_samples, "Hutchinson: Rademacher vectors", group=MEASURES)
    tol: float = option(_M.tol, "Lanczos tolerance of λmax", group=MEASURES)
    density_steps: int = option(
        _M.density_steps,
        "the Hessian's spectral density (stochastic Lanczos quadrature): Lanczos steps per run",
        group=MEASURES,
    )
    density_runs: int = option(
        _M.density_runs, "the spectral density: runs from random vectors, averaged; 0: no density", group=MEASURES
    )
    dtype: str = option(_M.dtype, "Hessian products and searches", choices=("float32", "float64"), group=MEASURES)
    batch_size: int = option(_M.batch_size, "samples per forward pass", group=MEASURES)
    kernel: str = option(
        _M.kernel,
        "the surfaces' kernel, as landscape surface --kernel (auto measures, within a tenth of a surface's time: a "
        "small surface keeps the reference's settings)",
        choices=KERNEL_CHOICES,
        group=MEASURES,
    )
    points_per_pass: int | str = option(
        _M.points_per_pass,
        "the surfaces' grid points per call of the kernel, or auto",
        metavar="K",
        parse=int_or_auto,
        group=MEASURES,
    )
    train_subset: int | None = option(_M.train_subset, "a seeded subset of N training samples", metavar="N",
                                      group=MEASURES)  # fmt: skip
    loss_name: str = option(_M.loss_name, "crossentropy, mse or package.module:callable", group=MEASURES)
    seed: int = option(_M.seed, "directions and random vectors", group=MEASURES)
    endpoints: tuple[str, ...] = option(
        DEFAULT_ENDPOINTS,
        "the declared endpoints, Holm-adjusted; every other measure is exploratory: measure keys, comma- or "
        "space-separated",
        metavar="KEY",
        shown=",".join(DEFAULT_ENDPOINTS),
        group=VERDICT,
    )
    match_loss: str = option(
        "auto",
        "also measure each run at the weights it kept where its training loss first fell to a level (landscape "
        "train --save_at_loss): auto (per arm, the lowest level every run crossed in the learning-rate phase it "
        "ended in), a level, or off",
        group=MEASURES,
    )
    sharpness_path: bool = option(
        False,
        "also λmax and adaptive sharpness at every level a run kept weights at: sharpness against the training "
        "loss along training",
        group=MEASURES,
    )
    alpha: float = option(0.05, "significance level of the verdict", group=VERDICT)
    permutations: int = option(
        10000, "random permutations of a p-value when there are too many to enumerate", group=VERDICT
    )
    formats: tuple[str, ...] = option(("png", "pdf"), "figure formats: png, pdf, svg", group=VERDICT)
    style: str = option(
        "default", "the figures' look: paper (column widths, 8 pt fonts), talk (large)", choices=STYLES,
        group=VERDICT,
    )  # fmt: skip
    device: str = option("auto", DEVICE_HELP, group=RUN)
    allow_shared_gpus: bool = option(False, SHARED_GPUS_HELP, group=RUN)
    threads: int | None = option(None, "torch threads per rank (default: the node's cores / its ranks)", group=RUN)
    force: bool = option(
        False,
        "write the tables over an existing checkpoint, HDF5 file, training log, manifest or run record (refused "
        "otherwise; never over the manifest read)",
        group=RUN,
    )

    def __post_init__(self):
        object.__setattr__(self, "endpoints", endpoints_of(self.endpoints))
        object.__setattr__(self, "skip", (self.skip,) if isinstance(self.skip, str) else tuple(self.skip))
        if self.match_loss not in ("auto", "off"):
            try:
                level = float(self.match_loss)
            except (TypeError, ValueError):
                level = None
            if level is None or not (math.isfinite(level) and level > 0):
                raise ConfigError("match_loss", self.match_loss, "auto, off, or a positive training loss")
            object.__setattr__(self, "match_loss", level)
        checks.number("alpha", self.alpha, above=0, below=1)
        checks.whole("permutations", self.permutations, least=100, expected="at least 100")
        formats = [self.formats] if isinstance(self.formats, str) else list(self.formats)
        if not formats or any(f not in FORMATS for f in formats):
            raise ConfigError("formats", " ".join(map(str, formats)), f"some of {', '.join(FORMATS)}")
        object.__setattr__(self, "formats", tuple(formats))
        if self.style not in STYLES:
            raise ConfigError("style", self.style, f"one of {', '.join(STYLES)}")
        if not isinstance(self.name, str) or not self.name or os.sep in self.name:
            raise ConfigError("name", self.name, "a file name stem without a folder", literal=True)
        if self.threads is not None:
            checks.whole("threads", self.threads, expected="a positive number of threads")
        devices.check_spec(self.device)

    def measure_config(self) -> MeasureConfig:
        """The measures' settings (checked there)."""
        return MeasureConfig(**{f: getattr(self, f) for f in MeasureConfig.__dataclass_fields__})


NEEDED = ("manifest", "out")  # given, or from a study file (config)


@dataclass(frozen=True)
class ReportResult(Result):
    """The scorecard (``scorecard``: what ``<name>.json`` holds), the files written, and the runs left out."""

    scorecard: dict
    files: list[str]
    left_out: list[str]


def settings_of(params) -> tuple[ReportParams, MeasureConfig]:
    """The parameters (a ``ReportParams`` or a dict of those given; a study file's report settings, config,
    under those given) and the measures' settings, checked; no file is read but the study file."""
    p = ReportParams.given(params)
    if p.config:
        given = {k: v for k, v in p.record().items() if p.explicit(k)}
        p = ReportParams.of({**studies.report_params(studies.study_file(p.config)), **given})
    for name in NEEDED:
        if not getattr(p, name):
            raise ConfigError(name, getattr(p, name), "a value (or a study file, config, that gives it)")
    return p, p.measure_config()


def _targets(args, runs) -> dict[str, Target]:
    targets = {}
    for run in runs:
        model, dataset = run.model or args.model, run.dataset or args.dataset
        if not model:
            raise UsageError(
                f"the manifest does not say which model {run.name} is (no model column, and its "
                f"checkpoint records none): give {param('model')}"
            )
        for key, recorded, given in (("model", run.model, args.model), ("dataset", run.dataset, args.dataset)):
            # the manifest's (or the run's record's) factory runs only if the user names it too
            check_recorded(
                recorded, key, f"manifest {args.manifest} (run {run.name})", (given,), args.allow_recorded_plugins
            )
        try:  # a bad model name, data set or arguments now, not after the first network's surfaces
            m = ModelConfig(model, num_classes=args.num_classes, model_args=run.model_args or args.model_args)
            d = DataConfig(dataset or "digits", datapath=args.datapath, data_args=run.data_args or args.data_args)
        except ConfigError as exc:
            if (run.model and exc.fields == ("model",)) or (run.dataset and exc.fields == ("dataset",)):
                raise InputError(f"manifest {args.manifest}, run {run.name}: {exc}") from None
            raise
        targets[run.name] = Target(m.model, d.dataset, d.datapath, m.num_classes, m.model_args, d.data_args)
    kinds = sorted({(t.model + (f" {t.model_args}" if t.model_args else ""), t.dataset) for t in targets.values()})
    if len(kinds) > 1:
        raise InputError(
            f"manifest {args.manifest} mixes networks or data sets ({'; '.join(f'{m} on {d}' for m, d in kinds)}): "
            "a scorecard compares batch sizes of one network on one data set; give one per report"
        )
    return targets


def plan(params):
    """The settings, the runs of the manifest and what each is a run of, checked before any work."""
    args, config = settings_of(params)
    runs, skipped = read_runs(args.manifest)
    targets = _targets(args, runs)
    figures = args.figures or args.out
    for folder, name in ((args.out, "out"), (figures, "figures")):
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise InputError(f"{param(name)}={folder} is a file; expected a folder (it is created if missing)")
    check_outputs(figures, args.name, {"manifest": manifest_files(args.manifest)}, args.force)
    return args, config, runs, skipped, targets, figures


def run(params: ReportParams, argv: tuple[str, ...] = ()) -> ReportResult:
    world = comm_module.world()
    args, config, runs, skipped, targets, figures = agree(world, plan, params)
    agree(world, same_everywhere, world, "the report", (args, config, runs))  # an MPMD launch, other flags
    say = print if world.rank == 0 else (lambda *_, **__: None)
    threads = threads_per_rank(world, args.threads)
    torch.set_num_threads(threads.count)
    device = agree(world, devices.for_rank, args.device, world, args.allow_shared_gpus)
    say(
        f"{describe(runs)}; {world.size} rank{'s' * (world.size > 1)}, {threads.count} thread"
        f"{'s' * (threads.count > 1)} each" + (f"; left out, unfinished: {', '.join(skipped)}" if skipped else ""),
        flush=True,
    )
    agree(world, lambda: [os.makedirs(f, exist_ok=True) for f in (args.out, figures)] if world.rank == 0 else None)
    levels = agree(world, levels_of, args, runs)
    for arm, level in levels.items():
        if level.level is not None:
            say(f"{arm}: matched at train loss {level.level:g} ({level.note})")
        else:
            say(f"{arm}: no matched loss ({level.note})")

    def measured(i: int, _=None) -> dict | None:
        """Run ``i`` measured at its final weights (None: no run, or a stop signal abandoned it)."""
        if i >= len(runs):  # this rank has no run in the last round
            return None
        run, started = runs[i], time.perf_counter()
        target = replace(targets[run.name], device=device, threads=threads.count)
        extras = origin_of(run.checkpoint) is None  # a rescaled copy: its values only (the control compares them)
        folder = os.path.join(args.out, "runs", run.name)
        result = unless_stopped(measure_run, run, target, config, folder, extras)
        if result is ABANDONED:
            return None
        v = result["values"]
        print(
            f"[{i + 1}/{len(runs)}] {run.name}: test error {v['test_error']:.2f} %, λmax {v['lambda_max']:.4g}, "
            f"trace {v['trace']:.4g}, average rise {v['average_rise']:.3g} "
            f"({time.perf_counter() - started:.0f} s, rank {world.rank})",
            flush=True,
        )
        return result

    def matched(i: int, result: dict | None) -> dict | None:
        """The run at its matched-loss checkpoint, or marked as the rescaling control (None: abandoned)."""
        if result is None:
            return None
        run = runs[i]
        origin = origin_of(run.checkpoint)
        target = replace(targets[run.name], device=device, threads=threads.count)
        level = levels.get(run.recipe)
        if origin is not None:  # a rescaled copy of another run: the rescaling control
            result["rescaled"] = origin
        elif level is not None and level.level is not None:
            if unless_stopped(add_matched, result, run, target, config, args, level.level) is ABANDONED:
                return None
        if origin is None and args.sharpness_path and run.crossings:
            matched_level = level.level if level is not None else None
            if unless_stopped(add_path, result, run, target, config, args, matched_level) is ABANDONED:
                return None
        for line in flagged(result):
            print(f"  flagged: {line}", flush=True)
        return result

    def mine() -> list[dict]:
        """This rank's runs (r, r + size, ...), in rounds of one run per rank.  Before each measurement,
        final and (with a matched loss) matched, the ranks ask each other for a stop signal (a collective,
        as often on every rank), and each measurement is agreed: a failure or a stop ends every rank at the
        same point."""
        done: list[dict] = []
        for first in range(0, len(runs), world.size):
            result = None
            for stage in (measured, matched):
                signal_name = stop.requested(world)
                if signal_name:  # what is measured is cached in each run's measures.json: a rerun reads it
                    raise Stopped(stop.stopped_line(signal_name, sum(world.allgather(len(done))), len(runs)))
                result = agree(world, stage, first + world.rank, result)
            if result is not None:
                done.append(result)
        signal_name = stop.requested(world)  # before the scorecard: a rerun reads every measurement back
        if signal_name:
            raise Stopped(stop.stopped_line(signal_name, len(runs), len(runs)))
        return done

    shares = world.gather(mine())

    def written():  # under agree: a failure on rank 0 ends every rank, none waits
        if world.rank == 0:
            results = [shares[i % world.size][i // world.size] for i in range(len(runs))]
            return write_report(results, args, config, figures, skipped, levels)
        return None

    card, files = world.bcast(agree(world, written))
    return ReportResult(card, files, list(skipped))
