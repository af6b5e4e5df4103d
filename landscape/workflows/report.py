"""``landscape report`` as a function: the scorecard of a batch-size study, from a manifest of trained
networks.

For every finished run of the manifest it computes (or reads back) a 1-D and a 2-D surface and the
curvature measures (``report.measures``), then writes the tables (CSV, Markdown, LaTeX, JSON), the
figures and the verdict.  Under ``mpiexec`` the ranks share the runs, each network on one rank (rank r
takes runs r, r + size, ...): the right split for a study of many networks.  ``config`` names a study
file whose report settings fill what is not given.
"""

from __future__ import annotations

import glob
import json
import math
import os
import time
from dataclasses import dataclass, replace
from types import SimpleNamespace

import torch

from .. import checks
from ..data import DataConfig
from ..errors import ConfigError, InputError, Stopped, UsageError, param
from ..io.atomic import write_file
from ..io.checkpoint import read_state_dict
from ..io.outputs import figure_replaceable, replaceable
from ..io.paths import output_path
from ..models import ModelConfig
from ..parallel import comm as comm_module
from ..parallel import devices, stop
from ..parallel.comm import agree, same_everywhere, threads_per_rank
from ..plotting.interpolation import write_interpolation as draw_interpolation
from ..plotting.look import use
from ..plotting.palette import batch_colours
from ..plotting.study.by_batch import compared, write_measures, write_seeds
from ..plotting.study.gap import write_gap
from ..plotting.study.sharpness_loss import write_sharpness_loss
from ..plotting.study.summary import write_summary
from ..plotting.study.surfaces import write_density, write_hessian_1d, write_surfaces
from ..plugins import check_recorded
from ..report import matching, tables
from ..report.catalogue import BY_KEY
from ..report.interpolation import write_interpolation
from ..report.matching import MATCHED
from ..report.measures import MeasureConfig, Target, flagged, flags, measure_light, measure_run
from ..report.minimum import away
from ..report.rescaling import origin_of
from ..report.runs import Run, describe, manifest_files, read_runs
from ..report.scorecard import DEFAULT_ENDPOINTS, build, endpoints_of
from . import study_file as studies
from .command import Result, check_known, config_defaults, fields_of, plain

OUTPUT_FILES = ("{name}.csv", "{name}_runs.csv", "{name}_tests.csv", "{name}.md", "{name}.tex", "{name}.json")
FORMATS = ("png", "pdf", "svg")
STYLES = ("default", "paper", "talk")
DEFAULTS = {
    "manifest": None,
    "out": None,
    "config": None,
    "figures": None,
    "name": "scorecard",
    "model": None,
    "dataset": None,
    "datapath": None,
    "model_args": None,  # where the runs record none
    "data_args": None,
    "num_classes": None,
    "allow_recorded_plugins": False,  # a plug-in a run's record names, imported without being named
    **config_defaults(MeasureConfig),
    "endpoints": DEFAULT_ENDPOINTS,
    "match_loss": "auto",  # per arm: the lowest level every run kept weights at in its last phase; a level; off
    "sharpness_path": False,  # λmax and adaptive sharpness at every level a run kept weights at
    "alpha": 0.05,
    "permutations": 10000,
    "formats": ("png", "pdf"),
    "style": "default",
    "device": "auto",
    "allow_shared_gpus": False,
    "threads": None,
    "force": False,  # a table over an existing checkpoint, HDF5 file, log, manifest or run record (io.outputs)
}
NEEDED = ("manifest", "out")  # given, or from a study file (config)
REQUIRED = ()


@dataclass(frozen=True)
class ReportResult(Result):
    """The scorecard (``scorecard``: what ``<name>.json`` holds), the files written, and the runs left out."""

    scorecard: dict
    files: list[str]
    left_out: list[str]


def settings_of(params: dict) -> tuple[SimpleNamespace, MeasureConfig]:
    """Every parameter with its default (a study file's report settings under what is given), checked;
    no file is read but the study file."""
    check_known(params, (*NEEDED, *DEFAULTS), "report")
    given = dict(params)
    if given.get("config"):
        given = {**studies.report_params(studies.study_file(given["config"])), **given}
    s = {**DEFAULTS, **given}
    for name in NEEDED:
        if not s.get(name):
            raise ConfigError(name, s.get(name), "a value (or a study file, config, that gives it)")
    config = MeasureConfig(**fields_of(s, MeasureConfig))
    s["endpoints"] = endpoints_of(s["endpoints"])
    if s["match_loss"] not in ("auto", "off"):
        try:
            s["match_loss"] = float(s["match_loss"])
        except (TypeError, ValueError):
            s["match_loss"] = None
        if s["match_loss"] is None or not (math.isfinite(s["match_loss"]) and s["match_loss"] > 0):
            raise ConfigError("match_loss", params.get("match_loss"), "auto, off, or a positive training loss")
    checks.number("alpha", s["alpha"], above=0, below=1)
    checks.whole("permutations", s["permutations"], least=100, expected="at least 100")
    formats = [s["formats"]] if isinstance(s["formats"], str) else list(s["formats"])
    if not formats or any(f not in FORMATS for f in formats):
        raise ConfigError("formats", " ".join(map(str, formats)), f"some of {', '.join(FORMATS)}")
    s["formats"] = tuple(formats)
    if s["style"] not in STYLES:
        raise ConfigError("style", s["style"], f"one of {', '.join(STYLES)}")
    if not isinstance(s["name"], str) or not s["name"] or os.sep in s["name"]:
        raise ConfigError("name", s["name"], "a file name stem without a folder", literal=True)
    if s["threads"] is not None:
        checks.whole("threads", s["threads"], expected="a positive number of threads")
    devices.check_spec(s["device"])
    return SimpleNamespace(**s), config


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


def check_outputs(figures: str, name: str, inputs: dict, force: bool, more: tuple[str, ...] = ()) -> None:
    """The scorecard's files in ``figures`` (``OUTPUT_FILES`` and ``more``, patterns of ``name``), and its
    figures already there: nothing over an input nor over a file of another kind (``io.outputs``)."""
    if not os.path.isdir(figures):
        return
    for pattern in (*OUTPUT_FILES, "{name}_interpolation.json", *more):
        path = os.path.join(figures, pattern.format(name=name))
        output_path(path, "file", "figures")
        replaceable(path, "figures", inputs, force)
    for fmt in FORMATS:
        for path in glob.glob(os.path.join(glob.escape(figures), f"{glob.escape(name)}*.{fmt}")):
            figure_replaceable(path)


def plan(params: dict):
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


def run(params: dict, argv: tuple[str, ...] = ()) -> ReportResult:
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
    args.levels = agree(world, _levels, args, runs)
    for arm, level in args.levels.items():
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
        result = _unless_stopped(measure_run, run, target, config, folder, extras)
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
        level = args.levels.get(run.recipe)
        if origin is not None:  # a rescaled copy of another run: the rescaling control
            result["rescaled"] = origin
        elif level is not None and level.level is not None:
            if _unless_stopped(_add_matched, result, run, target, config, args, level.level) is ABANDONED:
                return None
        if origin is None and args.sharpness_path and run.crossings:
            matched_level = level.level if level is not None else None
            if _unless_stopped(_add_path, result, run, target, config, args, matched_level) is ABANDONED:
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
            return write_report(results, args, config, figures, skipped)
        return None

    card, files = world.bcast(agree(world, written))
    return ReportResult(card, files, list(skipped))


ABANDONED = object()  # a measurement a stop signal ended inside a surface


def _unless_stopped(measure, *args):
    """``measure(*args)``, or ``ABANDONED`` when a stop signal ended a surface inside it: the surface saved
    its round and resumes, the run's ``measures.json`` is not written, and the ranks agree on the stop
    before the next measurement."""
    try:
        return measure(*args)
    except Stopped:
        if stop.installed() is None:  # the surface's own signal handler, not the command's: stop as it did
            raise
        return ABANDONED


def _levels(args, runs: list[Run]) -> dict[str, matching.Level]:
    """Each arm's matched training loss (``report.matching``): as given, or the lowest level every run of
    the arm crossed in its last learning-rate phase; none when off."""
    if args.match_loss == "off":
        return {}
    given = None if args.match_loss == "auto" else float(args.match_loss)
    arms = dict.fromkeys(r.recipe for r in runs if origin_of(r.checkpoint) is None)
    return {arm: matching.choose([r for r in runs if r.recipe == arm], given) for arm in arms}


def _same_weights(a: str, b: str) -> bool:
    """Whether two checkpoints hold the same weights (a run stopped at its level keeps them twice)."""
    first, second = (read_state_dict(path) for path in (a, b))
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


def _add_matched(result: dict, run: Run, target: Target, config: MeasureConfig, args, level: float) -> None:
    """The run measured again at its weights kept at ``level``: ``<key>_matched`` values and ``matched``
    (where they were taken, and whether the measured loss is the level to within 5 %)."""
    found = matching.matched(run, level)
    result["matched"] = found.record()
    if found.checkpoint is None:
        print(f"  matched loss: {run.name}: {found.note}", flush=True)
        return
    if _same_weights(found.checkpoint, run.checkpoint):  # stopped there: the values measured already
        at = result
    else:
        folder = os.path.join(args.out, "runs", run.name, f"matched_loss_{level:g}")
        at = measure_run(replace(run, checkpoint=found.checkpoint), target, config, folder, extras=False)
    measured = at["values"]["train_loss"]
    off = matching.off_level(measured, level)
    result["matched"].update(measured_loss=measured, off=off, checkpoint_sha256=at["checkpoint_sha256"])
    result["values"].update({f"{k}{MATCHED}": v for k, v in at["values"].items()})
    result["matched_flags"] = flags(at) if at is not result else {}  # the same weights: flagged once
    result["matched_values"] = {"checkpoint_sha256": at["checkpoint_sha256"], "values": dict(at["values"])}
    print(
        f"  matched loss {level:g}: {run.name} at step {found.step} (learning-rate phase {found.phase!r}; "
        f"train loss {measured:.4g}): "
        f"λmax {at['values']['lambda_max']:.4g}" + (f"; {off}" if off else ""),
        flush=True,
    )


PATH_RESTARTS = 1  # the path's searches: a seeded start besides δ = 0 (exploratory points of a curve)


def _add_path(result: dict, run: Run, target: Target, config: MeasureConfig, args, level: float | None) -> None:
    """The run's sharpness along its training path: λmax and adaptive sharpness at every level it kept
    weights at but ``level`` (its matched one, measured in full), with ``PATH_RESTARTS`` (``measure_light``),
    for the figure of sharpness against the training loss."""
    path, light = [], replace(config, restarts=min(config.restarts, PATH_RESTARTS))
    for c in sorted(run.crossings, key=lambda c: -c["level"]):
        checkpoint = os.path.join(os.path.dirname(run.checkpoint), c["file"])
        if not os.path.isfile(checkpoint) or (level is not None and math.isclose(c["level"], level)):
            continue
        folder = os.path.join(args.out, "runs", run.name, "path", f"loss_{c['level']:g}")
        at = measure_light(replace(run, checkpoint=checkpoint), target, light, folder)
        path.append({**{k: c.get(k) for k in ("level", "step", "phase")}, **at["values"]})
    result["path"] = path


def write_report(results: list[dict], args, config, figures: str, skipped: list[str] = ()) -> tuple[dict, list[str]]:
    """The scorecard's tables, JSON and figures into ``figures``; returns its record and the files."""
    settings = {k: v for k, v in config.record().items() if v is not None}
    settings["matched"] = {arm: level.record() for arm, level in getattr(args, "levels", {}).items()}
    card = build(
        results,
        alpha=args.alpha,
        permutations=args.permutations,
        seed=args.seed,
        settings=settings,
        left_out=list(skipped),
        endpoints=args.endpoints,
    )
    runs = [r["run"] for r in results]
    target = results[0]["target"]
    description = (
        f"{target['model']} on {target['dataset']}; "
        + describe([Run(**r) for r in runs])
        + "."
        + (f" Left out, unfinished: {', '.join(skipped)}." if skipped else "")
    )
    flag_rows = _flags(results, card)
    stem = os.path.join(figures, args.name)
    for suffix, text in (
        ("", tables.groups_csv(card)),
        ("_runs", tables.runs_csv(card)),
        ("_tests", tables.tests_csv(card)),
    ):
        write_file(f"{stem}{suffix}.csv", text.encode())
    write_file(f"{stem}.md", tables.markdown(card, description=description, flags=flag_rows).encode())
    write_file(f"{stem}.tex", tables.latex(card).encode())
    write_file(f"{stem}.json", (json.dumps(plain(card.record()), indent=2) + "\n").encode())  # NaN: null
    paths = [os.path.join(figures, pattern.format(name=args.name)) for pattern in OUTPUT_FILES]
    with use(args.style) as look:
        paths += _figures(results, args, config, card, stem, look)
        # Keskar et al.'s line from each smallest- to largest-batch network, on this rank's device
        device = devices.for_rank(args.device, comm_module.SerialComm())
        path, record = write_interpolation(results, config, stem, device)
        paths.append(path)
        if record["pairs"]:
            paths += draw_interpolation(record, f"{stem}_interpolation", tuple(args.formats), look.dpi or 150, look)
    paths += write_summary(results, card, args.out, stem, tuple(args.formats), args.style)  # last: reads every file
    print(f"\nVerdict ({stem}.md has the scorecard, every measure and test): {card.verdict}\n", flush=True)
    for path in paths:
        print(f"wrote {path}")
    return json.loads(json.dumps(card.record(), default=float)), [str(p) for p in paths]


def _flags(results: list[dict], card) -> list[tuple[str, str, str, str]]:
    """The flags table's rows: networks not at a minimum (``report.minimum``), matched losses off their
    level, searches that flagged their values (at the final weights or the matched ones)."""
    rows = [(name, "training and the points compared", "not at a minimum", why) for name, why in away(card.runs)]
    for result in results:
        name, matched = result["run"]["name"], result.get("matched") or {}
        if matched.get("off"):
            rows.append((name, f"matched loss {matched['level']:g}", "train loss", matched["off"]))
        for key, notes in flags(result).items():
            rows += [(name, "final weights", BY_KEY[key].label, note) for note in notes]
        for key, notes in (result.get("matched_flags") or {}).items():
            rows += [(name, "matched loss", BY_KEY[key].label, note) for note in notes]
    return rows


def _figures(results, args, config, card, stem, look) -> list[str]:
    """Every figure but the summary page, each in the report's formats; one colour per batch size in all."""
    dpi, formats = look.dpi or 150, tuple(args.formats)
    colours = batch_colours(r["batch_size"] for r in compared(card))
    paths = write_measures(card, f"{stem}_measures", formats=formats, dpi=dpi, look=look)
    paths += write_gap(card, f"{stem}_gap", formats, dpi, look)
    paths += write_seeds(card, f"{stem}_seeds", formats, dpi, look)
    paths += write_sharpness_loss(card, f"{stem}_sharpness_loss", formats, dpi, look)
    paths += write_surfaces(results, args.out, stem, colours, formats, dpi, look)
    paths += write_hessian_1d(results, args.out, f"{stem}_1d_hessian", colours, formats, dpi, look)
    paths += write_density(results, f"{stem}_density", colours, formats, dpi, look)
    return paths
