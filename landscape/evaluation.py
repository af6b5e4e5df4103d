"""Loss and accuracy of a model at one grid point ``origin + a*d1 + b*d2``.

The point's weights are always computed fresh from the origin, never by
walking from the previous point, so no rounding error accumulates and a point's
value does not depend on which rank computes it or in what order.  Nothing here
knows about MPI or files.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .data import Split
from .errors import EvaluationError, LandscapeError, UsageError, describe

LOSSES = ("crossentropy", "mse")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def quantity_names(splits: list[str], classification: bool) -> list[str]:
    metrics = ("loss", "acc") if classification else ("loss",)
    return [f"{split}_{metric}" for split in splits for metric in metrics]


def summed_loss(name: str, output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Sum over the batch of the per-sample loss (its mean is taken over the data set).

    ``mse`` averages over output units per sample, like ``nn.MSELoss`` does over a
    batch; integer class labels become one-hot targets, float targets are used as
    they are (regression).
    """
    if name == "crossentropy":
        return F.cross_entropy(output, targets, reduction="sum")
    if name == "mse":
        if not targets.is_floating_point():
            targets = F.one_hot(targets, output.shape[-1]).to(output.dtype)
        targets = targets.reshape(output.shape).to(output.dtype)
        per_sample_units = output[0].numel() if output.dim() > 1 else 1
        return F.mse_loss(output, targets, reduction="sum") / per_sample_units
    raise UsageError(f"--loss_name={name}: expected one of {', '.join(LOSSES)}")


class Evaluator:
    """Evaluates ``model`` at ``origin + a*dx + b*dy`` on fixed tensors of data.

    ``origin``, ``dx`` and ``dy`` are dicts keyed by the names of the tensors they
    move (parameters, or the state_dict for ``states`` directions).
    """

    def __init__(self, model: torch.nn.Module, origin: dict, dx: dict, dy: dict | None,
                 splits: dict[str, Split], loss_name: str, batch_size: int, dtype: str = "float32",
                 device: str = "cpu"):
        if loss_name not in LOSSES:
            raise UsageError(f"--loss_name={loss_name}: expected one of {', '.join(LOSSES)}")
        if batch_size < 1:
            raise UsageError(f"--batch_size={batch_size}: expected a positive number")
        if dtype not in DTYPES:
            raise UsageError(f"--dtype={dtype}: expected one of {', '.join(DTYPES)}")
        self.loss_name = loss_name
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
            self.splits[split_name] = (inputs, split.targets.to(device), split.is_classification)
        classification = all(c for _, _, c in self.splits.values())
        self.quantities = quantity_names(list(self.splits), classification)
        self.with_accuracy = classification

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
        for inputs, targets, classification in self.splits.values():
            total, correct = 0.0, 0
            for start in range(0, len(targets), self.batch_size):
                x = inputs[start:start + self.batch_size]
                y = targets[start:start + self.batch_size]
                output = self.model(x)
                total += float(summed_loss(self.loss_name, output, y))
                if classification:
                    correct += int((output.argmax(dim=-1) == y).sum())
            out.append(total / len(targets))
            if self.with_accuracy:
                out.append(100.0 * correct / len(targets))
        return np.asarray(out, dtype=np.float64)

    def __call__(self, a: float, b: float = 0.0) -> np.ndarray:
        self.place(a, b)
        try:
            return self.measure()
        except LandscapeError:
            raise
        except Exception as exc:  # noqa: BLE001 - user code: name the point it failed at
            raise EvaluationError(f"evaluating the model at (x={a:g}, y={b:g}) failed: {describe(exc)}") from exc
