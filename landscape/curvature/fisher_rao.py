"""The Fisher–Rao norm (Liang, Poggio, Rakhlin and Stokes 2019): ‖θ‖²_fr = ⟨θ, I(θ) θ⟩.

I(θ) is the Fisher information, E[∇ℓ ∇ℓᵀ] over the inputs x of the data and the labels y the model
itself predicts (y ~ p_θ(·|x)), so ‖θ‖²_fr = E[⟨θ, ∇_θ ℓ(f_θ(x), y)⟩²].  The inner product is a
directional derivative along the weights themselves: with u = J_θ(x) θ, the change of the outputs when
every weight grows in proportion (one forward-mode product per batch, ``torch.func.jvp``),
⟨θ, ∇_θ ℓ⟩ = ⟨u, ∂ℓ/∂f⟩, and the expectation over y has a closed form:

- cross-entropy, p = softmax(f): Σ_c p_c (u_c − ⟨p, u⟩)², the variance of u under p;
- mean squared error over C outputs (a Gaussian of variance C/2 per output): (2/C) ‖u‖².

The *empirical* norm takes the data's own labels instead, E[⟨θ, ∇ℓ(f_θ(x), y_data)⟩²]; at a minimum
that fits the data it goes to 0 with the loss, where the model norm does not.  Both are reported; the
model norm is the measure.  A loss given as code has no per-sample form: both are then NaN, with a note.

Any function-preserving rescaling θ' = Dθ (D diagonal: a ReLU unit's weights times α, what reads it
divided by α) leaves ⟨θ, ∇ℓ⟩ unchanged, ⟨Dθ, D⁻¹∇ℓ⟩: the norm is invariant under neuron rescaling.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch.func import functional_call, jvp

DEFINITION = "‖θ‖_fr = √E_x E_{y~p_θ(·|x)} ⟨θ, ∇_θ ℓ(f_θ(x), y)⟩²"
CITATION = "Liang et al. 2019 (Fisher–Rao norm)"


@dataclass(frozen=True)
class FisherRao:
    value: float  # the model norm ‖θ‖_fr
    empirical: float  # the same with the data's labels
    samples: int
    note: str = ""
    definition: str = DEFINITION
    citation: str = CITATION

    def record(self) -> dict:
        return asdict(self)


def _squares(name: str, output: torch.Tensor, u: torch.Tensor, targets: torch.Tensor) -> tuple[float, float]:
    """Σ over the batch of the model's and the data's ⟨θ, ∇ℓ⟩², from outputs f and u = J θ."""
    out, u = output.reshape(len(output), -1).double(), u.reshape(len(u), -1).double()
    if name == "crossentropy":
        p = torch.softmax(out, dim=1)
        mean = (p * u).sum(dim=1, keepdim=True)
        model = (p * (u - mean) ** 2).sum()
        data = (mean[:, 0] - u.gather(1, targets.reshape(-1, 1).long())[:, 0]) ** 2
        return float(model), float(data.sum())
    classes = out.shape[1]
    if not targets.is_floating_point():
        targets = torch.nn.functional.one_hot(targets.long(), classes)
    residual = out - targets.reshape(out.shape).double()
    data = ((2.0 / classes) * (u * residual).sum(dim=1)) ** 2
    return float((2.0 / classes) * (u * u).sum()), float(data.sum())


def fisher_rao(hessian) -> FisherRao:
    """The Fisher–Rao norm of ``hessian``'s model at its weights over its samples (all ranks)."""
    samples = hessian.count
    if not hessian.loss.per_sample:
        return FisherRao(math.nan, math.nan, samples, "a loss given as code has no per-sample form")
    if hessian.loss.name == "crossentropy" and hessian.batches:
        out = functional_call(hessian.model, {**hessian.params, **hessian.fixed}, (hessian.batches[0][0][:1],))
        if out.dim() != 2:
            shape = tuple(out.shape[1:])
            return FisherRao(math.nan, math.nan, samples, f"outputs of shape {shape} are not class scores")
    totals = np.zeros(2)

    def outputs(params, x):
        return functional_call(hessian.model, {**params, **hessian.fixed}, (x,))

    with torch.no_grad():
        for x, y in hessian.batches:
            output, u = jvp(lambda p, x=x: outputs(p, x), (hessian.params,), (hessian.params,))
            totals += _squares(hessian.loss.name, output, u, y)
    hessian.reduce(totals)
    model, data = totals / samples
    return FisherRao(math.sqrt(model), math.sqrt(data), samples)


__all__ = ["FisherRao", "fisher_rao", "DEFINITION", "CITATION"]
