"""Relative flatness (Petzka et al. 2021): curvature weighted by the weights, which rescaling cannot fool.

For a parameter tensor W with rows W_s (output units: a neuron's incoming weights, a filter; a bias or
a BatchNorm scale is a column of single entries), Petzka et al.'s measure is

    κ(W) = Σ_{s,s'} ⟨W_s, W_s'⟩ · Tr H_{s,s'},    Tr H_{s,s'} = Σ_j ∂²f / ∂W_sj ∂W_s'j,

with f the mean loss.  Multiplying unit s's row by α_s (and dividing the weights that read it by α_s:
the same function, Dinh et al. 2017) multiplies ⟨W_s, W_s'⟩ by α_s α_s' and divides H_{s,s'} by α_s α_s',
so a tensor's κ is unchanged by rescaling its own units.  The sum over all tensors is unchanged by a
layer-wise rescaling (layer k times α, layer k + 1 divided by α: the next tensor's G shrinks by α² as its
H grows by α²), where λmax and tr H move by up to α².  Units of one layer rescaled by *different* factors
change the next tensor's κ (its columns, not its rows, move): the invariance is the paper's, per tensor
and its own units.  ``value`` is the sum over every parameter tensor; ``by_layer`` sums a module's.

Estimated as a trace: with G = W Wᵀ = L Lᵀ (L = W, or G's square root when W has more columns than
rows), κ(W) = tr(H_WW (G ⊗ I)) = E[vᵀ H v] for v = L Z, Z a Rademacher matrix; one product of the
network per sample serves every tensor at once (independent Z's: the cross terms average to 0).  A
1-column tensor (a bias) needs no sampling: v = ±W and vᵀ H v is exact.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from . import estimate

DEFINITION = "Σ over parameter tensors W of Σ_{s,s'} ⟨W_s, W_s'⟩ Tr H_{s,s'} (rows W_s: output units)"
CITATION = "Petzka et al. 2021 (relative flatness)"


@dataclass(frozen=True)
class RelativeFlatness:
    value: float  # κ summed over every parameter tensor
    stderr: float  # over the samples
    samples: int
    products: int
    by_layer: dict[str, tuple[float, float]]  # module -> (κ summed over its tensors, standard error)
    definition: str = DEFINITION
    citation: str = CITATION

    def record(self) -> dict:
        out = asdict(self)
        out["by_layer"] = {k: {"value": v, "stderr": e} for k, (v, e) in self.by_layer.items()}
        return out


def _factor(w: np.ndarray) -> np.ndarray:
    """L with L Lᵀ = W Wᵀ, as few columns as possible (W: rows by the rest)."""
    rows, cols = w.shape
    if cols <= rows:
        return w
    values, vectors = np.linalg.eigh(w @ w.T)
    return (vectors * np.sqrt(np.clip(values, 0, None))) @ vectors.T


def relative_flatness(hessian, samples: int = 20, seed: int = 0) -> RelativeFlatness:
    """κ of ``hessian``'s mean loss at its weights, from ``samples`` products."""
    if samples < 2:
        raise ValueError(f"samples={samples}: expected at least 2 (a standard error needs two)")
    flat = hessian.flat_params()
    offsets = np.concatenate([[0], np.cumsum(hessian.sizes)]).astype(int)
    tensors = []  # (module, slice, L, columns)
    for i, (name, shape) in enumerate(zip(hessian.names, hessian.shapes)):
        rows = shape[0] if len(shape) else 1
        w = flat[offsets[i] : offsets[i + 1]].reshape(rows, -1)
        tensors.append((name.rpartition(".")[0], slice(offsets[i], offsets[i + 1]), _factor(w), w.shape[1]))
    rng = np.random.default_rng(seed)
    draws = np.zeros((samples, len(tensors)))
    start = hessian.products
    for k in range(samples):
        v = np.zeros(hessian.dim)
        for _, where, factor, cols in tensors:
            z = rng.integers(0, 2, (factor.shape[1], cols)).astype(np.float64) * 2 - 1
            v[where] = (factor @ z).reshape(-1)
        product = hessian.matvec(v)
        draws[k] = [float(v[where] @ product[where]) for _, where, _, _ in tensors]
    modules: dict[str, list[int]] = {}
    for i, (module, *_) in enumerate(tensors):
        modules.setdefault(module, []).append(i)

    def summary(columns: list[int]) -> tuple[float, float]:
        total = draws[:, columns].sum(axis=1)
        return float(total.mean()), estimate.stderr(total)

    value, stderr = summary(list(range(len(tensors))))
    by_layer = {module: summary(columns) for module, columns in modules.items()}
    return RelativeFlatness(value, stderr, samples, hessian.products - start, by_layer)


__all__ = ["RelativeFlatness", "relative_flatness", "DEFINITION", "CITATION"]
