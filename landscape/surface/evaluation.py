"""The evaluation kernel: quantities of a model at grid points ``origin + a*dx + b*dy``.

``Evaluator.evaluate(points)`` maps an ``(n, 2)`` array of coefficients to an
``(n, q)`` array of values (``Evaluator.quantities``).  It is pure: each point's
weights are computed fresh from the origin, never by walking from the previous
point, and go into the model through ``torch.func.functional_call``, so no
rounding error accumulates, nothing is left behind in the model, and a point's
value does not depend on which rank computes it or in what order.  Nothing here
knows about MPI or files.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from ..data import Samples
from ..errors import ConfigError, EvaluationError, LandscapeError, describe
from ..plugins import is_plugin
from . import batchnorm
from .losses import BUILTIN as BUILTIN_LOSSES
from .losses import Loss, check_labels
from .quantities import Quantity, forward_quantities

DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class EvaluationConfig:
    """How a point is evaluated: loss, batch size, precision and BatchNorm statistics."""

    loss_name: str = "crossentropy"
    batch_size: int = 128
    dtype: str = "float32"
    bn: str | None = None     # eval | states | recalibrate; None: states with states directions, else eval
    bn_batches: int = 10

    def __post_init__(self):
        if not is_plugin(self.loss_name) and self.loss_name not in BUILTIN_LOSSES:
            raise ConfigError("loss_name", self.loss_name, f"one of {', '.join(BUILTIN_LOSSES)} "
                              "or package.module:callable")
        for name in ("batch_size", "bn_batches"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(name, value, "a positive whole number", literal=True)
        if self.dtype not in DTYPES:
            raise ConfigError("dtype", self.dtype, f"one of {', '.join(DTYPES)}")
        batchnorm.resolve(self.bn, None)


def correct_predictions(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
    """Predictions equal to the label, counted on the output's device: classes along the last dim
    (``(B, C)``, ``(B, T, V)``) or, torch's convention for dense outputs, along dim 1 (``(B, C, H, W)``).
    None when the output has no class dimension to compare with (a single logit, say): accuracy is
    then NaN rather than wrong; so it is when the output holds NaN (see ``_Sweep``)."""
    if output.shape[:-1] == targets.shape and output.shape[-1] > 1:
        return (output.argmax(dim=-1) == targets).sum()
    if output.dim() >= 3 and output.shape[:1] + output.shape[2:] == targets.shape and output.shape[1] > 1:
        return (output.argmax(dim=1) == targets).sum()
    return None


class _Sweep(nn.Module):
    """One pass of the model over every evaluation set, in fixed batches: per set the loss sum,
    the sum of squared per-sample losses, the count of correct predictions (NaN when an output
    held NaN, whose argmax means nothing, or has no class dimension), all as one float64 tensor
    ``(sets, 3)`` on the device: a point's results come back in one transfer."""

    def __init__(self, model: nn.Module, data: dict[str, tuple[torch.Tensor, torch.Tensor]], loss: Loss,
                 batch_size: int, with_accuracy: bool):
        super().__init__()
        self.model = model
        self.data, self.loss, self.batch_size, self.with_accuracy = data, loss, batch_size, with_accuracy

    def forward(self) -> torch.Tensor:
        sums = []
        for inputs, targets in self.data.values():
            zero = torch.zeros((), dtype=torch.float64, device=targets.device)
            total, squares, correct, comparable, nan = zero, zero, zero, True, torch.zeros((), dtype=torch.bool,
                                                                                           device=targets.device)
            for start in range(0, len(targets), self.batch_size):
                x = inputs[start:start + self.batch_size]
                y = targets[start:start + self.batch_size]
                output = self.model(x)
                batch_sum, batch_squares = self.loss.total(output, y)
                total = total + batch_sum
                squares = squares + batch_squares
                if self.with_accuracy and comparable:
                    right = correct_predictions(output, y)
                    comparable = right is not None
                    if comparable:
                        correct = correct + right.to(torch.float64)
                        nan = nan | torch.isnan(output).any()
            if not comparable:
                correct = torch.full((), float("nan"), dtype=torch.float64, device=targets.device)
            sums.append(torch.stack([total, squares, torch.where(nan, torch.nan, correct)]))
        return torch.stack(sums)


class Evaluator:
    """The quantities of ``model`` at ``origin + a*dx + b*dy`` on fixed tensors of data.

    ``origin`` and the directions are dicts keyed by the names of the tensors they
    move (parameters, or the state_dict for ``states`` directions), kept in float64:
    a point's weights are rounded once, from the exact combination, into the
    model's dtype, so (0, 0) is the trained model and coefficient 1 along
    model2 - model is model2.  ``bn`` is the resolved BatchNorm policy
    (``surface.batchnorm``); ``stderr`` adds the standard error of each mean loss
    (built-in losses only).  The model is copied; the caller's is never changed.
    """

    def __init__(self, model: nn.Module, origin: dict, dx: dict, dy: dict | None, data: dict[str, Samples],
                 loss, cfg: EvaluationConfig = EvaluationConfig(), bn: str = "eval", stderr: bool = False,
                 device: str = "cpu"):
        self.loss = loss if isinstance(loss, Loss) else Loss(loss)
        self.cfg = cfg
        self.dtype = DTYPES[cfg.dtype]
        self.device = torch.device(device)
        self.model = copy.deepcopy(model).to(device=device, dtype=self.dtype).eval()
        as_f64 = lambda d: {k: torch.as_tensor(v).to(device=device, dtype=torch.float64) for k, v in d.items()}
        self.origin = as_f64({k: origin[k] for k in dx})
        self.dx = as_f64(dx)
        self.dy = as_f64(dy) if dy is not None else None
        self.running_vars = {name for name in dx if name.endswith("running_var")}
        tensors = {}
        for name, samples in data.items():
            inputs = samples.inputs.to(device)
            tensors[name] = (inputs.to(self.dtype) if inputs.is_floating_point() else inputs, samples.targets.to(device))
        with_accuracy = all(s.is_classification for s in data.values())
        self.stderr = stderr and self.loss.per_sample  # a callable's batch mean has no per-sample spread
        self.quantities: list[Quantity] = forward_quantities(list(data), with_accuracy, self.stderr)
        self.counts = {name: samples.targets.numel() for name, samples in data.items()}
        self.label_range = {name: (int(s.targets.min()), int(s.targets.max())) for name, s in data.items()
                            if s.is_classification and s.targets.numel()}
        self.sizes = {name: len(samples) for name, samples in data.items()}
        self.sweep = _Sweep(self.model, tensors, self.loss, cfg.batch_size, with_accuracy)
        self.recalibrator = (batchnorm.Recalibrator(self.model, tensors["train"][0], cfg.batch_size, cfg.bn_batches)
                             if bn == "recalibrate" else None)

    @property
    def names(self) -> list[str]:
        return [q.name for q in self.quantities]

    @torch.no_grad()
    def weights(self, a: float, b: float) -> dict[str, torch.Tensor]:
        """``origin + a*dx + b*dy`` in float64, rounded once into the model's dtype."""
        out = {}
        for name, origin in self.origin.items():
            point = torch.add(origin, self.dx[name], alpha=a)
            if self.dy is not None and b != 0.0:
                point.add_(self.dy[name], alpha=b)
            if name in self.running_vars:
                point.clamp_(min=0.0)  # a perturbed variance is never negative
            out[name] = point.to(self.dtype)
        return out

    @torch.inference_mode()
    def _values(self, a: float, b: float) -> np.ndarray:
        tensors = self.weights(a, b)
        if self.recalibrator is not None:
            forward = lambda batch, stats: functional_call(self.model, {**tensors, **stats}, (batch,))
            tensors = {**tensors, **self.recalibrator.statistics(forward)}
        sums = functional_call(self.sweep, {f"model.{k}": v for k, v in tensors.items()}, ()).cpu().tolist()
        out = []
        for (name, n), (total, squares, correct) in zip(self.sizes.items(), sums):
            mean = total / n
            out.append(mean)
            if self.stderr:  # sample standard deviation of the per-sample losses / sqrt(n)
                variance = max(squares - n * mean * mean, 0.0) / (n - 1) if n > 1 else float("nan")
                out.append(math.sqrt(variance / n))
            if self.sweep.with_accuracy:
                out.append(100.0 * correct / self.counts[name])  # NaN stays NaN
        return np.asarray(out, dtype=np.float64)

    @torch.inference_mode()
    def probe(self) -> None:
        """One forward pass of a few samples of each data set at the centre, through the loss: a model
        that does not fit its data (its output shape, the number of classes) is reported before any
        file is made, not at the first grid point."""
        weights = self.weights(0.0, 0.0)
        few = {name: (inputs[:2], targets[:2]) for name, (inputs, targets) in self.sweep.data.items()}
        probe = _Sweep(self.model, few, self.loss, self.cfg.batch_size, self.sweep.with_accuracy)
        try:
            for name, (inputs, targets) in few.items():
                if not targets.is_floating_point():  # the labels of the whole set against the model's classes
                    output = functional_call(self.model, weights, (inputs,))
                    check_labels(self.loss.name, output, *self.label_range[name])
            functional_call(probe, {f"model.{k}": v for k, v in weights.items()}, ())
        except LandscapeError:
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code
            raise EvaluationError(f"the model cannot be evaluated on the data at the centre: {describe(exc)}") from None

    def evaluate(self, points: np.ndarray) -> np.ndarray:
        """Values ``(n, q)`` at the ``(n, 2)`` coefficients ``points``, one row per point."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        out = np.empty((len(points), len(self.quantities)))
        for row, (a, b) in enumerate(points):
            try:
                out[row] = self._values(float(a), float(b))
            except LandscapeError:
                raise
            except SystemExit as exc:  # a plug-in's sys.exit must neither end the job nor look like success
                raise EvaluationError(f"evaluating the model at (x={a:g}, y={b:g}) failed: the model or loss "
                                      f"called sys.exit({exc.code!r})") from None
            except Exception as exc:  # noqa: BLE001 - user code: name the point it failed at
                raise EvaluationError(f"evaluating the model at (x={a:g}, y={b:g}) failed: {describe(exc)}") from exc
        return out

    def __call__(self, a: float, b: float = 0.0) -> np.ndarray:
        """The values at one point ``(a, b)``."""
        return self.evaluate(np.array([[a, b]]))[0]
