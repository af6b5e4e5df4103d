"""BatchNorm's running statistics, moved once per optimizer step, the same way on any number of ranks.

In training mode BatchNorm normalizes each forward's batch by that batch's own statistics; here that
batch is a *micro-batch* (``--micro_batch``), so the normalization does not depend on how many ranks
share a step.  Its running statistics, which a checkpoint keeps and a loss surface evaluates with,
PyTorch moves at every forward; with micro-batches spread over ranks that would depend on the split
(and DistributedDataParallel would keep rank 0's).  So, per step:

    running <- (1 - momentum) * running + momentum * mean over the step's micro-batches of their statistics

(for ``momentum=None``, PyTorch's cumulative average, the factor is ``1 / (steps + 1)``).  With one
micro-batch per step this is PyTorch's own update.  The mean over micro-batches is taken with one
all-reduce of ``count * mean`` per layer (``reduce``, given by the caller: nothing here knows about
ranks).  During a step the layers accumulate the cumulative average of their micro-batches
(``momentum=None`` from a reset), which ``finish`` turns into the update above.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..models.norms import batchnorm_layers


class StepStatistics:
    """``begin()`` before a step's micro-batches, ``finish(reduce)`` after them."""

    def __init__(self, model: nn.Module):
        self.layers = list(batchnorm_layers(model).values())
        self.saved: list[tuple] = []

    def begin(self) -> None:
        self.saved = []
        for m in self.layers:
            self.saved.append(
                (m.running_mean.clone(), m.running_var.clone(), m.num_batches_tracked.clone(), m.momentum)
            )
            m.momentum = None
            m.reset_running_stats()

    @torch.no_grad()
    def finish(self, reduce: Callable[[list[torch.Tensor]], None]) -> None:
        """Fold this step's micro-batch statistics into the running ones (``reduce`` sums in place
        over ranks)."""
        if not self.layers:
            return
        # per layer: count * mean, count * var, count (micro-batches seen on this rank)
        packed = []
        for m in self.layers:
            count = m.num_batches_tracked.to(m.running_mean.dtype)
            packed += [m.running_mean * count, m.running_var * count, count.reshape(1)]
        reduce(packed)
        for i, (m, (mean0, var0, steps0, momentum)) in enumerate(zip(self.layers, self.saved)):
            total_mean, total_var, count = packed[3 * i], packed[3 * i + 1], packed[3 * i + 2]
            m.momentum = momentum
            if float(count) == 0:  # no micro-batch anywhere (cannot happen in a step): keep the old
                m.running_mean.copy_(mean0), m.running_var.copy_(var0), m.num_batches_tracked.copy_(steps0)
                continue
            factor = momentum if momentum is not None else 1.0 / float(steps0 + 1)
            m.running_mean.copy_(mean0 * (1 - factor) + (total_mean / count) * factor)
            m.running_var.copy_(var0 * (1 - factor) + (total_var / count) * factor)
            m.num_batches_tracked.copy_(steps0 + 1)


__all__ = ["StepStatistics"]
