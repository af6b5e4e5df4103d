"""Losses by name or as user code: ``crossentropy``, ``mse``, or ``package.module:callable``.

Built-in losses give a per-sample loss, so a surface can also carry the standard
error of its mean; a user's callable returns the mean over a batch, as torch's
criteria do, and is weighted by the batch size.
"""
from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F

from .errors import UsageError
from .plugins import canonical, is_plugin, load_object

BUILTIN = ("crossentropy", "mse")


def per_sample(name: str, output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The loss of every sample of a batch.

    ``mse`` averages over the output units of a sample, as ``nn.MSELoss`` does over
    a batch; integer class labels become one-hot targets (any number of classes),
    float targets are used as they are (regression).
    """
    if name == "crossentropy":
        return F.cross_entropy(output, targets, reduction="none")
    if name == "mse":
        if not targets.is_floating_point():
            targets = F.one_hot(targets, output.shape[-1]).to(output.dtype)
        targets = targets.reshape(output.shape).to(output.dtype)
        return F.mse_loss(output, targets, reduction="none").reshape(len(output), -1).mean(dim=1)
    raise UsageError(f"--loss_name={name}: expected one of {', '.join(BUILTIN)} or package.module:callable")


class Loss:
    """A loss to evaluate: ``total(output, targets)`` returns (sum, sum of squares) over the batch."""

    def __init__(self, spec):
        if callable(spec) and not isinstance(spec, str):
            self.name = f"callable:{getattr(spec, '__module__', '?')}.{getattr(spec, '__qualname__', type(spec).__name__)}"
            self.fn = spec
        elif is_plugin(spec):
            obj = load_object(spec, "--loss_name")
            self.name = canonical(spec)
            self.fn = obj() if inspect.isclass(obj) else obj  # a criterion class such as nn.CrossEntropyLoss
        elif spec in BUILTIN:
            self.name, self.fn = spec, None
        else:
            raise UsageError(f"--loss_name={spec}: expected one of {', '.join(BUILTIN)} or package.module:callable")

    @property
    def per_sample(self) -> bool:
        return self.fn is None

    def total(self, output: torch.Tensor, targets: torch.Tensor) -> tuple[float, float]:
        if self.fn is None:
            losses = per_sample(self.name, output, targets).to(torch.float64)
            return float(losses.sum()), float((losses * losses).sum())
        return float(self.fn(output, targets)) * len(targets), float("nan")
