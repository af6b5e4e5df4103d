"""Curvature layer by layer: the top eigenvalue and the trace of each layer's diagonal block of the Hessian.

A layer is a module's own parameters (``0.weight`` and ``0.bias`` are layer ``0``); its block H_LL is
the Hessian of the mean loss with every other parameter held fixed.  Its product is a whole-network
product of a vector that is zero outside the layer, read back on the layer: one product of the network
per block product, and the block's extreme eigenvalues by the same Lanczos as the whole Hessian's
(``eigen``).  The traces of all blocks come from one set of Hutchinson samples: for a Rademacher vector z
over all parameters, E[z_L · (H z)_L] = tr H_LL, the cross terms of independent signs averaging to 0.

Why per layer: λmax of the whole network says how sharp, not where; a function-preserving rescaling
(layer k times α, layer k + 1 divided by α; Dinh et al. 2017) moves curvature from one layer to the
other (H_kk / α², H_(k+1)(k+1) · α²), which the blocks show and the whole network's λmax hides.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from . import estimate
from .eigen import extreme


@dataclass(frozen=True)
class Layer:
    """A module's parameters that require gradients, and where they sit in the flat parameter vector."""

    name: str  # the module's path ("" for parameters of the model itself)
    parameters: tuple[str, ...]
    slices: tuple[slice, ...]

    @property
    def size(self) -> int:
        return sum(s.stop - s.start for s in self.slices)

    def take(self, flat: np.ndarray) -> np.ndarray:
        """This layer's part of a flat vector over all parameters."""
        return np.concatenate([flat[s] for s in self.slices])

    def put(self, part: np.ndarray, dim: int) -> np.ndarray:
        """A flat vector over all ``dim`` parameters: ``part`` on this layer, 0 elsewhere."""
        out, start = np.zeros(dim), 0
        for s in self.slices:
            out[s] = part[start : start + s.stop - s.start]
            start += s.stop - s.start
        return out


def split(hessian) -> list[Layer]:
    """The layers of ``hessian``'s parameters, in the order of their first parameter."""
    offsets = np.concatenate([[0], np.cumsum(hessian.sizes)])
    grouped: dict[str, list[tuple[str, slice]]] = {}
    for i, name in enumerate(hessian.names):
        module = name.rpartition(".")[0]
        grouped.setdefault(module, []).append((name, slice(int(offsets[i]), int(offsets[i + 1]))))
    return [Layer(m, tuple(n for n, _ in parts), tuple(s for _, s in parts)) for m, parts in grouped.items()]


class Block:
    """The diagonal block H_LL of ``hessian`` for ``layer``, with the interface ``eigen`` uses."""

    def __init__(self, hessian, layer: Layer):
        self.hessian, self.layer, self.dim = hessian, layer, layer.size

    @property
    def products(self) -> int:  # whole-network products: what the block costs
        return self.hessian.products

    def matvec(self, v: np.ndarray) -> np.ndarray:
        return self.layer.take(self.hessian.matvec(self.layer.put(np.asarray(v, dtype=np.float64), self.hessian.dim)))

    def operator(self):
        from scipy.sparse.linalg import LinearOperator

        return LinearOperator((self.dim, self.dim), matvec=self.matvec, rmatvec=self.matvec, dtype=np.float64)


@dataclass(frozen=True)
class LayerCurvature:
    layer: str
    parameters: int  # how many
    weight_norm: float  # ‖w_L‖₂
    lambda_max: float  # the top eigenvalue of H_LL
    residual: float  # its relative residual |H v − λ v| / |λ|
    converged: bool
    trace: float  # tr H_LL by Hutchinson
    trace_stderr: float

    def record(self) -> dict:
        return asdict(self)


def traces(hessian, layers: list[Layer], samples: int = 20, seed: int = 0) -> list[tuple[float, float]]:
    """(tr H_LL, its standard error) for every layer, from ``samples`` shared Rademacher vectors."""
    if samples < 2:
        raise ValueError(f"samples={samples}: expected at least 2 (a standard error needs two)")
    rng = np.random.default_rng(seed)
    draws = np.zeros((samples, len(layers)))
    for i in range(samples):
        z = rng.integers(0, 2, hessian.dim).astype(np.float64) * 2 - 1
        product = hessian.matvec(z)
        draws[i] = [float(layer.take(z) @ layer.take(product)) for layer in layers]
    return [(float(d.mean()), estimate.stderr(d)) for d in draws.T]


def per_layer(hessian, samples: int = 20, tol: float = 1e-3, seed: int = 0) -> list[LayerCurvature]:
    """λmax and trace of every layer's diagonal block (``samples`` Hutchinson vectors shared by all)."""
    layers = split(hessian)
    weights = hessian.flat_params()
    out = []
    for layer, (trace, stderr) in zip(layers, traces(hessian, layers, samples, seed)):
        block = Block(hessian, layer)
        if layer.size == 1:  # a 1×1 block is its own eigenvalue
            top, residual, converged = float(block.matvec(np.ones(1))[0]), 0.0, True
        else:
            found = extreme(block, k=1, end="top", tol=tol, seed=seed)
            top, residual, converged = found.values[0], found.residuals[0], found.converged
        norm = float(np.linalg.norm(layer.take(weights)))
        out.append(LayerCurvature(layer.name, layer.size, norm, top, residual, converged, trace, stderr))
    return out


__all__ = ["Layer", "split", "Block", "LayerCurvature", "traces", "per_layer"]
