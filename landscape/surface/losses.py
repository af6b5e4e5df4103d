"""Losses by name or as user code: ``crossentropy``, ``mse``, or ``package.module:callable``.

Built-in losses give a per-sample loss, so a surface can also carry the standard
error of its mean; a user's callable returns the mean over a batch, as torch's
criteria do, and is weighted by the batch size.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import math

import torch
import torch.nn.functional as F

from ..errors import ConfigError, InputError, describe
from ..plugins import canonical, is_plugin, load_object

BUILTIN = ("crossentropy", "mse")


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


def cross_entropy_terms(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per sample, from class scores ``(..., B, C)`` and labels ``(B,)``, in one pass over the scores:
    the cross-entropy, whether the prediction is right (``argmax`` equals the label, ties going to the
    first maximum as ``argmax`` breaks them) and whether the scores hold NaN.

    The numbers of ``per_sample('crossentropy', ...)`` and an argmax (to the last bits or so), from one
    maximum per sample instead of a log-softmax and an argmax: compiled, on one core of this project's
    VM, 62 µs per point against 128 for the digits MLP's scores of 8 points × 1,797 samples, where the
    forward pass itself takes about 1 ms."""
    top = logits.amax(dim=-1, keepdim=True)   # NaN wherever a score is NaN
    shifted = logits - top
    label = targets.unsqueeze(-1).expand(*logits.shape[:-1], 1)
    # below the floor a class's exp would be subnormal, which a CPU computes and adds many times more slowly
    # (a sharp model's scores have many); floored, it is a normal number as small, which leaves the sum,
    # at least the exp(0) = 1 of the top class, as it was (see exp_floor)
    terms = torch.exp(shifted.clamp(min=exp_floor(logits.dtype)))
    losses = torch.log(terms.sum(dim=-1)) - shifted.gather(-1, label).squeeze(-1)
    classes = torch.arange(logits.shape[-1], device=logits.device)
    tied_before = ((logits == top) & (classes < targets.unsqueeze(-1))).any(dim=-1)
    right = (logits.gather(-1, label) == top).squeeze(-1) & ~tied_before
    return losses, right, torch.isnan(top.squeeze(-1))


def cross_entropy_terms_eagerly(logits: torch.Tensor, targets: torch.Tensor
                                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``cross_entropy_terms`` for torch's eager operations, which reduce a few classes along the last
    dimension slowly (the digits MLP, 8 points × 1,797 samples × 10 classes, trained: 110 µs per
    ``amax``, 105 per ``any``, 64 per ``==``): the scores are copied class by class, so each reduction
    runs over whole rows of samples, and the first maximum is found only where a tie is possible at all.

    The label's class is the first maximum if its score is the top and no earlier class reaches the top.
    A tie puts two exp(0) = 1 into the sum, so where the sum is below 2 the first test decides; where it
    is not (or is NaN), torch's argmax over those samples does.  Same numbers as ``cross_entropy_terms``
    to float rounding, the same counts exactly; a data-dependent branch, so not for torch.compile."""
    scores = logits.transpose(-1, -2).clone(memory_format=torch.contiguous_format)  # (..., C, B), a copy
    top = scores.amax(dim=-2, keepdim=True)                  # NaN wherever a score is NaN
    label = targets.expand(*scores.shape[:-2], 1, -1)
    picked = scores.gather(-2, label)
    right = (picked == top).squeeze(-2)
    shifted = scores.sub_(top)
    total = shifted.clamp_(min=exp_floor(scores.dtype)).exp_().sum(dim=-2)  # as in cross_entropy_terms
    losses = torch.log(total).sub_(picked.sub_(top).squeeze(-2))
    maybe_tied = right & ~(total < 2)
    if maybe_tied.any():
        index = maybe_tied.nonzero(as_tuple=True)
        right[index] = logits[index].argmax(dim=-1) == targets[index[-1]]
    return losses, right, torch.isnan(top.squeeze(-2))


# classes at most for cross_entropy_terms_by_class: its graph grows with each (digits and CIFAR-10 have 10; only
# 10 was measured).  It changes which files' arithmetic sweep.COMPILED_PASSES names: a new value is a new name.
CLASSES_ONE_BY_ONE = 16


def cross_entropy_terms_by_class(logits: torch.Tensor, targets: torch.Tensor
                                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``cross_entropy_terms`` for torch.compile when the scores are few (``CLASSES_ONE_BY_ONE``), written
    class by class as operations on a column of samples each, so inductor makes one kernel that runs along
    the samples, many to a vector register, instead of reducing each sample's few scores across one.  That
    pays when a class's scores lie side by side in memory, as ``compilation.classes_as_rows`` lays out the
    linear layer that makes them (a model whose scores come from anything else reads them strided):
    digits MLP, 8 points x 1,797 samples x 10 classes, 32 µs per point against 64 for
    ``cross_entropy_terms`` (114 on scores laid out sample by sample).

    The first maximum is the least class whose score equals the top, as argmax breaks ties; the exp of
    the gaps are added in the order of the classes, so the last bits differ from a reduction's."""
    columns = logits.unbind(-1)
    top = columns[0]
    for column in columns[1:]:
        top = torch.maximum(top, column)  # NaN wherever a score is NaN, as amax
    labels = targets.to(torch.int32)
    total = picked = None
    first = torch.full_like(labels, len(columns))  # no class: a NaN top equals none
    floor = exp_floor(logits.dtype)
    for c, column in enumerate(columns):
        term = torch.exp((column - top).clamp(min=floor))  # as in cross_entropy_terms
        total = term if total is None else total + term
        picked = torch.where(labels == c, column, column.new_zeros(()) if picked is None else picked)
    for c in reversed(range(len(columns))):
        first = torch.where(columns[c] == top, c, first)
    losses = torch.log(total) - (picked - top)
    return losses, first == labels, torch.isnan(top)


def exp_floor(dtype: torch.dtype) -> float:
    """The floor of ``cross_entropy_terms``' gaps: the least whole number whose exp is a normal float64
    (-708) for float64 scores, a normal float32 (-87) for any other.  A term so small changes a sum that
    holds 1 only through partial sums as small as itself, 2**24 times over (float32): not for scores of
    real models."""
    widest = torch.float64 if dtype == torch.float64 else torch.float32
    return float(math.ceil(math.log(torch.finfo(widest).tiny)))


def at_least_float32(output: torch.Tensor) -> torch.Tensor:
    """Outputs of a bfloat16 or float16 model, for the loss: a softmax in 8 bits of mantissa loses much."""
    return output.float() if output.is_floating_point() and output.element_size() < 4 else output


def check_labels(name: str, output: torch.Tensor, low: int, high: int) -> None:
    """Class labels from ``low`` to ``high`` must be scores the output has (for the built-in losses)."""
    if name not in BUILTIN:
        return
    classes = (output.shape[1] if name == "crossentropy" else output.shape[-1]) if output.dim() > 1 else 1
    if low < 0 or high >= classes:
        raise InputError(f"the model gives {classes} class score{'s' * (classes != 1)} per sample but the labels "
                         f"run from {low} to {high}: expected labels in 0..{classes - 1} (is num_classes right?)",
                         fields=("num_classes",))


def fingerprint(obj) -> str:
    """What a loss callable computes, as far as it can be told: code, constants, bound settings.

    Two lambdas, or one criterion class with other settings, must not share a
    surface file's identity, or a resumed run would mix their values.
    """
    digest = hashlib.sha256(f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"
                            .encode())
    if isinstance(obj, functools.partial):
        digest.update(fingerprint(obj.func).encode() + repr((obj.args, sorted(obj.keywords.items()))).encode())
    code = getattr(obj, "__code__", None)
    if code is not None:
        digest.update(code.co_code + repr(code.co_consts).encode() + repr(getattr(obj, "__defaults__", None)).encode())
        for cell in getattr(obj, "__closure__", None) or ():
            digest.update(repr(cell.cell_contents).encode())
    if isinstance(obj, torch.nn.Module) or not callable(getattr(obj, "__code__", None)):
        settings = {k: v for k, v in vars(obj).items() if isinstance(v, (int, float, str, bool, type(None)))} \
            if hasattr(obj, "__dict__") else {}
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
                raise InputError(f"loss_name {spec!r}: the class cannot be made without arguments ({describe(exc)}); "
                                 "expected a loss class such as torch.nn:CrossEntropyLoss or a function",
                                 fields=("loss_name",)) from None
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
