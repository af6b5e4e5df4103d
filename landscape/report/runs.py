"""Which networks a scorecard compares: the finished runs of a training sweep's manifest, or a
hand-written CSV that lists checkpoints.

A trainer's manifest (``manifest.json``, ``manifest.csv`` or the sweep folder) names each run's
folder; the run's ``run.json`` says which model and data set it was trained with.  A hand-written
CSV needs the columns ``checkpoint``, ``batch_size`` and ``seed``; ``recipe`` (default ``sgd``),
``run`` (a name; default ``<recipe>_b<batch>_s<seed>``), ``model`` and ``dataset`` are optional,
the last two falling back to the report's flags.  Relative paths are relative to the CSV file.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass

from .. import checks
from ..errors import InputError
from ..io import run_files
from ..io.checkpoint import trained_on
from ..io.paths import read_text
from ..train import checkpoints as files
from ..train import sweep as sweeps

NEEDED = ("checkpoint", "batch_size", "seed")


@dataclass(frozen=True)
class Run:
    name: str
    recipe: str
    batch_size: int
    seed: int
    checkpoint: str  # absolute path of the trained weights
    model: str | None  # registry name or plug-in; None: the report's --model
    dataset: str | None  # None: the report's --dataset
    model_args: str = ""  # the factories' keyword arguments the run recorded ("": none, or the report's flags)
    data_args: str = ""
    # from the training run's record (run.json), where the checkpoint is a run's final one (train.targets):
    crossings: tuple = ()  # the weights kept where the training loss first fell to a level
    phase: str = ""  # the learning-rate phase the run ended in
    minimum: dict | None = None  # its stop rule and whether it was met (None: trained without one)


def _trained(record: dict) -> dict:
    """What a run's ``run.json`` says of where it ended: its kept crossings, last phase and stop rule."""
    crossings = record.get("crossings") if isinstance(record.get("crossings"), list) else []
    minimum = record.get("minimum") if isinstance(record.get("minimum"), dict) else None
    phase = record.get("phase") if isinstance(record.get("phase"), str) else ""
    return {"crossings": tuple(c for c in crossings if isinstance(c, dict)), "phase": phase, "minimum": minimum}


def manifest_files(path: str) -> list[str]:
    """The files a manifest argument names: the file itself, or a sweep folder's manifest.csv and .json."""
    if os.path.isdir(path):
        return [os.path.join(path, name) for name in (sweeps.MANIFEST_CSV, sweeps.MANIFEST_JSON)]
    return [path]


def _is_trainer_manifest(path: str) -> bool:
    if os.path.isdir(path) or path.endswith(".json"):
        return True
    text = read_text(path, "manifest", "utf-8-sig")  # a regular file in UTF-8: a FIFO never blocks the reading
    try:
        header = next(csv.reader(io.StringIO(text, newline="")), [])
    except csv.Error:
        raise InputError(
            f"manifest {path} is not a CSV file: expected a landscape sweep's manifest (or its folder) "
            "or a CSV of checkpoints",
        ) from None
    return "run" in header and "checkpoint" in header and "done" in header


def _from_trainer(path: str) -> tuple[list[Run], list[str]]:
    runs, skipped = [], []
    for row in sweeps.read_manifest(path):
        if not row["done"]:
            skipped.append(row["run"])
            continue
        record = run_files.read_run(row["folder"]) or {}
        identity = record.get("identity", {})
        runs.append(
            Run(
                row["run"],
                row["recipe"],
                row["batch_size"],
                row["seed"],
                os.path.join(row["folder"], files.FINAL),
                identity.get("model"),
                identity.get("dataset"),
                identity.get("model_args", ""),
                identity.get("data_args", ""),
                **_trained(record),
            )
        )
    return runs, skipped


def _whole(row: dict, key: str, path: str, line: int) -> int:
    least, most = (1, checks.BATCH_MAX) if key == "batch_size" else (0, checks.SEED_MAX)
    value = checks.as_whole(row[key])
    if value is None or not least <= value <= most:
        raise InputError(
            f"manifest {path}, line {line}: {key}={row[key]!r}: expected a whole number from {least} to {most}"
        )
    return value


def _from_csv(path: str) -> list[Run]:
    reader = csv.DictReader(io.StringIO(read_text(path, "manifest", "utf-8-sig"), newline=""))  # a BOM, as
    rows, header = list(reader), reader.fieldnames or []  # spreadsheets save CSV
    missing = [k for k in NEEDED if k not in header]
    if missing:
        raise InputError(
            f"manifest {path} has no {missing[0]} column: expected a landscape sweep manifest or a CSV "
            "with the columns checkpoint, batch_size, seed (and optionally recipe, run, model, dataset)",
        )
    if not rows:
        raise InputError(f"manifest {path} has its columns but no row: expected one row per checkpoint")
    here = os.path.dirname(os.path.abspath(path))
    runs = []
    for line, row in enumerate(rows, start=2):
        batch, seed = _whole(row, "batch_size", path, line), _whole(row, "seed", path, line)
        recipe = (row.get("recipe") or "sgd").strip()
        if not sweeps.named(recipe):  # it names figures' series and tables' rows, and its runs' folders
            raise InputError(
                f"manifest {path}, line {line}: recipe={recipe!r}: expected a name of letters, digits, '.', '_', "
                "'+' or '-'"
            )
        checkpoint = (row["checkpoint"] or "").strip()
        if not checkpoint:
            raise InputError(f"manifest {path}, line {line}: the checkpoint is empty")
        name = (row.get("run") or "").strip() or f"{recipe}_b{batch}_s{seed}"
        where = os.path.join(here, checkpoint)
        recorded = trained_on(where)  # the checkpoint read once for both
        folder = os.path.dirname(where)
        record = (run_files.read_run(folder) or {}) if os.path.basename(where) == files.FINAL else {}
        runs.append(
            Run(
                name,
                recipe,
                batch,
                seed,
                where,
                (row.get("model") or "").strip() or recorded.get("model"),
                (row.get("dataset") or "").strip() or recorded.get("dataset"),
                recorded.get("model_args", ""),
                recorded.get("data_args", ""),
                **_trained(record),
            )
        )
    return runs


def _check_name(name, path: str) -> None:
    """A run's name becomes its folder under ``out/runs/``: whatever the manifest (a sweep's, whose
    ``manifest.json`` anyone may have edited, or a CSV), never a path that leads out of it."""
    if not sweeps.named(name):
        raise InputError(
            f"manifest {path}: run={name!r}: expected a name of letters, digits, '.', '_', '+' or '-' "
            "(it names the run's folder under out/runs/)",
        )


def read_runs(path: str) -> tuple[list[Run], list[str]]:
    """The runs to report, sorted by recipe (first seen), batch size and seed, and the names of the
    manifest's unfinished runs (left out)."""
    if not os.path.exists(path):
        raise InputError(
            f"manifest {path} does not exist: expected a landscape sweep's manifest (or its folder) "
            "or a CSV of checkpoints",
        )
    runs, skipped = _from_trainer(path) if _is_trainer_manifest(path) else (_from_csv(path), [])
    if not runs:
        raise InputError(
            f"manifest {path} lists no finished run" + (f" ({len(skipped)} unfinished)" if skipped else ""),
        )
    for run in runs:
        _check_name(run.name, path)
    names = [r.name for r in runs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(
            f"manifest {path}: run {twice[0]!r} is listed twice; expected one row per run "
            "(give a run column to tell them apart)",
        )
    for run in runs:
        if os.path.isdir(run.checkpoint):
            raise InputError(
                f"manifest {path}: the checkpoint of {run.name}, {run.checkpoint}, is a folder; "
                "expected a checkpoint file",
            )
        if not os.path.isfile(run.checkpoint):
            raise InputError(f"manifest {path}: the checkpoint of {run.name}, {run.checkpoint}, does not exist")
    order = {r: i for i, r in enumerate(dict.fromkeys(r.recipe for r in runs))}
    return sorted(runs, key=lambda r: (order[r.recipe], r.batch_size, r.seed)), skipped


def describe(runs: list[Run]) -> str:
    """'12 runs: recipe sgd, batch sizes 16, 64, 256, 1024, seeds 0, 1, 2'."""

    def listed(values):
        return ", ".join(str(v) for v in sorted(set(values), key=lambda v: (isinstance(v, str), v)))

    recipes = list(dict.fromkeys(r.recipe for r in runs))
    batches, seeds = {r.batch_size for r in runs}, {r.seed for r in runs}
    return (
        f"{len(runs)} run{'s' * (len(runs) != 1)}: recipe{'s' * (len(recipes) > 1)} {', '.join(recipes)}, "
        f"batch size{'s' * (len(batches) > 1)} {listed(batches)}, seed{'s' * (len(seeds) > 1)} {listed(seeds)}"
    )


__all__ = ["Run", "read_runs", "describe", "NEEDED"]
