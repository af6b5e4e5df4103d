"""What a batch of K points' outputs adds to their quantities: per data set the loss sum, the sum of
squared per-sample losses, the correct predictions, and the samples whose output holds NaN.

Sums are float64 tensors on the device, ``(K, sets, 4)`` per batch, added up over the batches and then
``finished``: ``(K, sets, 3)``, a set's count of correct predictions NaN where any of its outputs held
NaN (its argmax means nothing), so a point's results come back to the host in one transfer.
"""

from __future__ import annotations

import torch

from ...losses import Loss

SUM, SQUARES, CORRECT, BROKEN = range(4)


def correct_per_sample(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
    """Predictions equal to the label, ``(K, B)`` from K points' outputs ``(K, B, ...)``: classes along the
    last dim (``(B, C)``; ``(B, T, V)``: a sample counts its correct tokens) or, torch's convention for
    dense outputs, along dim 1 (``(B, C, H, W)``).  None when the output has no class dimension to
    compare with (a single logit, say): accuracy is then NaN rather than wrong."""
    if output.shape[1:-1] == targets.shape and output.shape[-1] > 1:
        right = output.argmax(dim=-1) == targets
    elif output.dim() >= 4 and output.shape[1:2] + output.shape[3:] == targets.shape and output.shape[2] > 1:
        right = output.argmax(dim=2) == targets
    else:
        return None
    return right.flatten(2).sum(dim=-1) if right.dim() > 2 else right


def of_outputs(
    outputs: torch.Tensor, targets: torch.Tensor, runs: tuple, loss: Loss, with_accuracy: bool, sets: int
) -> torch.Tensor:
    """``(K, sets, 4)``: what K points' ``outputs`` ``(K, B, ...)`` on a batch of ``targets`` whose sets are
    ``runs`` (``batches.Batch``) add to each set's sums."""
    points = outputs.shape[0]
    out = torch.zeros((points, sets, 4), dtype=torch.float64, device=outputs.device)
    right = correct_per_sample(outputs, targets) if with_accuracy else None
    broken = torch.isnan(outputs).flatten(2).any(dim=-1) if right is not None else None
    if loss.per_sample:
        losses = loss.of_samples(outputs, targets, points).to(torch.float64)
    else:  # a callable's batch mean: the sets went through apart, so a batch is one set's
        ((s, _, _),) = runs
        out[:, s, SUM] = loss.batch_total(outputs, targets, points)
        out[:, s, SQUARES] = torch.nan
    for s, a, b in runs:
        if loss.per_sample:
            part = losses[:, a:b]
            out[:, s, SUM] = part.sum(dim=-1)
            out[:, s, SQUARES] = (part * part).sum(dim=-1)
        if right is None:
            out[:, s, CORRECT] = torch.nan
        else:
            out[:, s, CORRECT] = right[:, a:b].sum(dim=-1, dtype=torch.float64)
            out[:, s, BROKEN] = broken[:, a:b].sum(dim=-1, dtype=torch.float64)
    return out


def finished(total: torch.Tensor) -> torch.Tensor:
    """Summed ``(..., sets, 4)`` contributions as ``(..., sets, 3)``: loss sum, squares, correct (NaN where
    any output of the set held NaN)."""
    correct = torch.where(total[..., BROKEN] > 0, torch.nan, total[..., CORRECT])
    return torch.stack([total[..., SUM], total[..., SQUARES], correct], dim=-1)
