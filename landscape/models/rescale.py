"""Dinh et al.'s (2017) function-preserving rescaling: the same network, other weights.

For a ReLU unit (or any positively homogeneous one, relu(αz) = α relu(z) for α > 0), multiplying its
incoming weights and bias by α and its outgoing weights by 1/α changes nothing the network computes,
while its Hessian changes by up to α² (λmax, the trace, Keskar's ε-sharpness move; adaptive sharpness,
relative flatness and the Fisher–Rao norm do not).  ``rescale`` does it for every unit of one layer:
``layer``'s weight rows and bias times α, ``following``'s weight columns (its input units) divided by α.
A measure that changes under it measures the parametrization, not the function: the study's rescaling
control runs every measure on rescaled networks and marks those.

Which layer follows which is not guessed from the graph: by default ``layer`` is the first weight
tensor of at least two dimensions and ``following`` the next one whose input size matches; the result is
checked by comparing the two networks' outputs on data (``same_function``), since a BatchNorm, a
non-homogeneous activation or a skip connection between them would break the identity.
"""

from __future__ import annotations

import math

import torch

from ..errors import ConfigError, InputError


def weight_layers(state: dict[str, torch.Tensor]) -> list[str]:
    """The modules with a weight of at least 2 dimensions (linear and convolution layers), in order."""
    return [name[: -len(".weight")] for name, t in state.items() if name.endswith(".weight") and t.dim() >= 2]


def pair(state: dict[str, torch.Tensor], layer: str | None = None) -> tuple[str, str]:
    """``(layer, following)``: the given (or first) layer and the next weight layer reading its units."""
    layers = weight_layers(state)
    if not layers:
        raise InputError("the checkpoint has no linear or convolution layer to rescale")
    if layer is None:
        layer = layers[0]
    if layer not in layers:
        raise ConfigError("layer", layer, f"a linear or convolution layer of the model ({', '.join(layers)})")
    units = state[f"{layer}.weight"].shape[0]
    for following in layers[layers.index(layer) + 1 :]:
        if state[f"{following}.weight"].shape[1] == units:
            return layer, following
    raise ConfigError("layer", layer, f"a layer whose {units} units a later layer reads (not the last)")


def rescale(state: dict[str, torch.Tensor], alpha: float, layer: str | None = None) -> dict[str, torch.Tensor]:
    """A copy of ``state`` with ``layer``'s units scaled by ``alpha`` (incoming × α, outgoing ÷ α)."""
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise ConfigError(
            "alpha", alpha, "a positive number (a ReLU commutes with positive factors only)", literal=True
        )
    layer, following = pair(state, layer)
    out = {k: v.clone() for k, v in state.items()}
    with torch.no_grad():
        out[f"{layer}.weight"].mul_(alpha)
        if f"{layer}.bias" in out:
            out[f"{layer}.bias"].mul_(alpha)
        out[f"{following}.weight"].div_(alpha)
    for name in (f"{layer}.weight", f"{layer}.bias", f"{following}.weight"):
        if name in out and not _representable(state[name], out[name]):
            raise ConfigError(
                "alpha",
                alpha,
                f"a factor that keeps {name} finite and its non-zero entries non-zero in {out[name].dtype}",
            )
    return out


def _representable(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Whether a rescaled tensor is still the rescaled tensor: finite, and zero only where it was zero (a
    factor like 1e308 overflows to inf, 1e-308 underflows to 0, and the function is no longer the same)."""
    return bool(torch.isfinite(after).all()) and bool(((after == 0) == (before == 0)).all())


@torch.no_grad()
def same_function(a: torch.nn.Module, b: torch.nn.Module, inputs: torch.Tensor, rtol: float = 1e-4) -> float:
    """The largest difference of the two networks' outputs on ``inputs``, relative to the outputs' scale;
    raises when it is above ``rtol`` (the rescaling did not preserve the function)."""
    a.eval()
    b.eval()
    first, second = a(inputs), b(inputs)
    difference = float((first - second).abs().max() / max(float(first.abs().max()), 1e-30))
    if not difference <= rtol:  # NaN too
        raise InputError(
            f"the rescaled network computes another function (outputs differ by {difference:.2g} of their scale): "
            "a BatchNorm, a non-ReLU activation or a skip connection sits between the layers; choose another --layer"
        )
    return difference


__all__ = ["rescale", "pair", "weight_layers", "same_function"]
