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

from dataclasses import dataclass, field

import numpy as np
import torch

from .errors import ConfigError, InputError, MismatchError
from .provenance import sha256_tensors

DIR_TYPES = ("weights", "states")
NORMS = ("filter", "layer", "weight", "dfilter", "dlayer", "none")
IGNORES = ("biasbn", "none")
EPS = 1e-10  # as the reference code: keeps an all-zero filter at zero


@dataclass(frozen=True)
class AxisInfo:
    """What one direction is: how it was made, as recorded beside its tensors."""

    kind: str  # random, target, "same as x (random)", reference file
    norm: str = "none"
    ignore: str = "none"
    seed: int = -1
    target_file: str = ""
    target_sha256: str = ""


@dataclass(frozen=True)
class Directions:
    """The x (and y) direction of a surface: float64 tensors keyed by the names of the tensors they move."""

    x: dict[str, torch.Tensor]
    y: dict[str, torch.Tensor] | None
    axes: tuple[AxisInfo, ...]
    dir_type: str
    seed: int = -1  # -1: not drawn from a seed known here (a reference file)
    same_dir: bool = False
    origin_sha256: str = ""  # the weights the directions were normalized against ("" unknown)
    model: str = ""
    reference: bool = False  # read from the reference code's unnamed "0".."n-1" layout
    extra: dict = field(default_factory=dict)  # other attributes of the file (versions)
    trajectory: Trajectory | None = None  # pca_from: the path of checkpoints x and y are the principal axes of

    @property
    def ndim(self) -> int:
        return 1 if self.y is None else 2

    @property
    def digest(self) -> str:
        return digest(self.x, self.y)


def check_dir_type(dir_type: str, field_name: str = "dir_type") -> str:
    if dir_type not in DIR_TYPES:
        raise ConfigError(field_name, dir_type, f"one of {', '.join(DIR_TYPES)}")
    return dir_type


def check_norm(norm: str, field_name: str = "xnorm") -> str:
    if norm not in NORMS:
        raise ConfigError(field_name, norm, f"one of {', '.join(NORMS)}")
    return norm


def check_ignore(ignore: str, field_name: str = "xignore") -> str:
    if ignore not in IGNORES:
        raise ConfigError(field_name, ignore, f"one of {', '.join(IGNORES)}")
    return ignore


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
    raise ConfigError("xnorm", norm, f"one of {', '.join(NORMS)}")


def random_direction(
    origin: dict[str, torch.Tensor], norm: str, ignore: str, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """A Gaussian direction drawn from ``generator`` in the order of ``origin``, then normalized.

    With ``ignore='biasbn'`` the directions of 1-D tensors (biases, BatchNorm
    weights and, for ``states``, running statistics) are zero.
    """
    direction = {}
    for name, w in origin.items():
        d = torch.randn(w.shape, generator=generator, dtype=torch.float64)
        if w.dim() <= 1 and ignore == "biasbn":
            direction[name] = torch.zeros_like(w)
        else:
            direction[name] = _normalize(d, w, norm)
    return direction


def target_direction(
    origin: dict[str, torch.Tensor], target: dict[str, torch.Tensor], what: str = "target model"
) -> dict[str, torch.Tensor]:
    """``target - origin`` per tensor: coefficient 1 along it reaches the target exactly."""
    missing = sorted(set(origin) - set(target))
    extra = sorted(set(target) - set(origin))
    if missing or extra:
        raise InputError(f"{what} does not match the model: missing {missing[:5]}, unexpected {extra[:5]}")
    out = {}
    for name, w in origin.items():
        if target[name].shape != w.shape:
            raise InputError(
                f"{what}: tensor {name} has shape {tuple(target[name].shape)}, the model has {tuple(w.shape)}"
            )
        out[name] = target[name].to(torch.float64) - w
    return out


def check_matches(direction: dict[str, torch.Tensor], origin: dict[str, torch.Tensor], source: str) -> None:
    """A direction read from a file must cover exactly the model's tensors, shape for shape."""
    missing = sorted(set(origin) - set(direction))
    extra = sorted(set(direction) - set(origin))
    wrong = sorted(n for n in set(origin) & set(direction) if tuple(direction[n].shape) != tuple(origin[n].shape))
    if missing or extra or wrong:
        parts = [
            f"{label} {names[:5]}" + (" …" if len(names) > 5 else "")
            for label, names in (("missing", missing), ("unexpected", extra), ("mis-shaped", wrong))
            if names
        ]
        raise MismatchError(f"{source} was made for another model: {'; '.join(parts)}")


def check_finite(tensors: dict[str, torch.Tensor], source: str) -> None:
    """Directions and weights with NaN or inf would make every point NaN: refuse them, naming the tensors."""
    bad = [name for name, t in tensors.items() if not bool(torch.isfinite(t).all())]
    if bad:
        raise InputError(
            f"{source} holds NaN or inf in {len(bad)} tensor{'s' * (len(bad) > 1)} "
            f"({', '.join(bad[:3])}{' …' if len(bad) > 3 else ''}); expected finite values",
        )


def digest(dx: dict, dy: dict | None = None) -> str:
    """SHA-256 of a direction set: the x tensors by name, the y tensors as ``y/<name>``."""
    return sha256_tensors({**dx, **({} if dy is None else {f"y/{k}": v for k, v in dy.items()})})


@dataclass(frozen=True)
class Trajectory:
    """The plane of a trajectory and the path on it."""

    files: tuple[str, ...]  # the checkpoints, in order
    labels: tuple[int, ...]  # their epochs (the number in the file name), or their positions
    coordinates: np.ndarray  # (T, 2): each checkpoint projected on (x, y) by least squares
    explained: tuple[float, float]  # the share of the centred differences' variance along x and along y
    random_walk: tuple[float, float]  # the same shares for a Gaussian random walk of T steps
