"""Networks compared at different training losses: when that is so, and the values to compare instead.

The values come from the checkpoints a run saved while training: ``matched_checkpoint`` finds, in the
run's ``log.csv``, the first evaluation whose training loss is at or below a target and whose weights
were saved (``epoch_NNNN.pt`` or ``step_NNNNNNN.pt`` beside ``final.pt``); ``report`` measures it like
any network and stores its values as ``<key>_matched``.  The default target is the largest final
training loss of the runs compared, so that every run reaches it (at the latest at its end); a run
that never reaches a target given by hand is reported as such, its matched values NaN.

Sharpness grows as a network descends into its minimum and shrinks with the loss's own scale: λmax,
the trace and the worst-case rises of a network at train loss 0.003 and one at 0.1 differ for that
reason alone.  A batch-size study whose small and large batches stop at training losses a factor of
``LOSS_RATIO`` apart therefore compares losses as much as batch sizes (a user's "trace tracks the gap,
τ = −0.86" came from such a comparison, and reversed at matched loss).  The scorecard says so first,
and where a run's values hold a measure at a common training loss, ``<key>_matched`` (written by
whoever computes it, e.g. from a checkpoint saved when training crossed that loss), it tests those.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass

from ..train.checkpoints import read_log

LOSS_RATIO = 2.0  # training losses further apart than this factor: the runs are not at comparable minima
MATCHED = "_matched"  # suffix of a measure's key at a matched training loss, in a run's values


def loss_ratio(runs: list[dict]) -> float:
    """The largest training loss over the smallest, over the runs with a positive one (NaN for none)."""
    losses = [r["values"].get("train_loss", math.nan) for r in runs]
    losses = [v for v in losses if v is not None and math.isfinite(v) and v > 0]
    return max(losses) / min(losses) if losses else math.nan


def mismatched(runs: list[dict]) -> bool:
    return loss_ratio(runs) > LOSS_RATIO


def values_of(runs: list[dict], key: str, matched: bool) -> tuple[list[float], str]:
    """The runs' values of ``key`` and their basis: the ``_matched`` ones (NaN where a run has none) when
    ``matched`` and any run has one, "matched_loss"; else as trained, "trained"."""
    if matched and any(f"{key}{MATCHED}" in r["values"] for r in runs):
        values, basis = [r["values"].get(f"{key}{MATCHED}") for r in runs], "matched_loss"
    else:
        values, basis = [r["values"].get(key) for r in runs], "trained"
    return [math.nan if v is None else float(v) for v in values], basis


@dataclass(frozen=True)
class Matched:
    """Where a run crossed the target training loss: the checkpoint saved there (None: never)."""

    target: float
    checkpoint: str | None
    epoch: int | None = None
    step: int | None = None
    train_loss: float = math.nan
    note: str = ""

    def record(self) -> dict:
        return asdict(self)


def final_loss(checkpoint: str) -> float:
    """The training loss of a run's last log row (NaN without a log: a checkpoint from elsewhere)."""
    rows = read_log(os.path.dirname(checkpoint))
    return float(rows[-1]["train_loss"]) if rows else math.nan


def matched_checkpoint(checkpoint: str, target: float) -> Matched:
    """The first saved checkpoint of the run that wrote ``checkpoint`` whose training loss is <= ``target``:
    ``checkpoint`` itself when that is the run's ``final.pt`` and only its last log row is that low."""
    folder = os.path.dirname(checkpoint)
    rows = read_log(folder)
    if not rows:
        return Matched(target, None, note=f"no log.csv beside {checkpoint}: its training path is unknown")
    for i, row in enumerate(rows):
        loss = float(row["train_loss"])
        if not loss <= target:
            continue
        epoch, step = int(row["epoch"]), int(row.get("step") or 0)
        if i == len(rows) - 1 and os.path.basename(checkpoint) == "final.pt":  # the network itself
            return Matched(target, checkpoint, epoch, step, loss, note="its final weights")
        for name in (f"step_{step:07d}.pt", f"epoch_{epoch:04d}.pt"):
            if os.path.exists(os.path.join(folder, name)):
                return Matched(target, os.path.join(folder, name), epoch, step, loss)
    best = min(float(r["train_loss"]) for r in rows)
    if best <= target:
        return Matched(target, None, note=f"it reached {best:.4g} but saved no weights there (save more often)")
    return Matched(target, None, note=f"it never reached train loss {target:.4g} (its lowest: {best:.4g})")


__all__ = [
    "LOSS_RATIO",
    "MATCHED",
    "Matched",
    "loss_ratio",
    "mismatched",
    "values_of",
    "final_loss",
    "matched_checkpoint",
]
