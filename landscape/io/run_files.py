"""A training run's log and record, as files in its folder: ``log.csv`` (one row per evaluation) and
``run.json`` (the resolved configuration and the latest metrics).  Written whole or not at all
(``io.atomic``); read as files from others are: a log must have the header ``landscape train`` writes,
whole epochs and steps and numbers in every other column but the phase."""

from __future__ import annotations

import csv
import io
import json
import os

from .. import checks
from ..errors import InputError, shown
from .atomic import write_file as _write
from .paths import read_text

LOG, RUN = "log.csv", "run.json"


def write_log(out: str, history: list[dict]) -> None:
    """``log.csv``: one row per epoch, the columns of the history's rows."""
    if not history:
        return
    columns = list(history[0])
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in history:
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
    _write(os.path.join(out, LOG), text.getvalue().encode())


LOG_TEXT = ("phase",)  # the log's columns that are words; every other one is a number


def read_log(out: str) -> list[dict]:
    """The rows of ``log.csv`` in ``out`` as strings by column (none when the run has no log), checked as a
    file from others is: the header ``landscape train`` writes (``epoch,step,...``), whole epochs and
    steps, numbers (or nan) in every other column but the phase."""
    path = os.path.join(out, LOG)
    if not os.path.lexists(path):
        return []
    text = read_text(path, "training log")  # a regular file: a FIFO or /dev/zero at its name never blocks
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError(
            f"training log {path} cannot be read ({exc}): expected the log.csv of landscape train"
        ) from None
    header = rows and list(rows[0]) or None
    if header is not None and header[:2] != ["epoch", "step"]:
        raise InputError(
            f"training log {path} starts with {','.join(map(str, header[:3]))!r}: expected the log.csv of "
            "landscape train (epoch,step,...)"
        )
    for n, row in enumerate(rows, start=2):
        for column, value in row.items():
            if column is None or value is None:  # DictReader: extra values under None, missing ones None
                given = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or ())
                raise InputError(f"training log {path} line {n}: {given} values for {len(header)} columns")
            if column in ("epoch", "step"):
                ok = checks.as_whole(value) is not None and checks.as_whole(value) >= 0
            elif column in LOG_TEXT:
                continue
            else:
                ok = _number(value)
            if not ok:
                raise InputError(
                    f"training log {path} line {n}: {column}={shown(value)}: expected "
                    f"{'a whole number' if column in ('epoch', 'step') else 'a number (or nan)'}"
                )
    return rows


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return text == ""
    return True


def write_run(out: str, record: dict) -> None:
    _write(os.path.join(out, RUN), (json.dumps(record, indent=2, default=str) + "\n").encode())


def read_run(out: str) -> dict | None:
    """``run.json`` in ``out`` (None when the run has none)."""
    path = os.path.join(out, RUN)
    if not os.path.lexists(path):
        return None
    try:
        return checks.json_loads(read_text(path, "run record"))
    except ValueError as exc:
        raise InputError(f"{path} cannot be read ({exc}): remove it, the next run rewrites it") from None


__all__ = ["LOG", "RUN", "read_log", "read_run", "write_log", "write_run"]
