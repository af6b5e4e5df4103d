"""What every kernel evaluates: a model on a plane of weights, on fixed data, with a loss.

A point ``(a, b)`` of the plane has the weights ``origin + a*dx + b*dy``, made fresh from the origin (never
walked from the previous point, so no rounding error accumulates and a point's value does not depend on
which rank computes it or in what order), in float64, and rounded once into the model's dtype: (0, 0) is
the trained model exactly, and coefficient 1 along ``model2 - model`` is model2.  The tensors a plane
moves are laid end to end in one float64 vector (``Layout``), the directions as the rows of a matrix, so
the weights of K points are one matrix product, ``origin + coefficients @ plane``.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call

from ...losses import Loss
from ..batchnorm import Recalibrator
from .batches import SetData


class Layout:
    """Named tensors laid end to end in one flat vector: where each starts and ends, and views of flat
    vectors (or of the rows of a matrix) as them."""

    def __init__(self, tensors: dict[str, torch.Tensor]):
        self.shapes = {name: tensor.shape for name, tensor in tensors.items()}
        ends = list(itertools.accumulate((tensor.numel() for tensor in tensors.values()), initial=0))
        self.spans = {name: (start, end) for name, start, end in zip(tensors, ends, ends[1:])}
        self.size = ends[-1]

    def views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of ``flat`` ``(n,)`` as the tensors, or of ``(K, n)`` as K-stacked tensors ``(K, *shape)``."""
        lead = flat.shape[:-1]
        return {
            name: flat[..., start:end].view((*lead, *self.shapes[name])) for name, (start, end) in self.spans.items()
        }

    def flatten(self, tensors: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([tensors[name].reshape(-1) for name in self.spans] or [torch.zeros(0, dtype=torch.float64)])


@dataclass
class Problem:
    """A model (a private copy, on its device, in its dtype, in eval mode), the plane its weights move
    in, the data sets and the loss.  Made by ``Problem.of``; kernels only read it."""

    model: nn.Module
    layout: Layout
    origin: torch.Tensor  # (n,) float64: the moved tensors at (0, 0), laid out by ``layout``
    plane: torch.Tensor  # (1 or 2, n) float64: the directions as rows
    variances: list[tuple[int, int]]  # spans of BatchNorm running variances: a perturbed one is kept >= 0
    dtype: torch.dtype
    sets: SetData
    loss: Loss
    with_accuracy: bool
    recalibrator: Recalibrator | None = None

    @classmethod
    def of(
        cls,
        model: nn.Module,
        origin: dict,
        directions: list[dict],
        data: dict[str, tuple],
        loss: Loss,
        dtype: torch.dtype,
        device: torch.device,
        with_accuracy: bool,
        bn: str = "eval",
        bn_batches: int = 10,
    ) -> Problem:
        """``origin`` and each of ``directions`` map the names of the tensors the plane moves (parameters,
        or state_dict entries for ``states`` directions) to tensors; ``data``: ``(inputs, targets)`` by set
        name; ``bn='recalibrate'``: BatchNorm statistics re-estimated at every point (``surface.batchnorm``)."""
        copied = copy.deepcopy(model).to(device=device, dtype=dtype).eval()
        as_f64 = lambda d: {k: torch.as_tensor(d[k]).to(device=device, dtype=torch.float64) for k in directions[0]}
        start = as_f64(origin)
        layout = Layout(start)
        rows = [as_f64(d) for d in directions]
        for name, tensor in ((k, v) for row in rows for k, v in row.items()):
            if tensor.numel() != start[name].numel():
                raise ValueError(
                    f"direction tensor {name!r} has shape {tuple(tensor.shape)}, expected that of "
                    f"the origin's, {tuple(start[name].shape)}"
                )
        flat = layout.flatten(start).to(device)
        plane = torch.stack([layout.flatten(row).to(device) for row in rows])
        variances = [span for name, span in layout.spans.items() if name.endswith("running_var")]
        tensors = {}
        for name, (inputs, targets) in data.items():
            inputs = inputs.to(device)
            tensors[name] = (inputs.to(dtype) if inputs.is_floating_point() else inputs, targets.to(device))
        sets = SetData.of(tensors, loss.per_sample)
        recalibrator = Recalibrator(copied, sets.data["train"][0], bn_batches) if bn == "recalibrate" else None
        return cls(copied, layout, flat, plane, variances, dtype, sets, loss, with_accuracy, recalibrator)

    @property
    def device(self) -> torch.device:
        return self.origin.device

    def stacked(self, coefficients: torch.Tensor) -> torch.Tensor:
        """``(K, n)`` float64: the weights of K points ``(K, 2)``, all tensors side by side."""
        rows = torch.addmm(self.origin, coefficients[:, : len(self.plane)].to(self.origin), self.plane)
        for start, end in self.variances:
            rows[:, start:end].clamp_(min=0.0)  # a perturbed variance is never negative
        return rows

    def weights(self, coefficients: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        """Each point's tensors by name, rounded once into the model's dtype."""
        return [self.layout.views(row) for row in self.stacked(coefficients).to(self.dtype)]

    def recalibrated(self, weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``weights`` with BatchNorm statistics re-estimated for them (``bn='recalibrate'``), or as they are."""
        if self.recalibrator is None:
            return weights
        forward = lambda batch, stats: functional_call(self.model, {**weights, **stats}, (batch,))
        return {**weights, **self.recalibrator.statistics(forward)}
