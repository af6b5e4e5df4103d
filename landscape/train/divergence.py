"""Divergence: a training loss that became NaN or infinite, where it happened, and what the user is told.

Ranks may meet it a step apart (a NaN in one rank's micro-batch reaches the others' weights through the
all-reduce of that step), so where it happened is the earliest step any rank saw (``first``).  When no
rank saw a non-finite loss of its own (a sum over ranks that overflowed, or weights made non-finite by a
step whose loss was still finite) it is the position the run has reached.  Nothing here talks to other
ranks: ``job.py`` gathers what each saw.
"""

from __future__ import annotations

import torch

from ..errors import Diverged, param


def seen(epoch: int, step: int, lr: float, loss: float) -> dict:
    """A rank's record of a step whose loss was not finite (``epoch`` counted from 1, ``step`` the steps
    done with it)."""
    return {"epoch": epoch, "step": step, "lr": lr, "loss": loss}


def first(gathered: list[dict | None], fallback: dict) -> dict:
    """Where the run diverged: the earliest step of what the ranks saw (``gathered``, None where a rank
    saw nothing), else ``fallback`` (a ``seen`` record of where the run is).  As run.json records it: the
    loss as text (``nan``, ``inf``; JSON has neither)."""
    found = [d for d in gathered if d is not None]
    where = min(found, key=lambda d: d["step"]) if found else fallback
    return {**where, "loss": str(float(where["loss"]))}


def finite(model: torch.nn.Module) -> bool:
    """Every floating parameter and buffer of ``model`` is finite."""
    return all(bool(torch.isfinite(t).all()) for t in model.state_dict().values() if t.is_floating_point())


def what(where: dict) -> str:
    return (
        f"training diverged at epoch {where['epoch']}, step {where['step']} (learning rate {where['lr']:g}): "
        f"the training loss is {where['loss']}"
    )


def stopped(where: dict, latest: str | None) -> Diverged:
    """The error that stops the run: where, what was kept (``latest``, or None when nothing was saved yet),
    and what to do."""
    kept = f"the last finite checkpoint, {latest}, is kept" if latest else "nothing was saved yet"
    return Diverged(
        f"{what(where)}; {kept}, and run.json records where: lower {param('lr')}, or give "
        f"{param('allow_nonfinite')} to go on regardless"
    )


__all__ = ["seen", "first", "finite", "what", "stopped"]
