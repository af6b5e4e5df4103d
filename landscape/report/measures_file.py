"""``measures.json``, one run's measurements: the record's SHA-256 (``RECORD_DIGEST``), and what a rerun
reads back, refusing a file measured with other settings, as another network, from another checkpoint
or changed since (an edited value) rather than mixing two computations in one table."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict

from .. import checks
from ..errors import ConfigError, InputError, MismatchError
from .measure_config import TARGET_IDENTITY, MeasureConfig, Target
from .runs import Run

MEASURES_FILE = "measures.json"
RECORD_DIGEST = "record_sha256"  # measures.json's SHA-256 of everything else it holds


def run_record(run: Run) -> dict:
    """A run's record as plain values, as measures.json holds it (tuples as lists)."""
    return json.loads(json.dumps(asdict(run), default=float))


def digest(record: dict) -> str:
    """SHA-256 of a record as JSON (keys sorted) without its own digest: values, errors, details,
    settings, target and the checkpoint's SHA-256 alike."""
    body = {k: v for k, v in record.items() if k != RECORD_DIGEST}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=float).encode()).hexdigest()


def cached(path: str, config: MeasureConfig, checkpoint_sha: str, run: Run, target: Target) -> dict | None:
    if not os.path.exists(path):
        return None
    try:
        with open(path) as handle:
            found = checks.json_loads(handle.read())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} cannot be read ({exc}); remove it to measure {run.name} again") from None
    if not isinstance(found, dict):
        raise InputError(f"{path} holds no measurement record; remove it to measure {run.name} again")
    stored, now = found.get("settings", {}), config.record()
    try:  # a setting missing there was added since: its measure is not in that file
        same = set(stored) == set(now) and MeasureConfig(**stored) == config
    except (TypeError, ConfigError):
        same = False
    if not same:
        changed = [
            f"{k} {stored[k]!r} there, {now[k]!r} now" if k in stored else f"{k} not there, {now[k]!r} now"
            for k in now
            if k not in stored or stored[k] != now[k]
        ]
        raise MismatchError(
            f"{path} was measured with other settings ({'; '.join(changed) or 'unknown'}); "
            "choose another out or remove that folder to measure again"
        )
    then = {k: found.get("target", {}).get(k, getattr(Target, k, None)) for k in TARGET_IDENTITY}  # older: no args
    now = {k: getattr(target, k) for k in TARGET_IDENTITY}
    if then != now:
        differ = "; ".join(f"{k} {then[k]!r} there, {now[k]!r} now" for k in TARGET_IDENTITY if then[k] != now[k])
        raise MismatchError(
            f"{path} was measured as another network or data set ({differ}); choose another out or remove that "
            "folder to measure again"
        )
    if found.get("checkpoint_sha256") != checkpoint_sha:
        raise MismatchError(
            f"{path} was measured from another checkpoint than {run.checkpoint} (its SHA-256 "
            "differs: retrained?); choose another out or remove that folder to measure again"
        )
    if found.get(RECORD_DIGEST) != digest(found):  # last: a changed setting or checkpoint says which
        state = "carries no digest" if RECORD_DIGEST not in found else "does not match its digest"
        raise MismatchError(
            f"{path} {state} ({RECORD_DIGEST}): changed since it was measured; remove the folder "
            f"{os.path.dirname(path)} to measure {run.name} again"
        )
    return found
