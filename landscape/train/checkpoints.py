"""A training run's files in ``--out DIR``, and resuming from them.

    DIR/epoch_0001.pt ...   after every epoch (or every ``save_every``): float32 weights and metadata,
                            the trajectory a PCA of the training path projects (compact: no optimizer);
    DIR/step_0000100.pt ... the same every ``save_every`` steps, when the budget is in steps
    DIR/final.pt            the last epoch's weights and metadata: what ``plot_surface`` reads
    DIR/latest.pt           the newest state: weights, every rank's optimizer (and control variates),
                            the position in the epoch and the history: what a resume continues from
    DIR/log.csv             one row per evaluation (every epoch by default; rewritten from the history,
                            so never a duplicate row)
    DIR/run.json            the resolved configuration and the latest metrics, for people and manifests

Every file is written under a temporary name and renamed into place, so ``kill -9`` at any instant
leaves the previous version whole.  All are read with ``weights_only=True``: the metadata is plain
values.  The layout ``{'state_dict': ..., 'meta': ...}`` is what ``plot_surface --model_file`` reads.
"""

from __future__ import annotations

import csv
import io
import json
import os

import torch

from .. import checks
from ..errors import InputError, MismatchError, param, shown
from ..io.atomic import fsync_directory
from ..io.atomic import write_file as _write
from ..plugins import recorded_canonically

LATEST, FINAL, LOG, RUN = "latest.pt", "final.pt", "log.csv", "run.json"


def epoch_name(epoch: int) -> str:
    """The file of the weights after ``epoch`` epochs (1-based)."""
    return f"epoch_{epoch:04d}.pt"


def step_name(step: int) -> str:
    """The file of the weights after ``step`` optimizer steps (a budget in steps)."""
    return f"step_{step:07d}.pt"


def _torch_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def compact(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A state_dict on the CPU, floating tensors in float32 (integers such as BatchNorm's counters kept)."""
    return {
        k: (v.detach().to("cpu", torch.float32) if v.is_floating_point() else v.detach().cpu()).clone()
        for k, v in state.items()
    }


def save_weights(out: str, name: str, state: dict, meta: dict) -> str:
    path = os.path.join(out, name)
    _write(path, _torch_bytes({"state_dict": compact(state), "meta": meta}))
    return path


def save_latest(out: str, state: dict, meta: dict, ranks_state: list[dict]) -> None:
    """The resumable state: full-precision weights, every rank's optimizer and position."""
    weights = {k: v.detach().cpu().clone() for k, v in state.items()}
    _write(os.path.join(out, LATEST), _torch_bytes({"state_dict": weights, "meta": meta, "ranks": ranks_state}))
    fsync_directory(out)


def load_latest(out: str) -> dict | None:
    """The resumable state in ``out``, or None when there is none yet."""
    path = os.path.join(out, LATEST)
    if not os.path.exists(path):
        return None
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a damaged file
        raise InputError(
            f"{path} cannot be read ({str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__}); "
            f"it is damaged: remove it to start the run again"
        ) from None


def check_same_run(stored: dict, identity: dict, out: str) -> None:
    """A resume continues only the run that ``identity`` describes: any other setting is refused, by name."""
    before = recorded_canonically(stored.get("meta", {}).get("identity", {}))
    for key in sorted(set(before) | set(identity)):
        if before.get(key) != identity.get(key):
            raise MismatchError(
                f"{out} holds a run with {param(key)}={before.get(key)!r}, not {identity.get(key)!r}; "
                f"rerun with its settings to resume it, or give another {param('out')}",
            )


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
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
            header = rows and list(rows[0]) or None
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(
            f"training log {path} cannot be read ({exc}): expected the log.csv of landscape train"
        ) from None
    if header is not None and header[:2] != ["epoch", "step"]:
        raise InputError(
            f"training log {path} starts with {','.join(map(str, header[:3]))!r}: expected the log.csv of "
            "landscape train (epoch,step,...)"
        )
    for n, row in enumerate(rows, start=2):
        for column, value in row.items():
            if column is None or value is None:
                raise InputError(f"training log {path} line {n}: {len(row)} values for {len(header)} columns")
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
    path = os.path.join(out, RUN)
    try:
        with open(path) as handle:
            return checks.json_loads(handle.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} cannot be read ({exc}): remove it, the next run rewrites it") from None


__all__ = [
    "epoch_name",
    "step_name",
    "save_weights",
    "save_latest",
    "load_latest",
    "check_same_run",
    "write_log",
    "read_log",
    "write_run",
    "read_run",
    "compact",
    "LATEST",
    "FINAL",
    "LOG",
    "RUN",
]
