"""What BatchNorm layers use at a grid point: the ``--bn`` policy.

* ``eval``: the running statistics of the trained network, untouched (the
  default for ``weights`` directions, as in the reference code).
* ``states``: the directions move the running statistics too (``states``
  directions); interpolating two networks then reaches the second exactly.
* ``recalibrate``: at every point, re-estimate the statistics from a fixed set of
  training batches before evaluating, as mode-connectivity studies do
  (Garipov et al. 2018), so the loss is that of a network whose statistics fit
  its weights.
"""
from __future__ import annotations

import torch
from torch import nn

from .errors import UsageError

POLICIES = ("eval", "states", "recalibrate")


def resolve(bn: str | None, dir_type: str | None) -> tuple[str, str]:
    """``(bn, dir_type)`` from what was given: ``states`` goes with ``states`` directions only."""
    if bn is not None and bn not in POLICIES:
        raise UsageError(f"--bn={bn}: expected one of {', '.join(POLICIES)}")
    if bn is None:
        return ("states" if dir_type == "states" else "eval"), dir_type or "weights"
    if bn == "states":
        if dir_type == "weights":
            raise UsageError("--bn=states moves the running statistics, which needs --dir_type states (or no --dir_type)")
        return bn, "states"
    if dir_type == "states":
        raise UsageError(f"--bn={bn} keeps or re-estimates the running statistics, but --dir_type states moves them; "
                         "give one of the two")
    return bn, "weights"


def layers(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


class Recalibrator:
    """Re-estimates every BatchNorm layer's statistics from the same batches at each call."""

    def __init__(self, model: nn.Module, inputs: torch.Tensor, batch_size: int, batches: int, seed: int = 0):
        if batches < 1:
            raise UsageError(f"--bn_batches={batches}: expected a positive number of batches")
        self.model = model
        self.layers = layers(model)
        order = torch.randperm(len(inputs), generator=torch.Generator().manual_seed(seed))
        # Full batches only (one short batch if the data hold less): equal weights in the
        # cumulative average, and never a batch of one, which BatchNorm cannot normalize.
        size = min(batch_size, len(inputs))
        count = max(1, min(batches, len(inputs) // size))
        chosen = inputs[order[:count * size]]
        self.batches = [chosen[i:i + size] for i in range(0, len(chosen), size)]

    @torch.no_grad()
    def __call__(self) -> None:
        momenta = [m.momentum for m in self.layers]
        try:
            for m in self.layers:
                m.reset_running_stats()
                m.momentum = None  # a cumulative average over exactly these batches
                m.train()  # only BatchNorm: dropout stays off, so no random numbers are drawn
            for batch in self.batches:
                self.model(batch)
        finally:
            for m, momentum in zip(self.layers, momenta):
                m.momentum = momentum
                m.eval()
