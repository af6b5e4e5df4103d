"""What a surface will cost, from the model's shape alone: the settings ``auto`` starts from, and whether
a surface is long enough to be worth measuring for better ones (``surface.tuning``).

``shape_of`` runs the model once on two samples with a hook on every leaf module and counts, per sample,
the bytes of every activation it makes, the largest single activation, and the multiply-adds of its
linear and convolutional layers (the work of a forward).  From those:

- ``start_batch``: the whole of the longest pass when its activations fit ``ACTIVATIONS_BUDGET``, else
  the largest power of two that does (at least ``SMALLEST_BATCH``), and never one whose largest single
  activation passes the heap's threshold (``heap.LARGEST_THRESHOLD``: past it each batch maps its pages
  afresh).  A small model then runs on its whole data set in one batch, the single most profitable
  setting (4.8x on a 441-point MLP surface), and ResNet-20 on CIFAR at 128, where it is fastest.
- ``start_points``: where a pass is one batch, up to ``START_POINTS`` grid points per pass (their outputs
  under the heap's threshold, and a pass at most a sixteenth of the grid): the loss, the counts and the
  weights' matrix product are then taken once for all of them, 1.16-1.40x on the MLPs, the same on the
  digits CNN (``scripts/bench_points.py``, BENCHMARKS.md).  Split into batches, one point per pass.
- ``predicted_seconds``: the surface's forward work at an optimistic ``FLOPS`` per thread (so a surface
  predicted short is short); ``tuning`` measures only a surface predicted to take ``MEASURE_AFTER``
  seconds or more, so that measuring costs a small share of it.

Nothing here is measured: the same model, data and device give the same start on any machine and any
number of ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..heap import LARGEST_THRESHOLD

ACTIVATIONS_BUDGET = 256 << 20  # bytes of a batch's activations, summed over the layers
SMALLEST_BATCH = 16
START_POINTS = 16  # points per pass auto starts from where a pass is one batch (scripts/bench_points.py)
FLOPS = {"cpu": 100e9, "cuda": 20e12}  # per thread on a CPU, per device on a GPU: optimistic on purpose
MEASURE_AFTER = 30.0  # predicted seconds of a surface from which measuring for better settings pays


@dataclass(frozen=True)
class Shape:
    """A model's forward, per sample."""

    activation_bytes: float  # every leaf module's output
    largest_activation: float  # the largest single output
    macs: float  # multiply-adds of its linear and convolutional layers
    output_bytes: float = 0.0  # the model's output


def _macs(module: nn.Module, output: torch.Tensor) -> int:
    """Multiply-adds of one call of ``module`` that made ``output`` (all samples)."""
    if isinstance(module, nn.Linear):
        return output.numel() * module.in_features
    if isinstance(module, nn.modules.conv._ConvNd):
        kernel = 1
        for size in module.kernel_size:
            kernel *= size
        return output.numel() * (module.in_channels // module.groups) * kernel
    return 0


def shape_of(model: nn.Module, example: torch.Tensor) -> Shape:
    """The per-sample shape of ``model``'s forward on ``example`` (a few samples; the model is run once
    in eval mode, without gradients, and left as it was)."""
    totals = {"bytes": 0, "largest": 0, "macs": 0}

    def count(module, _inputs, output):
        if torch.is_tensor(output):
            size = output.numel() * output.element_size()
            totals["bytes"] += size
            totals["largest"] = max(totals["largest"], size)
            totals["macs"] += _macs(module, output)

    leaves = [m for m in model.modules() if not list(m.children())]
    hooks = [m.register_forward_hook(count) for m in leaves]
    training = model.training
    try:
        model.eval()
        with torch.inference_mode():
            output = model(example)
    finally:
        model.train(training)
        for hook in hooks:
            hook.remove()
    n = max(1, len(example))
    out = output.numel() * output.element_size() if torch.is_tensor(output) else 0
    return Shape(totals["bytes"] / n, totals["largest"] / n, totals["macs"] / n, out / n)


def start_batch(shape: Shape, longest: int, budget: int = ACTIVATIONS_BUDGET) -> int:
    """The batch ``auto`` starts from: all ``longest`` samples of the longest pass if their activations
    fit ``budget`` and no single one passes the heap's threshold, else the largest power of two that does
    (``SMALLEST_BATCH`` at least, ``longest`` at most)."""
    per_sample = max(shape.activation_bytes, 1.0)
    fits = min(budget / per_sample, LARGEST_THRESHOLD / max(shape.largest_activation, 1.0))
    if fits >= longest:
        return longest
    batch = SMALLEST_BATCH
    while batch * 2 <= fits:
        batch *= 2
    return min(batch, longest)


def start_points(shape: Shape, batch: int, longest: int, points: int) -> int:
    """The points per pass ``auto`` starts from: with the whole longest pass in one ``batch``, the largest
    power of two up to ``START_POINTS`` whose stacked outputs stay under the heap's threshold and that is
    at most a sixteenth of the grid's ``points``; else 1.  Never the ranks': the bits are the same on any
    number of them."""
    if batch < longest:
        return 1
    room = LARGEST_THRESHOLD / max(batch * shape.output_bytes, 1.0)
    k = 1
    while k * 2 <= min(START_POINTS, room, points / 16):
        k *= 2
    return k


def predicted_seconds(shape: Shape, samples: int, points: int, device: str = "cpu", threads: int = 1) -> float:
    """The seconds of ``points`` grid points of ``samples`` samples each at ``FLOPS`` (two per multiply-add),
    the work spread over ``threads`` threads on a CPU."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    rate = FLOPS[kind] * (max(1, threads) if kind == "cpu" else 1)
    return 2.0 * shape.macs * samples * points / rate


__all__ = [
    "ACTIVATIONS_BUDGET",
    "MEASURE_AFTER",
    "START_POINTS",
    "Shape",
    "predicted_seconds",
    "shape_of",
    "start_batch",
    "start_points",
]
