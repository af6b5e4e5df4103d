"""The reference kernel: each point of a pass through the model's own forward, its weights put in by
``torch.func.functional_call``; the loss and the counts taken once over the pass's stacked outputs.

The simplest way to evaluate a point that is still quick, and the default wherever no other kernel is
measurably faster (``surface.tuning``).  It runs any model on any device, and re-estimates BatchNorm
statistics point by point (``bn='recalibrate'``), which the other kernels cannot.
"""

from __future__ import annotations

import torch
from torch.func import functional_call

from .base import Kernel


class Reference(Kernel):
    name = "reference"

    def _pass(self, coefficients: torch.Tensor) -> torch.Tensor:
        p = self.problem
        points = [p.recalibrated(weights) for weights in p.weights(coefficients)]

        def outputs(inputs: torch.Tensor) -> torch.Tensor:
            return torch.stack([functional_call(p.model, weights, (inputs,)) for weights in points])

        return self._summed(outputs, coefficients)
