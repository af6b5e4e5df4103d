"""Losses by name or as user code: ``crossentropy``, ``mse``, or ``package.module:callable``.

Built-in losses give a per-sample loss, so a surface can also carry the standard
error of its mean; a user's callable returns the mean over a batch, as torch's
criteria do, and is weighted by the batch size.
"""

from __future__ import annotations

import functools
import hashlib
import inspect

import torch
import torch.nn.functional as F

from .errors import ConfigError, InputError, describe, param
from .plugins import canonical, is_plugin, load_object

BUILTIN = ("crossentropy", "mse")
LOSS_WORDS = {"crossentropy": "cross-entropy", "mse": "MSE"}  # the losses as words in a sentence


def per_sample(name: str, output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The loss of every sample of a batch.

    ``mse`` averages over the output units of a sample, as ``nn.MSELoss`` does over
    a batch; integer class labels become one-hot targets (any number of classes),
    float targets are used as they are (regression).
    """
    if name == "crossentropy":  # classes along dim 1 (torch's convention); a sample's mean over the rest
        return F.cross_entropy(output, targets, reduction="none").reshape(len(output), -1).mean(dim=1)
    if name == "mse":
        if not targets.is_floating_point():
            targets = F.one_hot(targets, output.shape[-1]).to(output.dtype)
        targets = targets.reshape(output.shape).to(output.dtype)
        return F.mse_loss(output, targets, reduction="none").reshape(len(output), -1).mean(dim=1)
    raise ConfigError("loss_name", name, f"one of {', '.join(BUILTIN)} or package.module:callable")


def at_least_float32(output: torch.Tensor) -> torch.Tensor:
    """Outputs of a bfloat16 or float16 model, for the loss: a softmax in 8 bits of mantissa loses much."""
    return output.float() if output.is_floating_point() and output.element_size() < 4 else output


def check_labels(name: str, output: torch.Tensor, low: int, high: int) -> None:
    """Class labels from ``low`` to ``high`` must be scores the output has (for the built-in losses)."""
    if name not in BUILTIN:
        return
    classes = (output.shape[1] if name == "crossentropy" else output.shape[-1]) if output.dim() > 1 else 1
    if low < 0 or high >= classes:
        raise InputError(
            f"the model gives {classes} class score{'s' * (classes != 1)} per sample but the labels "
            f"run from {low} to {high}: expected labels in 0..{classes - 1} (is {param('num_classes')} right?)",
        )


def fingerprint(obj) -> str:
    """What a loss callable computes, as far as it can be told: code, constants, bound settings.

    Two lambdas, or one criterion class with other settings, must not share a
    surface file's identity, or a resumed run would mix their values.
    """
    digest = hashlib.sha256(
        f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}".encode()
    )
    if isinstance(obj, functools.partial):
        digest.update(fingerprint(obj.func).encode() + repr((obj.args, sorted(obj.keywords.items()))).encode())
    code = getattr(obj, "__code__", None)
    if code is not None:
        digest.update(code.co_code + repr(code.co_consts).encode() + repr(getattr(obj, "__defaults__", None)).encode())
        for cell in getattr(obj, "__closure__", None) or ():
            digest.update(repr(cell.cell_contents).encode())
    if isinstance(obj, torch.nn.Module) or not callable(getattr(obj, "__code__", None)):
        settings = (
            {k: v for k, v in vars(obj).items() if isinstance(v, (int, float, str, bool, type(None)))}
            if hasattr(obj, "__dict__")
            else {}
        )
        digest.update(repr(sorted(settings.items())).encode())
    return digest.hexdigest()[:16]


class Loss:
    """A loss to evaluate: ``total(output, targets)`` returns (sum, sum of squares) over the batch."""

    def __init__(self, spec):
        if callable(spec) and not isinstance(spec, str):
            label = getattr(spec, "__qualname__", type(spec).__qualname__)
            self.name = f"callable:{getattr(spec, '__module__', '?')}.{label}#{fingerprint(spec)}"
            self.fn = spec
        elif not isinstance(spec, str):
            raise ConfigError("loss", spec, f"{', '.join(BUILTIN)}, package.module:callable or a callable")
        elif is_plugin(spec):
            obj = load_object(spec, "loss_name")
            try:
                self.fn = obj() if inspect.isclass(obj) else obj  # a criterion class such as nn.CrossEntropyLoss
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code
                raise InputError(
                    f"{param('loss_name')} {spec!r}: the class cannot be made without arguments ({describe(exc)}); "
                    "expected a loss class such as torch.nn:CrossEntropyLoss or a function",
                ) from None
            self.name = f"{canonical(spec)}#{fingerprint(self.fn)}"
        elif spec in BUILTIN:
            self.name, self.fn = spec, None
        else:
            raise ConfigError("loss_name", spec, f"one of {', '.join(BUILTIN)} or package.module:callable")

    @property
    def per_sample(self) -> bool:
        return self.fn is None

    def of_samples(self, output: torch.Tensor, targets: torch.Tensor, points: int = 0) -> torch.Tensor:
        """Per-sample losses, at least float32: ``(B,)`` of one point's output, or ``(K, B)`` of ``points``
        = K points' outputs ``(K, B, ...)`` against one batch of targets (one call on ``(K*B, ...)``: a
        sample's loss does not depend on its neighbours).  Built-in losses only."""
        output = at_least_float32(output)
        if not points:
            return per_sample(self.name, output, targets)
        repeated = targets.repeat(points, *([1] * (targets.dim() - 1)))
        return per_sample(self.name, output.reshape(-1, *output.shape[2:]), repeated).view(points, -1)

    def batch_total(self, output: torch.Tensor, targets: torch.Tensor, points: int = 0) -> torch.Tensor:
        """A callable loss's batch mean times the batch size, float64: a scalar, or ``(K,)`` of K points."""
        output = at_least_float32(output)
        means = [self.fn(out, targets) for out in (output if points else [output])]
        sums = torch.stack([torch.as_tensor(m, dtype=torch.float64, device=output.device) for m in means])
        sums = sums * len(targets)
        return sums if points else sums[0]

    def total(self, output: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Sum and sum of squares of the per-sample losses of one point's batch, as float64 tensors on the
        output's device (nothing comes back to the host here); a callable's squares are NaN."""
        if self.fn is None:
            losses = self.of_samples(output, targets).to(torch.float64)
            return losses.sum(), (losses * losses).sum()
        total = self.batch_total(output, targets)
        return total, torch.full_like(total, float("nan"))
