"""Loss and accuracy of a model at one grid point ``origin + a*d1 + b*d2``.

The point's weights are always computed fresh from the origin, never by
walking from the previous point, so no rounding error accumulates and a point's
value does not depend on which rank computes it or in what order.  Nothing here
knows about MPI or files.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from . import batchnorm
from .data import Split
from .errors import EvaluationError, LandscapeError, UsageError, describe
from .losses import Loss

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def quantity_names(splits: list[str], classification: bool, stderr: bool = False) -> list[str]:
    metrics = ["loss", *(["loss_se"] if stderr else []), *(["acc"] if classification else [])]
    return [f"{split}_{metric}" for split in splits for metric in metrics]


def correct_predictions(output: torch.Tensor, targets: torch.Tensor) -> int | None:
    """Predictions equal to the label: classes along the last dim (``(B, C)``, ``(B, T, V)``) or,
    torch's convention for dense outputs, along dim 1 (``(B, C, H, W)``); None when the output has no
    class dimension to compare with (a single logit, say): accuracy is then NaN rather than wrong."""
    if output.shape[:-1] == targets.shape and output.shape[-1] > 1:
        return int((output.argmax(dim=-1) == targets).sum())
    if output.dim() >= 3 and output.shape[:1] + output.shape[2:] == targets.shape and output.shape[1] > 1:
        return int((output.argmax(dim=1) == targets).sum())
    return None


class Evaluator:
    """Evaluates ``model`` at ``origin + a*dx + b*dy`` on fixed tensors of data.

    ``origin``, ``dx`` and ``dy`` are dicts keyed by the names of the tensors they
    move (parameters, or the state_dict for ``states`` directions).  ``bn`` is the
    BatchNorm policy (see ``landscape.batchnorm``); ``stderr`` adds the standard
    error of each mean loss (built-in losses only).
    """

    def __init__(self, model: torch.nn.Module, origin: dict, dx: dict, dy: dict | None,
                 splits: dict[str, Split], loss, batch_size: int, dtype: str = "float32",
                 device: str = "cpu", bn: str = "eval", bn_batches: int = 10, stderr: bool = False):
        self.loss = loss if isinstance(loss, Loss) else Loss(loss)
        if batch_size < 1:
            raise UsageError(f"--batch_size={batch_size}: expected a positive number")
        if dtype not in DTYPES:
            raise UsageError(f"--dtype={dtype}: expected one of {', '.join(DTYPES)}")
        self.batch_size = batch_size
        torch_dtype = DTYPES[dtype]
        self.model = model.to(device=device, dtype=torch_dtype).eval()
        live = self.model.state_dict(keep_vars=True)
        # The live tensors each direction moves.  Origin and directions stay in float64: a
        # point's weights are rounded once, from the exact combination, into the model's dtype,
        # so (0, 0) is the trained model and coefficient 1 along model2 - model is model2.
        self.targets = {name: live[name] for name in dx}
        as_f64 = lambda d: {k: torch.as_tensor(v).to(device=device, dtype=torch.float64) for k, v in d.items()}
        self.origin = as_f64({k: origin[k] for k in dx})
        self.dx = as_f64(dx)
        self.dy = as_f64(dy) if dy is not None else None
        self.scratch = {k: torch.empty_like(v) for k, v in self.origin.items()}
        self.running_vars = {name for name in dx if name.endswith("running_var")}
        self.splits = {}
        for split_name, split in splits.items():
            inputs = split.inputs.to(device)
            if inputs.is_floating_point():
                inputs = inputs.to(torch_dtype)
            self.splits[split_name] = (inputs, split.targets.to(device))
        self.with_accuracy = all(s.is_classification for s in splits.values())
        self.stderr = stderr and self.loss.per_sample  # a callable's batch mean has no per-sample spread
        self.quantities = quantity_names(list(self.splits), self.with_accuracy, self.stderr)
        self.recalibrate = None
        if bn == "recalibrate":
            self.recalibrate = batchnorm.Recalibrator(self.model, self.splits["train"][0], batch_size, bn_batches)

    @torch.no_grad()
    def place(self, a: float, b: float) -> None:
        """Set the model's tensors to ``origin + a*dx + b*dy``."""
        for name, live in self.targets.items():
            point = torch.add(self.origin[name], self.dx[name], alpha=a, out=self.scratch[name])
            if self.dy is not None and b != 0.0:
                point.add_(self.dy[name], alpha=b)
            if name in self.running_vars:
                point.clamp_(min=0.0)  # a perturbed variance is never negative
            live.data.copy_(point)

    @torch.inference_mode()
    def measure(self) -> np.ndarray:
        """Quantities of the model as it is now, in the order of ``self.quantities``."""
        out = []
        for inputs, targets in self.splits.values():
            total, squares, correct = 0.0, 0.0, 0
            for start in range(0, len(targets), self.batch_size):
                x = inputs[start:start + self.batch_size]
                y = targets[start:start + self.batch_size]
                output = self.model(x)
                batch_sum, batch_squares = self.loss.total(output, y)
                total += batch_sum
                squares += batch_squares
                if self.with_accuracy and correct is not None:
                    right = correct_predictions(output, y)
                    correct = None if right is None else correct + right
            n = len(targets)
            mean = total / n
            out.append(mean)
            if self.stderr:  # sample standard deviation of the per-sample losses / sqrt(n)
                variance = max(squares - n * mean * mean, 0.0) / (n - 1) if n > 1 else float("nan")
                out.append(math.sqrt(variance / n))
            if self.with_accuracy:
                out.append(float("nan") if correct is None else 100.0 * correct / targets.numel())
        return np.asarray(out, dtype=np.float64)

    def __call__(self, a: float, b: float = 0.0) -> np.ndarray:
        self.place(a, b)
        try:
            if self.recalibrate is not None:
                self.recalibrate()
            return self.measure()
        except LandscapeError:
            raise
        except Exception as exc:  # noqa: BLE001 - user code: name the point it failed at
            raise EvaluationError(f"evaluating the model at (x={a:g}, y={b:g}) failed: {describe(exc)}") from exc
