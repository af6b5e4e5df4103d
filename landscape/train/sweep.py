"""Sweeps: every (recipe, batch size, seed) of a study, each a training run in its own folder, and the
manifest that lists them.

    OUT/<recipe>_b<batch>_s<seed>/   one run (``job.py``): checkpoints, log.csv, run.json
    OUT/manifest.csv, manifest.json  one row per configuration of the sweep, finished or not

The manifest is never edited row by row: whoever finishes a run rebuilds it from the ``run.json`` of
every folder of the sweep, under a lock, and renames it into place.  So job-array tasks finishing
together (``--task``), a rerun, or a ``kill -9`` leave a manifest that is complete and consistent with
the folders, and rebuilding it twice gives the same file.  A run whose training loss became NaN or
infinite is listed with ``diverged`` true and ``done`` false (``done`` true when it was trained on past
that with ``allow_nonfinite``); its ``run.json`` says where.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import io
import itertools
import json
import math
import os
import re
import stat
from dataclasses import dataclass

from .. import checks
from ..errors import ConfigError, InputError
from ..io import run_files
from ..io.atomic import write_file
from ..io.lock import NOFOLLOW
from ..io.paths import read_text
from . import checkpoints as files
from .recipes import NAMES

MANIFEST_CSV, MANIFEST_JSON, SWEEP = "manifest.csv", "manifest.json", "sweep.json"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # a run's or a recipe's name: a folder name of its own
COLUMNS = (
    "run",
    "recipe",
    "batch_size",
    "seed",
    "epochs",
    "steps",
    "done",
    "diverged",
    "epoch",
    "step",
    "checkpoint",
    "train_loss",
    "train_error",
    "test_loss",
    "test_error",
    "seconds",
    "images_per_second",
    "ranks",
)


@dataclass(frozen=True)
class Configuration:
    recipe: str
    batch_size: int
    seed: int

    @property
    def name(self) -> str:
        return f"{self.recipe}_b{self.batch_size}_s{self.seed}"


def configurations(recipes, batch_sizes, seeds) -> list[Configuration]:
    """Every combination, in a fixed order (recipe, then batch, then seed): ``--task i`` is the i-th."""

    unknown = [r for r in recipes if r not in NAMES]
    if unknown:
        raise ConfigError("recipes", unknown[0], f"recipes among {', '.join(NAMES)}")
    for name, values in (("recipes", recipes), ("batch_sizes", batch_sizes), ("seeds", seeds)):
        if not values:
            raise ConfigError(name, list(values), "at least one value")
        if len(set(values)) != len(values):
            raise ConfigError(name, list(values), "values without repeats")
    if not all(checks.is_whole(b) and b >= 1 for b in batch_sizes):
        raise ConfigError("batch_sizes", list(batch_sizes), "positive whole numbers")
    if not all(checks.is_whole(s) and 0 <= s <= checks.SEED_MAX for s in seeds):
        raise ConfigError("seeds", list(seeds), f"whole numbers from 0 to {checks.SEED_MAX}")
    return [Configuration(r, b, s) for r, b, s in itertools.product(recipes, batch_sizes, seeds)]


def _row(out: str, config: Configuration, epochs: int) -> dict:
    folder = os.path.join(out, config.name)
    record = run_files.read_run(folder) or {}
    metrics = record.get("metrics", {})
    steps = record.get("identity", {}).get("steps")
    epochs = None if steps else record.get("identity", {}).get("epochs", epochs)  # a budget in steps has none

    def error(acc):
        return 100.0 - acc if isinstance(acc, (int, float)) and not math.isnan(acc) else math.nan

    return {
        "run": config.name,
        "recipe": config.recipe,
        "batch_size": config.batch_size,
        "seed": config.seed,
        "epochs": epochs,
        "steps": steps,  # the budget in steps, or None (in epochs)
        "done": bool(record.get("done", False)),
        "diverged": bool(record.get("diverged")),  # its training loss became non-finite (run.json says where)
        "epoch": record.get("epoch", 0),
        "step": record.get("step", 0),
        "checkpoint": os.path.join(config.name, files.FINAL) if record.get("done") else "",  # from the manifest
        "train_loss": metrics.get("train_loss", math.nan),
        "train_error": error(metrics.get("train_acc")),
        "test_loss": metrics.get("test_loss", math.nan),
        "test_error": error(metrics.get("test_acc")),
        "seconds": record.get("seconds", math.nan),
        "images_per_second": record.get("images_per_second", math.nan),
        "ranks": record.get("ranks", 0),
    }


def _found(out: str) -> list[Configuration]:
    """The runs already in ``out`` (folders holding a ``run.json``), whichever command made them."""
    found = []
    for name in sorted(os.listdir(out)):
        record = run_files.read_run(os.path.join(out, name)) if os.path.isdir(os.path.join(out, name)) else None
        identity = (record or {}).get("identity", {})
        if {"recipe", "batch_size", "seed"} <= set(identity):
            config = Configuration(identity["recipe"], int(identity["batch_size"]), int(identity["seed"]))
            if config.name == name:
                found.append(config)
    return found


def write_manifest(out: str, configs: list[Configuration], epochs: int, settings: dict) -> list[dict]:
    """Rebuild ``manifest.csv`` and ``manifest.json`` from the run folders, under ``OUT/manifest.lock``:
    this sweep's configurations, and every other run in ``out`` (a rerun with fewer recipes keeps the
    rows of the others), sorted by recipe, batch size and seed."""
    with _manifest_lock(out) as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)  # waits for a task writing at the same moment
        listed = list(dict.fromkeys([*configs, *_found(out)]))
        order = {r: i for i, r in enumerate(dict.fromkeys(c.recipe for c in listed))}
        listed.sort(key=lambda c: (order[c.recipe], c.batch_size, c.seed))
        rows = [_row(out, c, epochs) for c in listed]
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
        write_file(os.path.join(out, MANIFEST_CSV), text.getvalue().encode())
        write_file(
            os.path.join(out, MANIFEST_JSON),
            (json.dumps({"settings": settings, "runs": rows}, indent=2, default=str) + "\n").encode(),
        )
    return rows


def _manifest_lock(out: str):
    """``OUT/manifest.lock``, opened without following a link (``io.lock``): a link planted there is refused,
    as is anything but a regular file, rather than created or locked through."""
    path = os.path.join(out, "manifest.lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(
                f"manifest lock {path} is a symbolic link, which no job of landscape makes; remove it"
            ) from None
        raise InputError(f"manifest lock {path} cannot be opened ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"manifest lock {path} is not a regular file, which no job of landscape makes; remove it")
    return os.fdopen(fd, "r+b")


def read_manifest(path: str) -> list[dict]:
    """The rows of a manifest (``manifest.json``, ``manifest.csv``, or the sweep folder holding them);
    paths in it are made relative to where the manifest is."""
    if os.path.isdir(path):
        path = os.path.join(path, MANIFEST_JSON)
    if not os.path.lexists(path):
        raise InputError(
            f"manifest {path} does not exist: expected manifest.json or manifest.csv of a "
            "landscape sweep, or its folder"
        )
    text = read_text(path, "manifest")  # a regular file of a sane size: a FIFO never blocks the reading
    try:
        if path.endswith(".csv"):
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
        else:
            rows = checks.json_loads(text)["runs"]
    except (csv.Error, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"manifest {path} cannot be read ({exc}): expected the manifest of a landscape sweep"
        ) from None
    if not isinstance(rows, list):
        raise InputError(
            f"manifest {path}: its runs are a {type(rows).__name__} ({rows!r:.60}): expected a list of runs"
        )
    return [_manifest_row(path, i, row) for i, row in enumerate(rows)]


def _manifest_row(path: str, i: int, row) -> dict:
    """Entry ``i`` of the manifest ``path``, its numbers parsed and its folder made absolute; an entry of
    another shape (not a record, a name that is no folder name, a number that is none or out of range) is
    an input error naming it: anyone may have edited the file."""
    shown = f"run {i} ({row!r:.80})"
    if not isinstance(row, dict):
        raise InputError(f"manifest {path}: {shown} is a {type(row).__name__}: expected a record of the columns")
    missing = [key for key in ("run", "recipe", "batch_size", "seed", "done", "test_error") if key not in row]
    if missing:
        raise InputError(f"manifest {path}: {shown} lacks '{missing[0]}': expected the columns {', '.join(COLUMNS)}")
    for key in ("run", "recipe"):
        if not named(row[key]):
            raise InputError(
                f"manifest {path}: {shown}: {key}={row[key]!r}: expected a name of letters, digits, '.', '_', '+' "
                "or '-' (it names a folder)"
            )
    numbers = {}
    for key, least, most in (("batch_size", 1, checks.BATCH_MAX), ("seed", 0, checks.SEED_MAX)):
        value = checks.as_whole(row[key])
        if value is None or not least <= value <= most:
            raise InputError(
                f"manifest {path}: {shown}: {key}={row[key]!r}: expected a whole number from {least} to {most}"
            )
        numbers[key] = value
    try:
        test_error = float(row["test_error"])
    except (TypeError, ValueError):
        raise InputError(f"manifest {path}: {shown}: test_error={row['test_error']!r}: expected a number") from None
    return {
        **row,
        **numbers,
        "done": row["done"] in (True, "True"),
        "diverged": row.get("diverged") in (True, "True"),  # absent from older manifests
        "test_error": test_error,
        "folder": os.path.join(os.path.dirname(os.path.abspath(path)), row["run"]),
    }


def named(name) -> bool:
    """Whether ``name`` may name a run or recipe: a folder name of its own, never a path out of one."""
    return isinstance(name, str) and bool(NAME.fullmatch(name)) and name not in (".", "..")


__all__ = [
    "Configuration",
    "configurations",
    "write_manifest",
    "read_manifest",
    "COLUMNS",
    "MANIFEST_CSV",
    "MANIFEST_JSON",
]
