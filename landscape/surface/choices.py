"""The settings ``auto`` measured, remembered between jobs in the user's cache folder.

A surface long enough to be measured (``surface.cost.MEASURE_AFTER``) costs seconds of measuring, and
what it finds depends on the race: the next job on the same problem could choose otherwise, and its
last bits would differ.  So rank 0 keeps the choice in ``$LANDSCAPE_CACHE/choices.json`` (default
``~/.cache/landscape``), under a key made of what the speed depends on — the model's tensors (names,
shapes, types), the data's shapes, the device, the threads per rank, the precision, the loss, the
settings given, BatchNorm's policy and landscape's version — and the next job with that key takes it
without measuring (the run records say so).  The number of ranks is not in the key: 1 and N ranks take
the same settings, and so the same bits.

The file is a convenience: missing, unreadable or damaged, it is as if empty (and written afresh); a
failed write is silent.  It holds the latest ``KEPT`` choices.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import torch

from .. import checks
from ..io.atomic import write_file
from ..io.paths import cache_folder
from ..version import __version__

KEPT = 256
FILE = "choices.json"
FIELDS = ("kernel", "batch_size", "points_per_pass")


def key(model: torch.nn.Module, sets: dict, device: str, threads: int, given: dict) -> str:
    """What the measured speed depends on, as a SHA-256: the model's tensors, each set's sample count
    and sample shape, the device (its kind and, on a GPU, its name), the threads per rank and the
    settings ``given`` (precision, loss, BatchNorm's policy, the kernel, batch and points asked for)."""
    tensors = [(n, list(t.shape), str(t.dtype)) for n, t in (*model.named_parameters(), *model.named_buffers())]
    data = {name: [len(s), list(s.inputs.shape[1:]), str(s.inputs.dtype)] for name, s in sets.items()}
    kind = device.split(":")[0]
    name = torch.cuda.get_device_name(torch.device(device)) if kind == "cuda" else kind
    described = {
        "model": type(model).__qualname__,
        "tensors": tensors,
        "data": data,
        "device": name,
        "threads": threads,
        "given": given,
        "version": __version__,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def _read(path: str) -> dict:
    try:
        with open(path, "rb") as handle:
            found = checks.json_loads(handle.read(1 << 22))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def recalled(digest: str, path: str | None = None) -> dict | None:
    """The settings remembered under ``digest`` (``kernel``, ``batch_size``, ``points_per_pass``), or None."""
    entry = _read(path or os.path.join(cache_folder(), FILE)).get(digest)
    if not isinstance(entry, dict):
        return None
    chosen = {k: entry.get(k) for k in FIELDS}
    if not isinstance(chosen["kernel"], str) or not all(checks.is_whole(chosen[k]) for k in FIELDS[1:]):
        return None
    return chosen if min(chosen["batch_size"], chosen["points_per_pass"]) >= 1 else None


def remember(digest: str, chosen: dict, path: str | None = None) -> None:
    """Keep ``chosen`` under ``digest`` (the latest ``KEPT`` choices); a write that fails is let go."""
    path = path or os.path.join(cache_folder(), FILE)
    entries = _read(path)
    entries.pop(digest, None)
    entries[digest] = {**{k: chosen[k] for k in FIELDS}, "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    kept = dict(list(entries.items())[-KEPT:])
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_file(path, (json.dumps(kept, indent=1) + "\n").encode(), "the remembered settings")
    except Exception:  # noqa: BLE001 - a cache: never the reason a surface fails
        pass


__all__ = ["FILE", "KEPT", "key", "recalled", "remember"]
