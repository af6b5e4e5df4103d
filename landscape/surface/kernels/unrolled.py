"""The unrolled kernel, for CPUs: the reference kernel's passes, with the cross-entropy and the counts of a
classifier taken class by class.

A CPU reduces a few classes along the last dimension slowly (torch's ``log_softmax``, ``argmax`` and
``amax`` over 10 scores per sample).  Here each point's class scores are copied, right after its forward
while they are in the cache, into a buffer laid out classes x samples, and the loss, the argmax and the
NaN checks run along whole rows of samples (``cross_entropy_terms``): the same numbers to float rounding
and the same counts.  Any other model or loss takes the reference kernel's way.
"""

from __future__ import annotations

import math

import torch
from torch.func import functional_call

from . import sums
from .base import Kernel
from .batches import Batch
from .problem import Problem


class Unrolled(Kernel):
    name = "unrolled"

    @classmethod
    def refuses(cls, problem: Problem) -> str:
        if problem.device.type != "cpu":
            return "a kernel for CPUs"
        if problem.recalibrator is not None:
            return "BatchNorm recalibration re-estimates statistics point by point"
        return ""

    def _pass(self, coefficients: torch.Tensor) -> torch.Tensor:
        p = self.problem
        points = p.weights(coefficients)
        classifier = p.loss.name == "crossentropy" and p.with_accuracy
        total = torch.zeros((len(points), self._sets(), 4), dtype=torch.float64, device=p.device)
        for batch in p.sets.batches(self.batch_size):
            outputs = None
            for k, weights in enumerate(points):
                output = functional_call(p.model, weights, (batch.inputs,))
                if outputs is None:
                    by_class = classifier and output.dim() == 2 and output.shape[-1] > 1 and batch.targets.dim() == 1
                    outputs = _buffer(output, len(points), by_class)
                elif output.shape != outputs.shape[1:] or output.dtype != outputs.dtype:
                    raise RuntimeError(
                        f"the model's outputs differ from point to point: {tuple(output.shape)} "
                        f"{output.dtype} against {tuple(outputs.shape[1:])} {outputs.dtype}"
                    )
                outputs[k].copy_(output)
            if by_class:
                total += _by_class(outputs, batch, self._sets())
            else:
                total += sums.of_outputs(outputs, batch.targets, batch.runs, p.loss, p.with_accuracy, self._sets())
        return sums.finished(total)


def _buffer(output: torch.Tensor, points: int, by_class: bool) -> torch.Tensor:
    """``(K, B, ...)`` for K points' outputs like ``output``; class scores ``(B, C)`` laid out ``(K, C, B)``
    underneath (the view returned is ``(K, B, C)``)."""
    if not by_class:
        return output.new_empty((points, *output.shape))
    return output.new_empty((points, output.shape[1], output.shape[0])).transpose(-1, -2)


def _by_class(scores: torch.Tensor, batch: Batch, sets: int) -> torch.Tensor:
    """``(K, sets, 4)`` sums of K points' class scores ``(K, B, C)`` (laid out ``(K, C, B)``)."""
    logits = scores if scores.element_size() >= 4 else scores.float()
    losses, right, broken = cross_entropy_terms(logits, batch.targets)
    rows = torch.stack(
        [
            losses.to(torch.float64),
            losses.to(torch.float64).square(),
            right.to(torch.float64),
            broken.to(torch.float64),
        ],
        dim=1,
    )  # (K, 4, B)
    out = torch.zeros((len(scores), sets, 4), dtype=torch.float64)
    for s, a, b in batch.runs:
        out[:, s] = rows[..., a:b].sum(dim=-1)
    return out


def cross_entropy_terms(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per sample, from class scores ``(K, B, C)`` laid out ``(K, C, B)`` and labels ``(B,)``: the
    cross-entropy, whether the prediction is right (the label's class is the first maximum, as ``argmax``
    breaks ties) and whether the scores hold NaN; each reduction runs over whole rows of samples.

    The label's class is the first maximum if its score is the top and no earlier class reaches it.  A
    tie puts two exp(0) = 1 into the sum, so where the sum is below 2 the first test decides; where it is
    not (or is NaN), torch's argmax over those samples does."""
    columns = logits.transpose(-1, -2)  # (K, C, B): contiguous rows of samples
    top = columns.amax(dim=-2, keepdim=True)  # NaN wherever a score is NaN
    label = targets.expand(*columns.shape[:-2], 1, -1)
    picked = columns.gather(-2, label)
    right = (picked == top).squeeze(-2)
    # a gap below the floor would make a subnormal exp, which a CPU computes many times more slowly; a normal
    # number as small leaves the sum (at least the top class's exp(0) = 1) as it was
    shifted = (columns - top).clamp_(min=exp_floor(columns.dtype))
    total = shifted.exp_().sum(dim=-2)
    losses = torch.log(total).sub_(picked.sub_(top).squeeze(-2))
    maybe_tied = right & ~(total < 2)
    if maybe_tied.any():
        index = maybe_tied.nonzero(as_tuple=True)
        right[index] = logits[index].argmax(dim=-1) == targets[index[-1]]
    return losses, right, torch.isnan(top.squeeze(-2))


def exp_floor(dtype: torch.dtype) -> float:
    """The least whole number whose exp is a normal float64 (-708) for float64 scores, a normal float32
    (-87) for any other."""
    widest = torch.float64 if dtype == torch.float64 else torch.float32
    return float(math.ceil(math.log(torch.finfo(widest).tiny)))
