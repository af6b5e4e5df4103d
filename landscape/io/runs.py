"""Run records: the provenance of every run of a surface job, kept inside the surface file.

The file holds ``RUN_SLOTS`` fixed-size slots, allocated when it is made.  A record
is a short JSON text written into the next free slot as raw data, so nothing in
the file's structure changes and a kill during the write can at worst tear that
one slot, which reads back as unreadable and is skipped; every other record and
every value stay intact.  A run writes two records, one when it starts
(command line, ranks, threads, host, versions) and one when it ends (points
computed, seconds, rate, how it ended); slots are reused in a ring, so the
latest ``RUN_SLOTS // 2`` runs are kept.
"""

from __future__ import annotations

import json

import numpy as np

from .. import checks
from .schema import RUN_SLOT_BYTES, RUN_SLOTS, RUNS

DTYPE = np.dtype(f"S{RUN_SLOT_BYTES}")


def empty_slots() -> np.ndarray:
    return np.zeros(RUN_SLOTS, dtype=DTYPE)


def _records(slots) -> list[dict]:
    out = []
    for raw in slots:
        text = bytes(raw).rstrip(b"\0")
        if not text:
            continue
        try:
            record = checks.json_loads(text)
        except ValueError:
            continue  # torn by a kill during its write
        if isinstance(record, dict) and isinstance(record.get("seq"), int) and isinstance(record.get("run"), int):
            out.append(record)
    return sorted(out, key=lambda r: r["seq"])


def _encoded(record: dict) -> bytes:
    """The record as JSON within one slot; a long command line is shortened to fit, then the settings
    (the command's parameters) left out."""
    text = json.dumps(record, sort_keys=True).encode()
    if len(text) <= RUN_SLOT_BYTES:
        return text
    command = str(record.get("command_line", ""))
    keep = max(0, len(command) - (len(text) - RUN_SLOT_BYTES) - 20)
    shorter = dict(record, command_line=command[:keep] + " …(shortened)")
    text = json.dumps(shorter, sort_keys=True).encode()
    if len(text) > RUN_SLOT_BYTES and "settings" in shorter:  # long paths among the parameters
        shorter["settings"] = f"longer than a run slot ({RUN_SLOT_BYTES} bytes): see command_line"
        text = json.dumps(shorter, sort_keys=True).encode()
    if len(text) > RUN_SLOT_BYTES:  # not the command line: keep what identifies the record
        text = json.dumps({k: record[k] for k in ("seq", "run", "event")}).encode()
    return text


def append(file, event: str, fields: dict, run: int | None = None) -> int:
    """Write one record into ``file``'s next slot; return its run number (a new one for ``start``)."""
    slots = file[RUNS]
    records = _records(slots[()])
    seq = 1 + max((r["seq"] for r in records), default=0)
    if run is None:
        run = 1 + max((r["run"] for r in records), default=0)
    record = {**fields, "seq": seq, "run": run, "event": event}
    slots[seq % RUN_SLOTS] = np.frombuffer(_encoded(record).ljust(RUN_SLOT_BYTES, b"\0"), dtype=DTYPE)[0]
    return run


def read(slots) -> list[dict]:
    """The runs recorded in a ``runs`` dataset, oldest first: each run's start and end records merged."""
    merged: dict[int, dict] = {}
    for record in _records(slots):
        run = merged.setdefault(record["run"], {})
        run.update({k: v for k, v in record.items() if k not in ("seq", "event")})
    return [merged[k] for k in sorted(merged)]


def read_legacy(attribute) -> list[dict]:
    """Schema 1 kept the runs as one JSON attribute."""
    try:
        runs = checks.json_loads(attribute)
    except (TypeError, ValueError):
        return []
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []
