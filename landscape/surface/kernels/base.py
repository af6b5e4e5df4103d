"""The interface every evaluation kernel implements."""

from __future__ import annotations

import copy
from typing import ClassVar

import torch

from . import sums
from .problem import Problem


class Kernel:
    """Evaluates a pass of K grid points of a ``Problem``: ``kernel(coefficients)`` maps their ``(K, 2)``
    float64 coefficients ``(a, b)`` (on the problem's device) to ``(K, sets, 3)`` float64 sums per data
    set: loss sum, sum of squared per-sample losses, correct predictions (``kernels.sums``).

    A kernel goes through the data in batches of ``batch_size`` samples; ``points_per_pass`` is the most
    points a call takes (the job's chunks of the grid).  Subclasses set ``name`` and implement ``_pass``;
    ``refuses`` says why a kernel cannot evaluate a problem (``""``: it can)."""

    name: ClassVar[str] = ""

    def __init__(self, problem: Problem, batch_size: int, points_per_pass: int):
        self.problem, self.batch_size, self.points_per_pass = problem, batch_size, points_per_pass

    @classmethod
    def refuses(cls, problem: Problem) -> str:
        return ""

    def __call__(self, coefficients: torch.Tensor) -> torch.Tensor:
        return self._pass(coefficients)

    def _pass(self, coefficients: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _sets(self) -> int:
        return len(self.problem.sets.data)

    def _summed(self, outputs_of, coefficients: torch.Tensor) -> torch.Tensor:
        """The finished sums of a pass whose outputs on a batch's inputs are ``outputs_of(inputs)``
        ``(K, B, ...)``."""
        p = self.problem
        total = torch.zeros((len(coefficients), self._sets(), 4), dtype=torch.float64, device=p.device)
        for batch in p.sets.batches(self.batch_size):
            total += sums.of_outputs(
                outputs_of(batch.inputs), batch.targets, batch.runs, p.loss, p.with_accuracy, self._sets()
            )
        return sums.finished(total)

    def rebatched(self, batch_size: int) -> Kernel:
        """This kernel in batches of ``batch_size``, sharing what it has built (compiled code): for tuning."""
        other = copy.copy(self)
        other.batch_size = batch_size
        return other
