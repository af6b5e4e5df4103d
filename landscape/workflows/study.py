"""The batch-size study from one command: is the large-batch minimum sharper, and by which measure?

1. Train the networks with ``landscape sweep``: arms (recipes) x batch sizes x seeds, ``--jobs``
   configurations at a time, each a process of its own with one thread (small batches first, so the
   longest runs start first).  By default (``study_file.DEFAULTS``) the MNIST-1D MLP at batch 16, 64,
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

from ..errors import ExitStatus, InputError, Stopped, UsageError
from ..io.atomic import write_file
from ..io.toml_file import table_flags
from ..parallel import stop
from ..parallel.launch import cli_command
from ..plotting.training import write_training
from ..train import sweep as sweeps
from ..train.sweep import read_manifest
from .command import Result
from .report import settings_of
from .study_file import DEFAULTS, EXAMPLE, PARAMETERS, REQUIRED, report_flags, report_params, report_threads, settings

__all__ = ["DEFAULTS", "EXAMPLE", "PARAMETERS", "REQUIRED", "StudyResult", "execute", "run", "settings"]


def _sweep_flags(study: dict, recipe: str) -> list[str]:
    """``landscape sweep``'s flags for one recipe (an arm) of the study: the shared [train] settings and
    the recipe's own [train.<recipe>] table."""
    shared = {k: v for k, v in study["train"].items() if not isinstance(v, dict)}
    own = study["train"].get(recipe, {})
    return [
        "--out",
        study["out"],
        "--recipes",
        recipe,
        "--batch_sizes",
        *map(str, study["batch_sizes"]),
        "--seeds",
        *map(str, study["seeds"]),
        *table_flags({"threads": 1, "progress_seconds": 60, **shared, **own}),
    ]


def _tasks(study: dict) -> list[tuple[str, str, str]]:
    """The sweep's configurations (recipe, index within the recipe's sweep, name), asked of ``landscape
    sweep --list`` per recipe: it checks the [train] settings before anything is made."""
    tasks = []
    for recipe in study["recipes"]:
        listed = subprocess.run(
            cli_command("sweep", [*_sweep_flags(study, recipe), "--list"]), capture_output=True, text=True
        )
        if listed.returncode != 0:
            message = listed.stderr.strip().splitlines()[-1] if listed.stderr.strip() else f"exit {listed.returncode}"
            error = UsageError if listed.returncode == 2 else InputError
            raise error(f"[train] ({recipe}): " + message.split(": error: ", 1)[-1])
        tasks += [(recipe, *line.split("\t")) for line in listed.stdout.splitlines() if "\t" in line]
    return tasks


def _train(study: dict, tasks: list[tuple[str, str, str]]) -> tuple[float, list[str]]:
    """Every configuration of the sweep, ``jobs`` at a time; returns the seconds it took and the runs that
    diverged."""
    out = study["out"]
    order = sorted(range(len(tasks)), key=lambda i: int(tasks[i][2].rsplit("_b", 1)[1].split("_s")[0]))
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)
    print(f"training {len(tasks)} networks, {study['jobs']} at a time (logs: {logs}/)", flush=True)
    started, running, pending, failed, diverged = time.perf_counter(), {}, list(order), [], []
    trained, forwarded = 0, None
    while pending or running:
        signal_name = _received()
        if signal_name and not forwarded:  # each sweep saves its run and exits 143; none is begun after
            forwarded, pending = signal_name, []
            for process in running:
                process.send_signal(signal.Signals[signal_name])
        while pending and len(running) < study["jobs"]:
            i = pending.pop(0)
            recipe, index, name = tasks[i]
            log = open(os.path.join(logs, f"{name}.log"), "w")
            running[
                subprocess.Popen(
                    cli_command("sweep", [*_sweep_flags(study, recipe), "--task", index]),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            ] = (name, log, time.perf_counter())
        finished = next((p for p in running if p.poll() is not None), None)
        if finished is None:
            time.sleep(0.5)
            continue
        name, log, began = running.pop(finished)
        log.close()
        code = finished.returncode
        trained += code == 0
        if forwarded and code == ExitStatus.STOPPED:
            print(f"  {name}: stopped by {forwarded}, saved where it stopped", flush=True)
            continue
        if code == ExitStatus.DIVERGED:
            diverged.append(name)
        elif code != 0:
            failed.append(name)
        outcome = {0: "done", ExitStatus.DIVERGED: "DIVERGED (its loss became non-finite; left out of the report)"}
        print(
            f"  {name}: {outcome.get(code, f'FAILED (exit {code})')} "
            f"in {time.perf_counter() - began:.0f} s (a finished run is only checked)",
            flush=True,
        )
    if forwarded:
        raise Stopped(stop.stopped_line(forwarded, trained, len(tasks)))
    if failed:
        raise InputError(f"training failed for {', '.join(failed)}: see {logs}/{failed[0]}.log")
    if diverged:
        print(f"diverged, left out: {', '.join(sorted(diverged))} (see {logs}/<run>.log and <run>/run.json)")
    return time.perf_counter() - started, sorted(diverged)


def _rescaled(study: dict, diverged: list[str]) -> str:
    """The rescaling control ([rescale]): each seed's network of one recipe and batch size with a layer's
    units rescaled (``landscape rescale``), listed with every trained run in ``out/runs.csv``, the
    report's manifest.  Returns that manifest's path."""
    r, out = study["rescale"], study["out"]
    recipe, batch = r.get("recipe", study["recipes"][0]), r.get("batch_size", min(study["batch_sizes"]))
    folder = os.path.join(out, "rescaled")
    os.makedirs(folder, exist_ok=True)
    rows = [
        [row["checkpoint"], row["batch_size"], row["seed"], row["recipe"], row["run"]]
        for row in read_manifest(os.path.join(out, "manifest.json"))
        if row["done"]
    ]
    for seed in study["seeds"]:
        name = f"{recipe}_b{batch}_s{seed}"
        target = os.path.join(folder, f"{name}_x{r['alpha']:g}.pt")
        if name in diverged:
            print(f"[rescale]: {name} diverged: no rescaled copy of it", flush=True)
            continue
        if not os.path.exists(target):
            flags = [
                "--model", study["train"]["model"], "--dataset", study["train"].get("dataset", "digits"),
                "--model_file", os.path.join(out, name, "final.pt"), "--alpha", str(r["alpha"]), "--out", target,
            ] + (["--layer", r["layer"]] if r.get("layer") else [])  # fmt: skip
            if subprocess.run(cli_command("rescale", flags)).returncode != 0:
                raise InputError(f"[rescale]: the rescaling of {name} failed (its message is above)")
        rows.append([os.path.relpath(target, out), batch, seed, "rescaled", f"rescaled_b{batch}_s{seed}"])
    text = "checkpoint,batch_size,seed,recipe,run\n" + "".join(",".join(map(str, row)) + "\n" for row in rows)
    manifest = os.path.join(out, "runs.csv")
    write_file(manifest, text.encode())
    return manifest


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


def _received() -> str | None:
    """The stop signal this process has received (the command line catches SIGTERM and SIGUSR1), or None."""
    signals = stop.installed()
    return signals.received if signals is not None else None


def _stop_here(runs: int) -> None:
    """Between the study's steps after training: a stop signal ends it here (every run is trained)."""
    signal_name = _received()
    if signal_name:
        raise Stopped(stop.stopped_line(signal_name, runs, runs))


@dataclass(frozen=True)
class StudyResult(Result):
    """The study as run (its settings), and where its report went."""

    study: dict
    report: str
    seconds: dict
    diverged: list[str] = field(default_factory=list)  # runs whose training loss became non-finite: left out


def execute(study: dict) -> StudyResult:
    """Train the study's networks and report on them (the settings checked already, see ``run``)."""
    threads = report_threads(study)
    for folder in (study["out"], study["figures"]):
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise InputError(f"{folder} is a file; expected a folder (it is created if missing)")
    tasks = _tasks(study)  # the training's settings too, before any folder is made
    for folder in (study["out"], study["figures"]):
        os.makedirs(folder, exist_ok=True)
    started = time.perf_counter()
    train_s, diverged = _train(study, tasks)
    _stop_here(len(tasks))
    _in_study_order(study)
    _training_figures(study)
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
        signal_name = _received()
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
    print(f"time: training {train_s:.0f} s, report {report_s:.0f} s, whole study {total:.0f} s ({study['jobs']} jobs)")
    return StudyResult(
        study,
        os.path.join(study["out"], "report"),
        {"training": train_s, "report": report_s, "study": total},
        diverged,
    )


def run(params: dict, argv: tuple[str, ...] = ()) -> StudyResult:
    """``landscape study``: its settings and the report's checked before any training, then both."""
    study = settings(params)
    settings_of(report_params(study))
    return execute(study)
