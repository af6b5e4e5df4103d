"""The study's trainings: one task per network (a ``landscape sweep --task`` of an arm, or a ``landscape
train`` of the mechanism's), run ``jobs`` at a time as processes of their own, the longest first, with a
line per task as it ends; a stop signal is passed on to the runs in progress and none is begun after."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass

from ..data import load_named
from ..errors import ExitStatus, InputError, Stopped, UsageError
from ..io.run_files import read_run
from ..io.toml_file import JSON_KEYS, table_flags
from ..parallel import stop
from ..parallel.launch import cli_command


def _sweep_flags(study: dict, recipe: str) -> list[str]:
    """``landscape sweep``'s flags for one recipe (an arm) of the study: the shared [train] settings and
    the recipe's own [train.<recipe>] table."""
    shared = {k: v for k, v in study["train"].items() if not isinstance(v, dict) or k in JSON_KEYS}
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


@dataclass(frozen=True)
class Task:
    """One training of the study: its name, its command's arguments, its folder, its part of the study."""

    name: str
    command: tuple[str, ...]  # landscape sweep --task i, or landscape train for the mechanism
    folder: str
    kind: str = "arm"  # "arm" (a sweep's configuration) or "mechanism"


def tasks_of(study: dict) -> list[Task]:
    """The sweep's configurations (asked of ``landscape sweep --list`` per recipe: it checks the [train]
    settings before anything is made), then the mechanism's runs."""
    tasks = []
    for recipe in study["recipes"]:
        listed = subprocess.run(
            cli_command("sweep", [*_sweep_flags(study, recipe), "--list"]), capture_output=True, text=True
        )
        if listed.returncode != 0:
            message = listed.stderr.strip().splitlines()[-1] if listed.stderr.strip() else f"exit {listed.returncode}"
            error = UsageError if listed.returncode == 2 else InputError
            raise error(f"[train] ({recipe}): " + message.split(": error: ", 1)[-1])
        for line in listed.stdout.splitlines():
            if "\t" in line:
                index, name = line.split("\t")[:2]
                command = tuple(cli_command("sweep", [*_sweep_flags(study, recipe), "--task", index]))
                tasks.append(Task(name, command, os.path.join(study["out"], name)))
    return tasks + mechanism_tasks(study)


def mechanism_tasks(study: dict) -> list[Task]:
    """[mechanism]: every rate, batch size ("full": the whole training set, gradient descent) and seed, one
    rate throughout, λmax every ``curvature_every`` steps, into ``out/mechanism/<name>``."""
    m = study.get("mechanism") or {}
    if not m:
        return []
    train = study["train"]
    full = len(load_named(train.get("dataset", "digits"), args=train.get("data_args", "")).train)
    tasks = []
    for b in m["batch_sizes"]:
        for rate in m["rates"]:
            for seed in m["seeds"]:
                batch = full if b == "full" else int(b)
                name = f"{'gd' if b == 'full' else f'sgd_b{batch}'}_lr{rate:g}_s{seed}"
                folder = os.path.join(study["out"], "mechanism", name)
                flags = {
                    "model": train["model"],
                    "dataset": train.get("dataset", "digits"),
                    **{k: train[k] for k in ("model_args", "data_args") if train.get(k)},
                    "recipe": "naive",
                    "lr": rate,
                    "batch_size": batch,
                    "momentum": m.get("momentum", train.get("momentum", 0.9)),
                    "nesterov": False,
                    "weight_decay": 0.0,
                    "milestones": [],
                    "steps": m["steps"],
                    "curvature_every": m["curvature_every"],
                    "eval_every": m["curvature_every"],
                    "save_every": m["steps"],
                    "loss_name": m.get("loss_name", "mse"),
                    "seed": seed,
                    "threads": 1,
                    "progress_seconds": 60,
                    "out": folder,
                }
                tasks.append(Task(name, tuple(cli_command("train", table_flags(flags))), folder, "mechanism"))
    return tasks


def _finished(task: Task) -> bool:
    return bool((read_run(task.folder) or {}).get("done"))


def train_all(study: dict, tasks: list[Task]) -> tuple[float, list[str]]:
    """Every task, ``jobs`` at a time, the longest first (the largest batches); returns the seconds it took
    and the runs that diverged.  A line per task as it ends, ``[k/N]`` with the time left."""
    out = study["out"]

    def cost(task: Task) -> int:
        found = re.search(r"_b(\d+)_", task.name + "_")
        return 10**9 if task.name.startswith("gd_") else int(found.group(1)) if found else 0

    order = sorted(range(len(tasks)), key=lambda i: -cost(tasks[i]))
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)
    print(f"training {len(tasks)} networks, {study['jobs']} at a time (logs: {logs}/)", flush=True)
    started, running, pending, failed, diverged = time.perf_counter(), {}, list(order), [], []
    ended, spent, timed, forwarded = 0, 0.0, 0, None
    while pending or running:
        signal_name = received()
        if signal_name and not forwarded:  # each run saves its state and exits 143; none is begun after
            forwarded, pending = signal_name, []
            for process in running:
                process.send_signal(signal.Signals[signal_name])
        while pending and len(running) < study["jobs"]:
            task = tasks[pending.pop(0)]
            log = open(os.path.join(logs, f"{task.name}.log"), "w")
            process = subprocess.Popen(task.command, stdout=log, stderr=subprocess.STDOUT)
            running[process] = (task, log, time.perf_counter(), _finished(task))
        finished = next((p for p in running if p.poll() is not None), None)
        if finished is None:
            time.sleep(0.5)
            continue
        task, log, began, checked = running.pop(finished)
        log.close()
        code, seconds = finished.returncode, time.perf_counter() - began
        ended += 1
        if forwarded and code == ExitStatus.STOPPED:
            print(f"  {task.name}: stopped by {forwarded}, saved where it stopped", flush=True)
            continue
        if code == ExitStatus.DIVERGED:
            diverged.append(task.name)
        elif code != 0:
            failed.append(task.name)
        if not checked:
            spent, timed = spent + seconds, timed + 1
        left = len(pending) + len(running)
        eta = spent / max(1, timed) * left / max(1, study["jobs"])  # the tasks timed so far, on average
        outcome = {0: "done", ExitStatus.DIVERGED: "DIVERGED (its loss became non-finite; left out of the report)"}
        what = "checked: already trained" if checked and code == 0 else outcome.get(code, f"FAILED (exit {code})")
        print(
            f"[{ended}/{len(tasks)}] {task.name}: {what} in {seconds:.0f} s"
            + (f"; about {eta / 60:.0f} min left" if left and timed else ""),
            flush=True,
        )
    if forwarded:
        raise Stopped(stop.stopped_line(forwarded, ended, len(tasks)))
    if failed:
        raise InputError(f"training failed for {', '.join(failed)}: see {logs}/{failed[0]}.log")
    if diverged:
        print(f"diverged, left out: {', '.join(sorted(diverged))} (see {logs}/<run>.log and <run>/run.json)")
    return time.perf_counter() - started, sorted(diverged)


def received() -> str | None:
    """The stop signal this process has received (the command line catches SIGTERM and SIGUSR1), or None."""
    signals = stop.installed()
    return signals.received if signals is not None else None
