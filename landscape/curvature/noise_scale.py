"""The gradient noise scale B_simple = tr Σ / ‖G‖² (McCandlish, Kaplan, Amodei et al. 2018).

G is the gradient of the mean loss over the data, Σ the covariance of the per-sample gradients g_i
around it.  A mini-batch of B samples estimates G with noise of total variance tr Σ / B; B_simple is
the batch size at which that noise equals ‖G‖²: batches much smaller are dominated by noise (each step
can use a larger batch almost for free), batches much larger waste samples on a gradient already known.
It says which batch sizes are "large" for this network and data, beside the sharpness measures.

Both parts are exact sums over the data, not estimates from two batch sizes: per-sample gradients by
``torch.func.vmap`` over ``torch.func.grad`` (a loss given as code, which may not batch, one sample at a
time), accumulated in float64 as Σ g_i and Σ ‖g_i‖², then

    ‖G‖² = ‖Σ g_i / n‖²,    tr Σ = (Σ ‖g_i‖² − n ‖G‖²) / (n − 1).

At an exact minimum G = 0 and B_simple is unbounded: there every batch size is "small".  Along training
(where McCandlish et al. measure it) it grows as the loss falls.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch.func import functional_call, grad, vmap

DEFINITION = "B_simple = tr Σ / ‖G‖² (Σ: covariance of per-sample gradients, G: their mean)"
CITATION = "McCandlish et al. 2018 (gradient noise scale)"
CHUNK_ELEMENTS = 1 << 24  # per-sample gradients held at once: samples × parameters


@dataclass(frozen=True)
class NoiseScale:
    value: float  # B_simple
    trace_sigma: float  # tr Σ
    gradient_norm2: float  # ‖G‖²
    samples: int
    method: str  # vmap or loop
    definition: str = DEFINITION
    citation: str = CITATION

    def record(self) -> dict:
        return asdict(self)


def noise_scale(hessian) -> NoiseScale:
    """B_simple of ``hessian``'s mean loss at its weights, over its samples (all ranks)."""
    params = hessian.params

    def sample_loss(p, x, y):
        output = functional_call(hessian.model, {**p, **hessian.fixed}, (x.unsqueeze(0),))
        return hessian.loss.total(output, y.unsqueeze(0))[0]

    per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0)) if hessian.loss.per_sample else None
    chunk = max(1, CHUNK_ELEMENTS // max(hessian.dim, 1))
    total, squares, count = np.zeros(hessian.dim), 0.0, 0
    for inputs, targets in hessian.batches:
        for start in range(0, len(targets), chunk):
            x, y = inputs[start : start + chunk], targets[start : start + chunk]
            if per_sample is not None:
                grads = per_sample(params, x, y)
            else:
                ones = [grad(sample_loss)(params, xi, yi) for xi, yi in zip(x, y)]
                grads = {n: torch.stack([g[n] for g in ones]) for n in hessian.names}
            flat = torch.cat([grads[n].reshape(len(y), -1) for n in hessian.names], dim=1).double()
            total += flat.sum(dim=0).cpu().numpy()
            squares += float((flat * flat).sum())
            count += len(y)
    packed = np.concatenate([[count, squares], total])
    hessian.reduce(packed)
    n, squares, total = int(packed[0]), float(packed[1]), packed[2:]
    if n < 2:
        raise ValueError(f"{n} sample(s): the gradient noise scale needs at least 2")
    mean = total / n
    norm2 = float(mean @ mean)
    trace = (squares - n * norm2) / (n - 1)
    value = trace / norm2 if norm2 > 0 else math.inf
    return NoiseScale(value, trace, norm2, n, "vmap" if per_sample is not None else "loop")


__all__ = ["NoiseScale", "noise_scale", "DEFINITION", "CITATION"]
