"""Directions in weight space: random Gaussian, normalized like the weights, or towards another model.

Filter normalization (Li et al. 2018, Sec. 4): for every filter j of layer i — a
convolution output channel, or one output row of a linear layer —
``d_ij <- d_ij * ||theta_ij|| / ||d_ij||``, so a step of 1 along the direction
moves each filter by its own norm and scale-invariant networks compare fairly.

A direction is a dict ``{parameter name: float64 tensor}`` over the model's
floating-point parameters (``dir_type='weights'``) or its floating-point
state_dict entries (``'states'``: BatchNorm running statistics included).
Nothing here knows about MPI or files.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .errors import InputError, UsageError

DIR_TYPES = ("weights", "states")
NORMS = ("filter", "layer", "weight", "dfilter", "dlayer", "none")
IGNORES = ("biasbn", "none")
EPS = 1e-10  # as the reference code: keeps an all-zero filter at zero


@dataclass(frozen=True)
class AxisSettings:
    """How one direction is made: a seeded random draw, normalized; or a target model."""

    norm: str = "filter"
    ignore: str = "biasbn"

    def __post_init__(self):
        if self.norm not in NORMS:
            raise UsageError(f"normalization {self.norm!r}: expected one of {', '.join(NORMS)}")
        if self.ignore not in IGNORES:
            raise UsageError(f"ignore {self.ignore!r}: expected one of {', '.join(IGNORES)}")


def check_dir_type(dir_type: str) -> str:
    if dir_type not in DIR_TYPES:
        raise UsageError(f"--dir_type={dir_type}: expected one of {', '.join(DIR_TYPES)}")
    return dir_type


def origin_tensors(model: torch.nn.Module, dir_type: str) -> dict[str, torch.Tensor]:
    """The tensors a direction moves, keyed by name, as float64 copies."""
    check_dir_type(dir_type)
    source = dict(model.named_parameters()) if dir_type == "weights" else model.state_dict()
    return {name: t.detach().to(torch.float64).clone() for name, t in source.items() if t.is_floating_point()}


def _normalize(d: torch.Tensor, w: torch.Tensor, norm: str) -> torch.Tensor:
    if norm == "none":
        return d
    if norm in ("filter", "dfilter"):
        # One filter per slice along dim 0 (a 1-D tensor: every entry is its own unit).
        flat_d = d.reshape(d.shape[0], -1) if d.dim() > 0 else d.reshape(1, 1)
        d_norms = flat_d.norm(dim=1, keepdim=True)
        if norm == "dfilter":
            scale = 1.0 / (d_norms + EPS)
        else:
            flat_w = w.reshape(flat_d.shape)
            scale = flat_w.norm(dim=1, keepdim=True) / (d_norms + EPS)
        return (flat_d * scale).reshape(d.shape)
    if norm == "layer":
        return d * (w.norm() / (d.norm() + EPS))
    if norm == "dlayer":
        return d / (d.norm() + EPS)
    if norm == "weight":
        return d * w
    raise UsageError(f"normalization {norm!r}: expected one of {', '.join(NORMS)}")


def random_direction(origin: dict[str, torch.Tensor], settings: AxisSettings,
                     generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A Gaussian direction drawn from ``generator`` in the order of ``origin``, then normalized.

    With ``ignore='biasbn'`` the directions of 1-D tensors (biases, BatchNorm
    weights and, for ``states``, running statistics) are zero.
    """
    direction = {}
    for name, w in origin.items():
        d = torch.randn(w.shape, generator=generator, dtype=torch.float64)
        if w.dim() <= 1 and settings.ignore == "biasbn":
            direction[name] = torch.zeros_like(w)
        else:
            direction[name] = _normalize(d, w, settings.norm)
    return direction


def target_direction(origin: dict[str, torch.Tensor], target: dict[str, torch.Tensor],
                     what: str = "target model") -> dict[str, torch.Tensor]:
    """``target - origin`` per tensor: coefficient 1 along it reaches the target exactly."""
    missing = sorted(set(origin) - set(target))
    extra = sorted(set(target) - set(origin))
    if missing or extra:
        raise InputError(f"{what} does not match the model: missing {missing[:5]}, unexpected {extra[:5]}")
    out = {}
    for name, w in origin.items():
        if target[name].shape != w.shape:
            raise InputError(f"{what}: tensor {name} has shape {tuple(target[name].shape)}, "
                             f"the model has {tuple(w.shape)}")
        out[name] = target[name].to(torch.float64) - w
    return out


def check_matches(direction: dict[str, torch.Tensor], origin: dict[str, torch.Tensor], source: str) -> None:
    """A direction read from a file must cover exactly the model's tensors, shape for shape."""
    missing = sorted(set(origin) - set(direction))
    extra = sorted(set(direction) - set(origin))
    wrong = sorted(n for n in set(origin) & set(direction) if tuple(direction[n].shape) != tuple(origin[n].shape))
    if missing or extra or wrong:
        parts = [f"{label} {names[:5]}" + (" …" if len(names) > 5 else "")
                 for label, names in (("missing", missing), ("unexpected", extra), ("mis-shaped", wrong)) if names]
        raise InputError(f"{source} was made for another model: {'; '.join(parts)}")


def from_reference(indexed: dict, model: torch.nn.Module, dir_type: str | None, source: str):
    """Name the tensors ``"0".."n-1"`` of a reference-code direction file after ``model``'s own.

    The reference code stores ``[p for p in net.parameters()]`` for ``weights`` and the
    values of ``net.state_dict()`` (integer buffers included) for ``states``, in order;
    which of the two a file holds is told by the count unless ``dir_type`` says it.
    Returns ``(dir_type, {name: tensor})`` over the floating-point tensors.
    """
    reference = model.state_dict()
    states = list(reference)
    without_counters = [k for k in states if not k.endswith("num_batches_tracked")]  # torch < 0.4.1 had none
    orders = {"weights": [[n for n, _ in model.named_parameters()]], "states": [states, without_counters]}
    n = len(indexed)
    if dir_type is None:
        fits = [t for t in DIR_TYPES if any(len(o) == n for o in orders[t])]
        if not fits:
            raise InputError(f"{source} holds {n} tensors; the model has {len(orders['weights'][0])} parameters "
                             f"and {len(states)} state_dict entries: it was made for another model")
        dir_type = fits[0]
    names = next((o for o in orders[check_dir_type(dir_type)] if len(o) == n), None)
    if names is None:
        raise InputError(f"{source} holds {n} tensors but the model has {len(orders[dir_type][0])} "
                         f"for --dir_type={dir_type}: it was made for another model")
    out = {}
    for (key, array), name in zip(indexed.items(), names):
        if tuple(array.shape) != tuple(reference[name].shape):
            raise InputError(f"{source}: tensor {key} has shape {tuple(array.shape)} but the model's {name} has "
                             f"{tuple(reference[name].shape)}: it was made for another model")
        if reference[name].is_floating_point():
            out[name] = torch.as_tensor(array, dtype=torch.float64)
    return dir_type, out


def digest(dx: dict, dy: dict | None = None) -> str:
    """SHA-256 of a direction set: the x tensors by name, the y tensors as ``y/<name>``."""
    from .provenance import sha256_tensors

    return sha256_tensors({**dx, **({} if dy is None else {f"y/{k}": v for k, v in dy.items()})})
