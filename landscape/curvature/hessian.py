"""Hessian-vector products of a model's mean loss over a whole data set, exactly.

The loss is the mean over *all* samples of the per-sample loss (a user's loss callable: its batch mean
weighted by the batch size), so a product is the sum over batches of each batch's product, divided
by the number of samples: the Hessian of the same function a loss surface plots at its centre, not
of one mini-batch.  Each batch's product is a double backward (Pearlmutter's trick: the gradient of
``g(w) · v``) through ``functional_call``, with less overhead per product than ``torch.func.jvp`` of
``torch.func.grad`` (forward-over-reverse) and the same values.  BatchNorm layers use their running
statistics (the model in eval mode), as at a grid point of a surface: the function differentiated is the
one evaluated.

Vectors are flat float64 numpy arrays over the parameters that require gradients, in
``named_parameters`` order: what ``scipy.sparse.linalg`` expects.  Data parallelism is applied from
outside: ``reduce`` (a sum over ranks of a float64 array, in place) lets each rank hold a shard of the
samples; nothing here knows about ranks.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from ..data import Samples
from ..losses import Loss

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _twice_differentiable_attention():
    """Attention through its plain-math kernel: the fused (flash, memory-efficient) kernels have no
    second derivative, and a product differentiates twice.  The values are the same function."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # torch < 2.3: no fused kernels to avoid through this switch
        from contextlib import nullcontext

        return nullcontext()
    return sdpa_kernel(SDPBackend.MATH)


class Hessian:
    """``H v`` of the mean loss of ``model`` over ``samples``; ``products`` counts the calls.

    ``samples`` may be this rank's shard: ``count`` is then the number of samples over all ranks and
    ``reduce`` sums a numpy array over ranks in place.
    """

    def __init__(
        self,
        model: nn.Module,
        samples: Samples,
        loss: Loss | str = "crossentropy",
        batch_size: int = 1024,
        dtype: str = "float64",
        device: str = "cpu",
        count: int | None = None,
        reduce: Callable[[np.ndarray], None] | None = None,
        state: dict | None = None,
        copy_model: bool = True,
    ):
        """``state``: tensors by name that replace the model's parameters or buffers (a grid point's
        weights); ``copy_model=False`` uses ``model`` as it is (already on ``device`` in ``dtype``, in eval
        mode, and not changed here: the surface kernel's private copy)."""
        if dtype not in DTYPES:
            raise ValueError(f"dtype={dtype}: expected float32 or float64")
        self.dtype, self.device = DTYPES[dtype], torch.device(device)
        self.model = (copy.deepcopy(model).to(self.device, self.dtype) if copy_model else model).eval()
        self.loss = loss if isinstance(loss, Loss) else Loss(loss)
        self.names = [n for n, p in self.model.named_parameters() if p.requires_grad]
        self.params = {n: p.detach() for n, p in self.model.named_parameters() if p.requires_grad}
        self.fixed = {n: b for n, b in self.model.named_buffers()}
        self.fixed.update({n: p.detach() for n, p in self.model.named_parameters() if not p.requires_grad})
        for name, value in (state or {}).items():
            target = self.params if name in self.params else self.fixed
            target[name] = value.detach().to(self.device, self.dtype if value.is_floating_point() else None).clone()
        self.shapes = [self.params[n].shape for n in self.names]
        self.sizes = [self.params[n].numel() for n in self.names]
        self.dim = int(sum(self.sizes))
        inputs = samples.inputs.to(self.device, self.dtype if samples.inputs.is_floating_point() else None)
        targets = samples.targets.to(self.device)
        if targets.is_floating_point():
            targets = targets.to(self.dtype)
        self.batch_size = batch_size
        self.batches = [
            (inputs[i : i + batch_size], targets[i : i + batch_size]) for i in range(0, len(targets), batch_size)
        ]
        self.count = count if count is not None else len(targets)
        self.reduce = reduce or (lambda array: None)
        self.products = 0

    def _batch_loss(self, params: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        output = functional_call(self.model, {**params, **self.fixed}, (x,))
        return self.loss.total(output, y)[0] / self.count

    def _unflat(self, v: np.ndarray) -> dict[str, torch.Tensor]:
        flat = torch.as_tensor(np.ascontiguousarray(v), dtype=self.dtype, device=self.device)
        return {n: t.view(s) for n, t, s in zip(self.names, torch.split(flat, self.sizes), self.shapes)}

    def _flat(self, tensors: dict[str, torch.Tensor]) -> np.ndarray:
        return torch.cat([tensors[n].reshape(-1) for n in self.names]).to("cpu", torch.float64).numpy()

    def flat_params(self) -> np.ndarray:
        """The parameters as one float64 vector (the order of every flat vector here)."""
        return self._flat(self.params)

    def loss_and_gradient(self, flat: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """The mean loss and its gradient (flat) over all samples, at the parameters or at ``flat``."""
        params = self.params if flat is None else self._unflat(flat)
        total, gradient = 0.0, None
        for x, y in self.batches:
            g, value = torch.func.grad_and_value(self._batch_loss)(params, x, y)
            total += float(value)
            flat = self._flat(g)
            gradient = flat if gradient is None else gradient + flat
        gradient = gradient if gradient is not None else np.zeros(self.dim)
        packed = np.concatenate([[total], gradient])
        self.reduce(packed)
        return float(packed[0]), packed[1:]

    @torch.no_grad()
    def mean_loss(self, flat: np.ndarray | None = None) -> float:
        """The mean loss over all samples (all ranks), at the parameters or at ``flat``: no gradient."""
        params = self.params if flat is None else self._unflat(flat)
        total = np.array([sum(float(self._batch_loss(params, x, y)) for x, y in self.batches)])
        self.reduce(total)
        return float(total[0])

    @torch.no_grad()
    def error(self, flat: np.ndarray | None = None) -> float:
        """The 0-1 error in percent over all samples (NaN without class labels), at ``flat``."""
        params = self.params if flat is None else self._unflat(flat)
        wrong = np.zeros(2)
        for x, y in self.batches:
            if y.is_floating_point():
                return math.nan
            output = functional_call(self.model, {**params, **self.fixed}, (x,))
            wrong += [float((output.argmax(dim=-1) != y).sum()), len(y)]
        self.reduce(wrong)
        return 100.0 * wrong[0] / wrong[1] if wrong[1] else math.nan

    def subsets(self, m: int) -> list[Hessian]:
        """This rank's samples in consecutive batches of ``m`` (a last batch of fewer left out), each as a
        Hessian of its own mean loss, on this rank alone (no ``reduce``)."""
        inputs = torch.cat([x for x, _ in self.batches]) if self.batches else None
        targets = torch.cat([y for _, y in self.batches]) if self.batches else None
        parts = []
        for start in range(0, (len(targets) if targets is not None else 0) - m + 1, m):
            part = copy.copy(self)
            x, y = inputs[start : start + m], targets[start : start + m]
            part.batches = [
                (x[i : i + self.batch_size], y[i : i + self.batch_size]) for i in range(0, m, self.batch_size)
            ]
            part.count, part.reduce, part.products = m, (lambda array: None), 0
            parts.append(part)
        return parts

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``H v`` over all samples (all ranks), as a flat float64 array."""
        tangent = self._unflat(np.asarray(v, dtype=np.float64).reshape(-1))
        leaves = {n: p.clone().requires_grad_(True) for n, p in self.params.items()}
        order = [leaves[n] for n in self.names]
        out = np.zeros(self.dim)
        with torch.enable_grad(), _twice_differentiable_attention():
            for x, y in self.batches:
                gradient = torch.autograd.grad(self._batch_loss(leaves, x, y), order, create_graph=True)
                directional = sum((g * tangent[n]).sum() for g, n in zip(gradient, self.names))
                product = torch.autograd.grad(directional, order, allow_unused=True)
                out += self._flat(
                    {n: (p if p is not None else torch.zeros_like(leaves[n])) for n, p in zip(self.names, product)}
                )
        self.reduce(out)
        self.products += 1
        return out

    def operator(self):
        """The Hessian as a ``scipy.sparse.linalg.LinearOperator`` (symmetric, float64)."""
        from scipy.sparse.linalg import LinearOperator

        return LinearOperator((self.dim, self.dim), matvec=self.matvec, rmatvec=self.matvec, dtype=np.float64)


__all__ = ["Hessian", "DTYPES"]
