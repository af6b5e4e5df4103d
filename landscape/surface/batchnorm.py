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

from ..errors import ConfigError, UsageError, param
from ..models.norms import batchnorm_layers

POLICIES = ("eval", "states", "recalibrate")
# samples per recalibration batch: fixed, so that the statistics (and so the values) do not depend on the
# evaluation's batch size, which is how a surface is computed, not what it is
BATCH = 128


def resolve(bn: str | None, dir_type: str | None) -> tuple[str, str]:
    """``(bn, dir_type)`` from what was given: ``states`` goes with ``states`` directions only."""
    if bn is not None and bn not in POLICIES:
        raise ConfigError("bn", bn, f"one of {', '.join(POLICIES)}")
    if bn is None:
        return ("states" if dir_type == "states" else "eval"), dir_type or "weights"
    if bn == "states":
        if dir_type == "weights":
            raise UsageError(
                f"{param('bn')}=states moves the running statistics, which needs {param('dir_type')}=states "
                f"(or no {param('dir_type')})",
            )
        return bn, "states"
    if dir_type == "states":
        raise UsageError(
            f"{param('bn')}={bn} keeps or re-estimates the running statistics, but {param('dir_type')}=states "
            "moves them; give one of the two",
        )
    return bn, "weights"


class Recalibrator:
    """Re-estimates every BatchNorm layer's statistics from the same batches at each point.

    ``statistics(forward)`` returns fresh running statistics (keyed like the
    state_dict) after passing the batches through ``forward(batch, statistics)``,
    which must run the model with those tensors as its buffers (the evaluation
    kernel's ``functional_call``); the model's own buffers are never touched.
    """

    def __init__(self, model: nn.Module, inputs: torch.Tensor, batches: int, batch_size: int = BATCH, seed: int = 0):
        self.model = model
        self.layers = batchnorm_layers(model)
        order = torch.randperm(len(inputs), generator=torch.Generator().manual_seed(seed))
        # Full batches only (one short batch if the data hold less): equal weights in the
        # cumulative average, and never a batch of one, which BatchNorm cannot normalize.
        size = min(batch_size, len(inputs))
        count = max(1, min(batches, len(inputs) // size))
        chosen = inputs[order[: count * size]]
        self.batches = [chosen[i : i + size] for i in range(0, len(chosen), size)]

    def statistics(self, forward) -> dict[str, torch.Tensor]:
        fresh = {}
        for name, m in self.layers.items():
            fresh[f"{name}.running_mean"] = torch.zeros_like(m.running_mean)
            fresh[f"{name}.running_var"] = torch.ones_like(m.running_var)
            fresh[f"{name}.num_batches_tracked"] = torch.zeros_like(m.num_batches_tracked)
        momenta = {name: m.momentum for name, m in self.layers.items()}
        try:
            for m in self.layers.values():
                m.momentum = None  # a cumulative average over exactly these batches
                m.train()  # only BatchNorm: dropout stays off, so no random numbers are drawn
            for batch in self.batches:
                forward(batch, fresh)
        finally:
            for name, m in self.layers.items():
                m.momentum = momenta[name]
                m.eval()
        return fresh
