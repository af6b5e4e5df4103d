"""Passes of the model over the evaluation data: the sums a point's quantities are made of.

``Sweep`` runs one point (its weights given by ``torch.func.functional_call`` from outside);
``BatchedSweep`` runs K points at once with ``torch.func.vmap`` over stacked weights, so a small
model does K points' work per matrix product.  Both return float64 tensors on the device: per data
set the loss sum, the sum of squared per-sample losses and the count of correct predictions (NaN
where accuracy has no meaning).  Nothing here knows about grids, files or ranks.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call, vmap

from .losses import Loss


def correct_predictions(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
    """Predictions equal to the label, counted on the output's device: classes along the last dim
    (``(B, C)``, ``(B, T, V)``) or, torch's convention for dense outputs, along dim 1 (``(B, C, H, W)``).
    None when the output has no class dimension to compare with (a single logit, say): accuracy is
    then NaN rather than wrong; so it is when the output holds NaN (see ``_Sweep``)."""
    if output.shape[:-1] == targets.shape and output.shape[-1] > 1:
        return (output.argmax(dim=-1) == targets).sum()
    if output.dim() >= 3 and output.shape[:1] + output.shape[2:] == targets.shape and output.shape[1] > 1:
        return (output.argmax(dim=1) == targets).sum()
    return None


class Sweep(nn.Module):
    """One pass of the model over every evaluation set, in fixed batches: per set the loss sum,
    the sum of squared per-sample losses, the count of correct predictions (NaN when an output
    held NaN, whose argmax means nothing, or has no class dimension), all as one float64 tensor
    ``(sets, 3)`` on the device: a point's results come back in one transfer."""

    def __init__(self, model: nn.Module, data: dict[str, tuple[torch.Tensor, torch.Tensor]], loss: Loss,
                 batch_size: int, with_accuracy: bool):
        super().__init__()
        self.model = model
        self.data, self.loss, self.batch_size, self.with_accuracy = data, loss, batch_size, with_accuracy

    def forward(self) -> torch.Tensor:
        sums = []
        for inputs, targets in self.data.values():
            zero = torch.zeros((), dtype=torch.float64, device=targets.device)
            total, squares, correct, comparable, nan = zero, zero, zero, True, torch.zeros((), dtype=torch.bool,
                                                                                           device=targets.device)
            for start in range(0, len(targets), self.batch_size):
                x = inputs[start:start + self.batch_size]
                y = targets[start:start + self.batch_size]
                output = self.model(x)
                batch_sum, batch_squares = self.loss.total(output, y)
                total = total + batch_sum
                squares = squares + batch_squares
                if self.with_accuracy and comparable:
                    right = correct_predictions(output, y)
                    comparable = right is not None
                    if comparable:
                        correct = correct + right.to(torch.float64)
                        nan = nan | torch.isnan(output).any()
            if not comparable:
                correct = torch.full((), float("nan"), dtype=torch.float64, device=targets.device)
            sums.append(torch.stack([total, squares, torch.where(nan, torch.nan, correct)]))
        return torch.stack(sums)


def correct_many(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
    """``correct_predictions`` of K outputs ``(K, B, ...)`` against one set of targets: ``(K,)``."""
    if output.shape[1:-1] == targets.shape and output.shape[-1] > 1:
        return (output.argmax(dim=-1) == targets).flatten(1).sum(dim=1)
    if output.dim() >= 4 and output.shape[1:2] + output.shape[3:] == targets.shape and output.shape[2] > 1:
        return (output.argmax(dim=2) == targets).flatten(1).sum(dim=1)
    return None


class BatchedSweep:
    """``Sweep`` for K points in each forward pass: ``self(stacked)`` maps weights stacked along a
    first dimension of K to a ``(K, sets, 3)`` tensor of sums."""

    def __init__(self, model: nn.Module, data: dict[str, tuple[torch.Tensor, torch.Tensor]], loss: Loss,
                 batch_size: int, with_accuracy: bool):
        self.model, self.data, self.loss, self.batch_size, self.with_accuracy = model, data, loss, batch_size, \
            with_accuracy
        self.forward = vmap(lambda weights, x: functional_call(model, weights, (x,)), in_dims=(0, None))

    def __call__(self, stacked: dict[str, torch.Tensor]) -> torch.Tensor:
        k = next(iter(stacked.values())).shape[0]
        sums = []
        for inputs, targets in self.data.values():
            zeros = torch.zeros(k, dtype=torch.float64, device=targets.device)
            total, squares, correct, comparable = zeros, zeros, zeros, True
            nan = torch.zeros(k, dtype=torch.bool, device=targets.device)
            for start in range(0, len(targets), self.batch_size):
                x = inputs[start:start + self.batch_size]
                y = targets[start:start + self.batch_size]
                output = self.forward(stacked, x)  # (K, B, ...)
                batch_sum, batch_squares = self.loss.total_many(output, y)
                total = total + batch_sum
                squares = squares + batch_squares
                if self.with_accuracy and comparable:
                    right = correct_many(output, y)
                    comparable = right is not None
                    if comparable:
                        correct = correct + right.to(torch.float64)
                        nan = nan | torch.isnan(output).flatten(1).any(dim=1)
            if not comparable:
                correct = torch.full((k,), float("nan"), dtype=torch.float64, device=targets.device)
            sums.append(torch.stack([total, squares, torch.where(nan, torch.nan, correct)], dim=1))
        return torch.stack(sums, dim=1)
