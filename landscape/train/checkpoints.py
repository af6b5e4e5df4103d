"""A training run's files in ``--out DIR``, and resuming from them.

    DIR/epoch_0001.pt ...   after every epoch (or every ``save_every``): float32 weights and metadata,
                            the trajectory a PCA of the training path projects (compact: no optimizer);
    DIR/step_0000100.pt ... the same every ``save_every`` steps, when the budget is in steps
    DIR/final.pt            the last epoch's weights and metadata: what ``plot_surface`` reads
    DIR/latest.pt           the newest state: weights, every rank's optimizer (and control variates),
                            the position in the epoch and the history: what a resume continues from
    DIR/log.csv             one row per evaluation (every epoch by default; rewritten from the history,
                            so never a duplicate row; ``io.run_files``)
    DIR/run.json            the resolved configuration and the latest metrics, for people and manifests
                            (``io.run_files``)

Every file is written under a temporary name and renamed into place, so ``kill -9`` at any instant
leaves the previous version whole.  All are read with ``weights_only=True``: the metadata is plain
values.  The layout ``{'state_dict': ..., 'meta': ...}`` is what ``plot_surface --model_file`` reads.
"""

from __future__ import annotations

import io
import os

import torch

from ..errors import InputError, MismatchError, param
from ..io.atomic import fsync_directory
from ..io.atomic import write_file as _write
from ..plugins import recorded_canonically

LATEST, FINAL = "latest.pt", "final.pt"


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


__all__ = [
    "epoch_name",
    "step_name",
    "save_weights",
    "save_latest",
    "load_latest",
    "check_same_run",
    "compact",
    "LATEST",
    "FINAL",
]
