"""The batch-size study from one command: is the large-batch minimum sharper, and by which measure?

1. Train the networks with ``landscape sweep``: arms (recipes) x batch sizes x seeds, ``--jobs``
   configurations at a time, each a process of its own with one thread (small batches first, so the
   longest runs start first).  By default (``study_file.DEFAULT_STUDY``) the MNIST-1D MLP at batch 16, 64,
   256 and 1024, seeds 0-4, in two arms: naive (one learning rate, equal optimizer steps) and linear
   (the rate follows the batch, equal epochs), λmax logged along training.
2. Draw each arm's training (``<name>_training_<arm>.*``: λmax against the stability limit).
3. The rescaling control ([rescale]): the batch-16 networks of arm A rescaled (``landscape rescale``).
4. Measure and compare them all with ``landscape report`` on ``--jobs`` MPI ranks, each rank a share of
   the networks, each at its final weights and at a matched training loss: surfaces, Hessian λmax,
   trace and density, the sharpness measures; the scorecard (Markdown, CSV, LaTeX) and its figures land
   in ``--figures`` as ``<name>.*`` and ``<name>_*``; everything else stays in ``--out``.

``make study`` runs it with the defaults; ``--config`` takes a TOML file (keys below) for another
model, data set or scale.  Rerunning reuses every finished run and measurement.

A run whose training loss became NaN or infinite (its sweep exits 6, ``errors.Diverged``) does not stop
the study: the others train on, the study names the diverged runs, and the report leaves them out as it
leaves out any unfinished run (so does the rescaling control).  A study fails for a diverged run only when
the report cannot do without it; a rerun trains a diverged run again from its last finite checkpoint.

A stop signal (SIGTERM, SIGUSR1) is passed on to the sweeps or the report running: each saves its
step or measurement in progress and exits 143, no other is begun, and the study exits 143 with one
line (the report's own, when it was the report that stopped); a rerun resumes them.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field

from ..errors import ExitStatus, InputError, Stopped
from ..io.atomic import write_file
from ..io.run_files import read_log, read_run
from ..io.toml_file import JSON_KEYS
from ..parallel import stop
from ..parallel.launch import cli_command
from ..plotting.study.mechanism import write_mechanism
from ..plotting.training import write_training
from ..provenance import machine, versions
from ..report import matching
from ..report.findings import findings
from ..report.mechanism import Plateau, plateau
from ..report.mechanism import sentence as mechanism_sentence
from ..report.runs import read_runs
from ..train import sweep as sweeps
from ..train.sweep import read_manifest
from .command import Result, plain
from .params import Params, option
from .report import settings_of
from .report_files import check_outputs
from .study_file import DEFAULT_STUDY, EXAMPLE, report_flags, report_params, report_threads, settings
from .study_tasks import Task, received, tasks_of, train_all

__all__ = ["DEFAULT_STUDY", "EXAMPLE", "StudyParams", "StudyResult", "execute", "run", "settings"]


@dataclass(frozen=True, kw_only=True)
class StudyParams(Params):
    """``landscape study``'s parameters: a study file and what overrides it (None: the file's, or the
    default study's)."""

    COMMAND = "study"
    DESCRIPTION = __doc__.split("\n\n")[0]
    config: str | None = option(None, "TOML file of the study (its keys: the example at the end of --help)")
    out: str | None = option(
        None, "training runs, measurements and logs", shown=f"{DEFAULT_STUDY['out']}, or the study file's"
    )
    figures: str | None = option(
        None, "where the scorecard and figures go", shown=f"{DEFAULT_STUDY['figures']}, or the study file's"
    )
    name: str | None = option(None, "stem of their names", shown=f"{DEFAULT_STUDY['name']}, or the study file's")
    jobs: int | None = option(
        None, "trainings at a time, and report ranks", shown=f"{DEFAULT_STUDY['jobs']}, or the study file's"
    )
    quick: bool = option(False, "2 batch sizes x 2 seeds, 4 epochs, tiny grids (the test)")
    force: bool = option(
        False,
        "write the tables over an existing checkpoint, HDF5 file, training log, manifest or run record (refused "
        "otherwise)",
    )


def _rescaled(study: dict, diverged: list[str]) -> str:
    """The rescaling control ([rescale]): the networks of one recipe at the listed batch sizes and seeds,
    at their final weights and at their arm's matched weights, each with a layer's units times each α
    (``landscape rescale``: the same function), listed with every trained run in ``out/runs.csv``, the
    report's manifest.  Returns that manifest's path."""
    r, out = study["rescale"], study["out"]
    recipe = r.get("recipe", study["recipes"][0])
    folder = os.path.join(out, "rescaled")
    os.makedirs(folder, exist_ok=True)
    manifest = os.path.join(out, "manifest.json")
    rows = [
        [row["checkpoint"], row["batch_size"], row["seed"], row["recipe"], row["run"]]
        for row in read_manifest(manifest)
        if row["done"]
    ]
    arm = [run for run in read_runs(manifest)[0] if run.recipe == recipe]
    level = matching.choose(arm).level
    for batch in r.get("batch_sizes", [min(study["batch_sizes"])]):
        for seed in r.get("seeds", study["seeds"]):
            name = f"{recipe}_b{batch}_s{seed}"
            if name in diverged:
                print(f"[rescale]: {name} diverged: no rescaled copy of it", flush=True)
                continue
            run = next((x for x in arm if x.name == name), None)
            weights = [("", os.path.join(out, name, "final.pt"))]
            kept = matching.matched(run, level).checkpoint if run is not None and level is not None else None
            if kept is not None:
                weights.append(("_matched", kept))
            for alpha in r.get("alphas", [4.0]):
                for suffix, source in weights:
                    target = os.path.join(folder, f"{name}{suffix}_x{alpha:g}.pt")
                    _rescale(study, source, target, alpha, name)
                    rows.append([os.path.relpath(target, out), batch, seed, "rescaled",
                                 f"rescaled_a{alpha:g}_b{batch}_s{seed}{suffix}"])  # fmt: skip
    text = "checkpoint,batch_size,seed,recipe,run\n" + "".join(",".join(map(str, row)) + "\n" for row in rows)
    path = os.path.join(out, "runs.csv")
    write_file(path, text.encode())
    return path


def _rescale(study: dict, source: str, target: str, alpha: float, name: str) -> None:
    """``landscape rescale`` of ``source`` into ``target`` (once: an existing copy is kept)."""
    if os.path.exists(target):
        return
    train = study["train"]
    flags = ["--model", train["model"], "--dataset", train.get("dataset", "digits"), "--model_file", source,
             "--alpha", str(alpha), "--out", target] + (["--layer", study["rescale"]["layer"]]
                                                       if study["rescale"].get("layer") else [])  # fmt: skip
    if subprocess.run(cli_command("rescale", flags)).returncode != 0:
        raise InputError(f"[rescale]: the rescaling of {name} failed (its message is above)")


def _in_study_order(study: dict) -> None:
    """The manifest rewritten with the arms in the study's order (each arm's sweep wrote it listing its
    own runs first): the report draws its one-arm figures, and lists its tables, for the first arm."""
    with open(os.path.join(study["out"], sweeps.MANIFEST_JSON)) as handle:
        settings = json.load(handle).get("settings", {})
    configs = sweeps.configurations(study["recipes"], study["batch_sizes"], study["seeds"])
    sweeps.write_manifest(study["out"], configs, 0, settings)


def _training_figures(study: dict) -> None:
    """Each arm's training (``landscape plot-training`` of its runs): the test error against the batch,
    the test error along training, and λmax along training against the stability limit of the rate."""
    rows = read_manifest(os.path.join(study["out"], "manifest.json"))
    formats = study["report"].get("formats", ("png", "pdf"))
    for recipe in study["recipes"]:
        stem = os.path.join(study["figures"], f"{study['name']}_training_{recipe}")
        mine = [row for row in rows if row["recipe"] == recipe]
        if not any(row["done"] and not math.isnan(row["test_error"]) for row in mine):  # all diverged, say
            print(f"no finished run of {recipe}: no figure of its training", flush=True)
            continue
        for path in write_training(mine, stem, (formats,) if isinstance(formats, str) else tuple(formats)):
            print(f"wrote {path}", flush=True)


def _mechanism(study: dict, tasks: list[Task], diverged: list[str]) -> list[Plateau]:
    """[mechanism]: each run's λmax plateau against its stability limit (``report.mechanism``), as a table
    (``<name>_mechanism.csv``) and a figure (``<name>_mechanism.*``)."""
    runs = [t for t in tasks if t.kind == "mechanism" and t.name not in diverged]
    if not runs:
        return []
    table = [plateau(t.folder) for t in runs]
    stem = os.path.join(study["figures"], f"{study['name']}_mechanism")
    fields = list(table[0].record())
    text = ",".join(fields) + "\n" + "".join(",".join(_cell(p.record()[k]) for k in fields) + "\n" for p in table)
    write_file(f"{stem}.csv", text.encode())
    formats = study["report"].get("formats", ("png", "pdf"))
    full = max((p.batch_size for p, t in zip(table, runs) if t.name.startswith("gd_")), default=None)
    folders = {t.name: t.folder for t in runs}
    for path in [f"{stem}.csv", *write_mechanism(table, folders, stem, _formats(formats), full=full)]:
        print(f"wrote {path}", flush=True)
    print(mechanism_sentence(table), flush=True)
    return table


def _cell(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _formats(formats) -> tuple[str, ...]:
    return (formats,) if isinstance(formats, str) else tuple(formats)


LOG_COLUMNS = ("step", "epoch", "lr", "phase", "train_loss", "train_acc", "test_loss", "test_acc", "lambda_max")


def _training_csv(study: dict, tasks: list[Task]) -> str:
    """Every run's log in one compact file (``<name>_training.csv``): what the figures of training and of
    sharpness against the training loss draw, committed with them so that a reader can check them."""
    path = os.path.join(study["figures"], f"{study['name']}_training.csv")
    lines = ["run,part,batch_size,seed," + ",".join(LOG_COLUMNS)]
    for task in tasks:
        identity = (read_run(task.folder) or {}).get("identity", {})
        part = identity.get("recipe", "") if task.kind == "arm" else "mechanism"
        head = f"{task.name},{part},{identity.get('batch_size', '')},{identity.get('seed', '')}"
        for row in read_log(task.folder):
            cells = [row.get(k, "") for k in LOG_COLUMNS]
            lines.append(head + "," + ",".join(_short(c) for c in cells))
    write_file(path, ("\n".join(lines) + "\n").encode())
    return path


def _short(cell: str) -> str:
    """A log's number to 5 significant digits (the file stays small), anything else as it is."""
    try:
        value = float(cell)
    except (TypeError, ValueError):
        return str(cell)
    return f"{value:.5g}" if "." in str(cell) or "e" in str(cell) else str(cell)


def _described(study: dict, tasks: list[Task], table: list[Plateau], seconds: dict, params: dict) -> dict:
    """What ``<name>.json`` says of the study it is the scorecard of: the command's parameters
    (``settings``), the data set, the model, every arm's recipe as its runs resolved it, the mechanism's
    table, the machine and the versions."""
    train = study["train"]
    shared = {k: v for k, v in train.items() if not isinstance(v, dict) or k in JSON_KEYS}
    arms = {}
    for recipe in study["recipes"]:
        resolved = {}
        for batch in study["batch_sizes"]:
            task = next((t for t in tasks if t.name == f"{recipe}_b{batch}_s{study['seeds'][0]}"), None)
            identity = (read_run(task.folder) or {}).get("identity", {}) if task else {}
            resolved[str(batch)] = {k: identity.get(k) for k in ("lr", "momentum", "nesterov", "weight_decay",
                                    "milestones", "base_batch", "warmup_epochs", "epochs", "steps", "stop_loss",
                                    "loss_name") if k in identity}  # fmt: skip
        arms[recipe] = {"given": {**shared, **train.get(recipe, {})}, "resolved_by_batch": resolved}
    return {
        "settings": params,
        "data_set": train.get("dataset", "digits"),
        "model": train["model"],
        "batch_sizes": study["batch_sizes"],
        "seeds": study["seeds"],
        "arms": arms,
        "rescale": study.get("rescale") or {},
        "mechanism": {
            "settings": study.get("mechanism") or {},
            "table": [p.record() for p in table],
            "sentence": mechanism_sentence(table),
        },
        "training_log": f"{study['name']}_training.csv",
        "machine": machine(),
        "versions": versions(),
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }


def _stop_here(runs: int) -> None:
    """Between the study's steps after training: a stop signal ends it here (every run is trained)."""
    signal_name = received()
    if signal_name:
        raise Stopped(stop.stopped_line(signal_name, runs, runs))


@dataclass(frozen=True)
class StudyResult(Result):
    """The study as run (its settings), and where its report went."""

    study: dict
    report: str
    seconds: dict
    diverged: list[str] = field(default_factory=list)  # runs whose training loss became non-finite: left out


OWN_FILES = ("{name}_training.csv", "{name}_mechanism.csv", "{name}_findings.md")  # beside the report's


def execute(study: dict, params: dict) -> StudyResult:
    """Train the study's networks and report on them (the settings checked already, see ``run``);
    ``params``: the command's parameters (``StudyParams.record()``), which the scorecard records."""
    threads = report_threads(study)
    for folder in (study["out"], study["figures"]):
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise InputError(f"{folder} is a file; expected a folder (it is created if missing)")
    tasks = tasks_of(study)  # the training's settings too, before any folder is made
    for folder in (study["out"], study["figures"]):
        os.makedirs(folder, exist_ok=True)
    started = time.perf_counter()
    train_s, diverged = train_all(study, tasks)
    _stop_here(len(tasks))
    _in_study_order(study)
    _training_figures(study)
    table = _mechanism(study, tasks, diverged)
    flags = report_flags(study)
    if study.get("rescale"):
        flags[0] = _rescaled(study, diverged)  # the trained runs and the rescaled ones
    _stop_here(len(tasks))
    cmd = cli_command("report", [*flags, *threads], study["jobs"] if study["jobs"] > 1 else None)
    print("$ " + " ".join(cmd[cmd.index("-m") + 1 :]), flush=True)
    report_started = time.perf_counter()
    report = subprocess.Popen(cmd)
    forwarded = None
    while report.poll() is None:
        signal_name = received()
        if signal_name and not forwarded:  # the report stops after its measurement in progress, cached
            forwarded = signal_name
            report.send_signal(signal.Signals[signal_name])
        time.sleep(0.2)
    code = report.returncode
    if forwarded and code == ExitStatus.STOPPED:  # its own line (after how many runs) is the one printed
        raise Stopped("")
    if code != 0:  # its own message is above; leave with its exit code (4: measured otherwise before, ...)
        error = InputError(f"landscape report failed with exit code {code} (see its message above)")
        error.exit_status = code
        raise error
    report_s = time.perf_counter() - report_started
    total = time.perf_counter() - started
    seconds = {"training": train_s, "report": report_s, "study": total}
    card_path = os.path.join(study["figures"], f"{study['name']}.json")
    with open(card_path) as handle:
        card = json.load(handle)
    card["study"] = _described(study, tasks, table, seconds, params)
    card = plain(card)  # NaN: null
    write_file(card_path, (json.dumps(card, indent=2) + "\n").encode())
    said = os.path.join(study["figures"], f"{study['name']}_findings.md")
    write_file(said, findings(card, study["name"]).encode())
    for path in (_training_csv(study, tasks), card_path, said):
        print(f"wrote {path}", flush=True)
    print(f"time: training {train_s:.0f} s, report {report_s:.0f} s, whole study {total:.0f} s ({study['jobs']} jobs)")
    return StudyResult(
        study,
        os.path.join(study["out"], "report"),
        {"training": train_s, "report": report_s, "study": total},
        diverged,
    )


def run(params: StudyParams, argv: tuple[str, ...] = ()) -> StudyResult:
    """``landscape study``: its settings and the report's checked before any training, then both."""
    p = StudyParams.given(params)
    study = settings(**p.record())
    settings_of(report_params(study))
    inputs = {"config": p.config, "out": os.path.join(study["out"], sweeps.MANIFEST_JSON)}
    check_outputs(study["figures"], study["name"], inputs, study["force"], OWN_FILES)  # before any training
    return execute(study, p.record())
