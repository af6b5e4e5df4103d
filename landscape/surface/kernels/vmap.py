"""The vmap kernel: the K points of a pass through one forward per batch, ``torch.func.vmap`` over their
stacked weights, so a small model does K points' work per matrix product.

On a GPU that fills the device that one small model leaves idle.  A CPU gains nothing from it (the K-fold
activations fall out of its caches).  Some modules cannot run under vmap (a data-dependent branch, an
in-place update of a buffer): the evaluator's probe finds out before the first point.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, vmap

from .base import Kernel
from .problem import Problem


class Vmap(Kernel):
    name = "vmap"

    def __init__(self, problem: Problem, batch_size: int, points_per_pass: int):
        super().__init__(problem, batch_size, points_per_pass)
        model = problem.model
        self.forward = vmap(lambda weights, x: functional_call(model, weights, (x,)), in_dims=(0, None))

    @classmethod
    def refuses(cls, problem: Problem) -> str:
        if problem.recalibrator is not None:
            return "BatchNorm recalibration re-estimates statistics point by point"
        if not problem.layout.size:
            return "the plane moves no tensors: nothing to stack"
        return ""

    def _pass(self, coefficients: torch.Tensor) -> torch.Tensor:
        p = self.problem
        stacked = p.layout.views(p.stacked(coefficients).to(p.dtype))  # each tensor (K, *shape)
        return self._summed(lambda inputs: self.forward(stacked, inputs), coefficients)
