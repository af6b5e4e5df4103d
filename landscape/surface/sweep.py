"""Passes of the model over the evaluation data: the sums a point's quantities are made of.

``Sweep`` runs one point, ``BatchedSweep`` K points at once with ``torch.func.vmap`` over stacked
weights, so a small model does K points' work per matrix product.  Both call the model through
``torch.func.functional_call`` with the point's weights, one batch of data at a time, and return
float64 tensors on the device: per data set the loss sum, the sum of squared per-sample losses and
the count of correct predictions (NaN where accuracy has no meaning).  With ``compile`` the work of
one batch (forward, loss, counts) is one ``torch.compile``d function, so the loss and the counts
fuse into the model's last kernels.  Nothing here knows about grids, files or ranks.
"""
from __future__ import annotations

import copy

import torch
from torch import nn
from torch.func import functional_call, vmap

from .losses import Loss

# One batch's contribution: loss sum, sum of squared losses, correct predictions (NaN when the output
# has no class dimension to compare), outputs holding NaN (0 or 1, whose argmax means nothing).
SUM, SQUARES, CORRECT, NAN = range(4)


def correct_predictions(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
    """Predictions equal to the label, counted on the output's device: classes along the last dim
    (``(B, C)``, ``(B, T, V)``) or, torch's convention for dense outputs, along dim 1 (``(B, C, H, W)``).
    None when the output has no class dimension to compare with (a single logit, say): accuracy is
    then NaN rather than wrong; so it is when the output holds NaN."""
    if output.shape[:-1] == targets.shape and output.shape[-1] > 1:
        return (output.argmax(dim=-1) == targets).sum()
    if output.dim() >= 3 and output.shape[:1] + output.shape[2:] == targets.shape and output.shape[1] > 1:
        return (output.argmax(dim=1) == targets).sum()
    return None


def correct_many(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
    """``correct_predictions`` of K outputs ``(K, B, ...)`` against one set of targets: ``(K,)``."""
    if output.shape[1:-1] == targets.shape and output.shape[-1] > 1:
        return (output.argmax(dim=-1) == targets).flatten(1).sum(dim=1)
    if output.dim() >= 4 and output.shape[1:2] + output.shape[3:] == targets.shape and output.shape[2] > 1:
        return (output.argmax(dim=2) == targets).flatten(1).sum(dim=1)
    return None


RECOMPILE_LIMIT = 256  # shapes compiled per step: each batch size (and a set's shorter last batch) is one


def compiled(step):
    """``step`` through ``torch.compile`` with static shapes: each batch shape is compiled once, when
    first seen (symbolic shapes were tried: they recompiled all the same for convolutions and broke
    inductor on ResNet-20).  Should torch ever give up compiling (too many recompilations), it must
    raise rather than quietly run some points eagerly, since compiled and eager values differ in
    their last bits."""
    import torch._dynamo as dynamo
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, max(getattr(dynamo.config, name), RECOMPILE_LIMIT))
    if hasattr(dynamo.config, "fail_on_recompile_limit_hit"):
        dynamo.config.fail_on_recompile_limit_hit = True
    return torch.compile(step, dynamic=False)


class _Passes:
    """What both sweeps share: the data in batches and the accumulation of the per-batch sums."""

    def __init__(self, model: nn.Module, data: dict[str, tuple[torch.Tensor, torch.Tensor]], loss: Loss,
                 batch_size: int, with_accuracy: bool, compile: bool = False):
        self.model, self.data, self.loss = model, data, loss
        self.batch_size, self.with_accuracy = batch_size, with_accuracy
        self.step = compiled(self._step) if compile else self._step

    def _step(self, weights, x, y) -> torch.Tensor:
        raise NotImplementedError

    def _points(self, weights) -> tuple[int, ...]:
        return ()

    def with_batch_size(self, batch_size: int) -> "_Passes":
        """The same sweep in batches of ``batch_size``, sharing the (compiled) step: a step takes any batch."""
        other = copy.copy(self)
        other.batch_size = batch_size
        return other

    def __call__(self, weights: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per data set ``(..., sets, 3)``: loss sum, squared-loss sum, correct predictions."""
        sums = []
        for inputs, targets in self.data.values():
            total = torch.zeros(self._points(weights) + (4,), dtype=torch.float64, device=targets.device)
            for start in range(0, len(targets), self.batch_size):
                total = total + self.step(weights, inputs[start:start + self.batch_size],
                                          targets[start:start + self.batch_size])
            correct = torch.where(total[..., NAN] > 0, torch.nan, total[..., CORRECT])
            sums.append(torch.stack([total[..., SUM], total[..., SQUARES], correct], dim=-1))
        return torch.stack(sums, dim=-2)


class Sweep(_Passes):
    """One point: ``self(weights)`` is a ``(sets, 3)`` float64 tensor on the device, so a point's
    results come back in one transfer."""

    def _step(self, weights, x, y) -> torch.Tensor:
        output = functional_call(self.model, weights, (x,))
        batch_sum, batch_squares = self.loss.total(output, y)
        right = correct_predictions(output, y) if self.with_accuracy else None
        nan = torch.isnan(output).any() if right is not None else torch.zeros((), dtype=torch.bool, device=y.device)
        right = right.to(torch.float64) if right is not None else torch.full((), float("nan"), dtype=torch.float64,
                                                                              device=y.device)
        return torch.stack([batch_sum, batch_squares, right, nan.to(torch.float64)])


class BatchedSweep(_Passes):
    """K points per forward pass: ``self(stacked)`` maps weights stacked along a first dimension of K
    to a ``(K, sets, 3)`` tensor of sums."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.forward = vmap(lambda weights, x: functional_call(self.model, weights, (x,)), in_dims=(0, None))

    def _points(self, stacked) -> tuple[int, ...]:
        return (next(iter(stacked.values())).shape[0],)

    def _step(self, stacked, x, y) -> torch.Tensor:
        output = self.forward(stacked, x)  # (K, B, ...)
        k = output.shape[0]
        batch_sum, batch_squares = self.loss.total_many(output, y)
        right = correct_many(output, y) if self.with_accuracy else None
        if right is None:
            right = torch.full((k,), float("nan"), dtype=torch.float64, device=y.device)
            nan = torch.zeros(k, dtype=torch.float64, device=y.device)
        else:
            right, nan = right.to(torch.float64), torch.isnan(output).flatten(1).any(dim=1).to(torch.float64)
        return torch.stack([batch_sum, batch_squares, right, nan], dim=1)
