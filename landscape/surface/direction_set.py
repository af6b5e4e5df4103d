"""The directions of a job: how they are asked for (``DirectionConfig``), drawn once, then checked.

A direction file made earlier (by this toolkit or by the reference code) is
reused only if it fits the model and the settings given explicitly for this
run; otherwise the run is refused with what differs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from .. import checks
from .. import directions as dirs
from ..directions import AxisInfo, Directions
from ..errors import ConfigError, InputError, MismatchError, UsageError, param
from ..io import reference
from ..io.checkpoint import read_state_dict
from ..io.paths import config_path
from ..provenance import sha256_file, sha256_tensors, versions
from . import pca

DEFAULT_DIR_TYPE = "weights"
DEFAULT_NORM = "filter"
DEFAULT_IGNORE = "biasbn"
DEFAULT_SEED = 0


@dataclass(frozen=True)
class DirectionConfig:
    """How the directions are made; ``None`` means "not given": the default, or a reused file's setting."""

    dir_type: str | None = None
    xnorm: str | None = None
    xignore: str | None = None
    ynorm: str | None = None  # default: as xnorm
    yignore: str | None = None  # default: as xignore
    same_dir: bool = False
    seed: int | None = None
    model_file2: str | None = None  # x direction = model2 - model
    model_file3: str | None = None  # y direction = model3 - model
    pca_from: str | None = None  # x and y: the top principal components of a trajectory's checkpoints
    hessian: bool = False  # x and y: the top two eigenvectors of the training loss's Hessian (unit norm)
    dir_file: str | None = None

    def __post_init__(self):
        for name in ("model_file2", "model_file3", "dir_file"):
            object.__setattr__(self, name, config_path(getattr(self, name), name))
        if self.dir_type is not None:
            dirs.check_dir_type(self.dir_type)
        for name in ("xnorm", "ynorm"):
            if getattr(self, name) is not None:
                dirs.check_norm(getattr(self, name), name)
        for name in ("xignore", "yignore"):
            if getattr(self, name) is not None:
                dirs.check_ignore(getattr(self, name), name)
        if self.seed is not None:
            checks.whole("seed", self.seed, least=0, most=checks.SEED_MAX)
        if self.pca_from is not None:
            if not isinstance(self.pca_from, str) or not self.pca_from:
                raise ConfigError("pca_from", self.pca_from, "a training run's folder, a glob pattern or a list file")
            given = [
                n for n in ("model_file2", "model_file3", "same_dir", "xnorm", "ynorm", "yignore") if getattr(self, n)
            ] + (["seed"] if self.seed is not None else [])
            if given:
                raise UsageError(
                    f"{param(given[0])} does not apply with {param('pca_from')}: the trajectory's principal components "
                    "are both directions, unit vectors drawn from no seed (xignore applies to both)",
                )
        if self.hessian:
            given = [
                n
                for n in ("model_file2", "model_file3", "same_dir", "pca_from", "xnorm", "ynorm", "xignore", "yignore")
                if getattr(self, n)
            ] + (["seed"] if self.seed is not None else [])
            if given:
                raise UsageError(
                    f"{param(given[0])} does not apply with {param('hessian')}: the Hessian's top eigenvectors are "
                    "both directions, unit vectors of the weights drawn from no seed",
                )
            if self.dir_type not in (None, "weights"):
                raise UsageError(f"{param('hessian')} moves the weights: {param('dir_type')} must be weights")
        if self.model_file3 and self.same_dir:
            raise UsageError(f"{param('model_file3')} and {param('same_dir')} both define the y direction: give one")
        for axis, target, name in (
            ("x", self.model_file2, "model_file2"),
            ("y", self.model_file3, "model_file3"),
            ("y", self.same_dir, "same_dir"),
        ):
            for setting in ("norm", "ignore"):
                if target and getattr(self, f"{axis}{setting}") is not None:
                    what = "the x direction" if name == "same_dir" else "a difference of models"
                    raise UsageError(
                        f"{param(axis + setting)} does not apply with {param(name)}: that direction is {what}",
                    )

    def check_grid(self, ndim: int) -> None:
        given = [name for name in ("model_file3", "same_dir", "pca_from") if getattr(self, name)]
        if ndim == 1 and given:
            raise UsageError(
                f"{' and '.join(map(param, given))} {'needs' if len(given) == 1 else 'need'} a 2-D grid, as it "
                f"defines the y direction: add {param('y')}=MIN:MAX:NUM",
            )

    def settings(self, axis: str) -> tuple[str, str]:
        """``(norm, ignore)`` of a random direction along ``axis``: given, y as x, else the defaults."""
        norm = getattr(self, f"{axis}norm") or (self.xnorm if axis == "y" else None) or DEFAULT_NORM
        ignore = getattr(self, f"{axis}ignore") or (self.xignore if axis == "y" else None) or DEFAULT_IGNORE
        return norm, ignore


def draw(
    cfg: DirectionConfig, ndim: int, origin: dict, dir_type: str, target, model: str, eigenvectors=None
) -> Directions:
    """New directions for ``origin``: seeded random ones, towards target models, a trajectory's plane, or
    the Hessian's top eigenvectors.

    ``target(path)`` returns the tensors of the model in checkpoint ``path``, like ``origin``;
    ``eigenvectors(k)`` the Hessian's top ``k`` eigenvalues and unit eigenvectors as tensors by name.
    """
    if cfg.pca_from:
        return _from_trajectory(cfg, origin, dir_type, model)
    if cfg.hessian:
        return _from_hessian(cfg, ndim, origin, dir_type, model, eigenvectors)
    seed = DEFAULT_SEED if cfg.seed is None else cfg.seed
    generator = torch.Generator().manual_seed(seed)
    axes, infos = [], []
    for axis, target_file in (("x", cfg.model_file2), ("y", cfg.model_file3))[:ndim]:
        if target_file:
            name = "model_file2" if axis == "x" else "model_file3"
            towards = target(target_file)
            dirs.check_finite(towards, f"{param(name)} {target_file}")
            axes.append(dirs.target_direction(origin, towards, f"{name} {target_file}"))
            infos.append(AxisInfo("target", target_file=target_file, target_sha256=sha256_file(target_file)))
        elif axis == "y" and cfg.same_dir:
            axes.append({k: v.clone() for k, v in axes[0].items()})
            infos.append(
                AxisInfo(
                    f"same as x ({infos[0].kind})",
                    infos[0].norm,
                    infos[0].ignore,
                    infos[0].seed,
                    infos[0].target_file,
                    infos[0].target_sha256,
                )
            )
        else:
            norm, ignore = cfg.settings(axis)
            axes.append(dirs.random_direction(origin, norm, ignore, generator))
            infos.append(AxisInfo("random", norm, ignore, seed))
    return Directions(
        axes[0],
        axes[1] if ndim == 2 else None,
        tuple(infos),
        dir_type,
        seed,
        bool(cfg.same_dir),
        sha256_tensors(origin),
        model,
        extra=versions(),
    )


def _from_trajectory(cfg: DirectionConfig, origin: dict, dir_type: str, model: str) -> Directions:

    files = pca.checkpoint_files(cfg.pca_from)
    states = []
    for path in files:  # mapped, not loaded: the slices of the Gram matrix read what they need
        state = read_state_dict(path, mmap=True)
        tensors = {name: state[name] for name in origin if name in state}
        dirs.check_matches(tensors, origin, f"pca_from checkpoint {path}")
        dirs.check_finite(tensors, f"{param('pca_from')} checkpoint {path}")
        states.append(tensors)
    ignore = cfg.xignore or DEFAULT_IGNORE
    x, y, path = pca.trajectory(origin, files, states, ignore)
    infos = tuple(AxisInfo(f"PC{k} of {len(files)} checkpoints", "none", ignore, -1) for k in (1, 2))
    return Directions(
        x, y, infos, dir_type, -1, False, sha256_tensors(origin), model, extra=versions(), trajectory=path
    )


HESSIAN_KIND = "Hessian eigenvector"


def _from_hessian(cfg: DirectionConfig, ndim: int, origin: dict, dir_type: str, model: str, eigenvectors) -> Directions:
    """x (and y): the top eigenvectors of the Hessian of the training loss at ``origin``, unit norm, each
    signed so that its largest entry is positive (an eigenvector's sign is arbitrary; this one repeats)."""
    values, vectors = eigenvectors(ndim)
    axes = []
    for vector in vectors:
        full = {name: vector.get(name, torch.zeros_like(t)).to(torch.float64) for name, t in origin.items()}
        flat = torch.cat([t.reshape(-1) for t in full.values()])
        sign = 1.0 if float(flat[flat.abs().argmax()]) >= 0 else -1.0
        axes.append({name: sign * t for name, t in full.items()})
    infos = tuple(
        AxisInfo(f"{HESSIAN_KIND} {k + 1} (λ = {value:.6g})", "none", "none", -1) for k, value in enumerate(values)
    )
    return Directions(
        axes[0],
        axes[1] if ndim == 2 else None,
        infos,
        dir_type,
        -1,
        False,
        sha256_tensors(origin),
        model,
        extra=versions(),
    )


def named(stored: Directions, model: torch.nn.Module, dir_type: str | None, path: str) -> Directions:
    """A reference-code direction file in this module's terms: tensors named after ``model``'s own."""
    found = [
        reference.name_tensors(axis, model, dir_type, f"direction file {path} ({name})")
        for axis, name in zip((stored.x, stored.y), ("xdirection", "ydirection"))
        if axis is not None
    ]
    types = {t for t, _ in found}
    if len(types) > 1:
        raise InputError(f"direction file {path}: its two directions hold different numbers of tensors")
    tensors = [d for _, d in found]
    return Directions(tensors[0], tensors[1] if len(tensors) > 1 else None, stored.axes, types.pop(), reference=True)


def _conflicts(cfg: DirectionConfig, d: Directions, ndim: int) -> list[str]:
    """What the settings given for this run say that the file's directions are not."""
    out = []
    for name, given, stored in (("dir_type", cfg.dir_type, d.dir_type), ("seed", cfg.seed, d.seed)):
        if given is not None and given != stored:
            out.append(f"{param(name)}={given} but the file has {stored!r}")
    for name in ("xnorm", "xignore", "ynorm", "yignore"):
        given, axis = getattr(cfg, name), 0 if name[0] == "x" else 1
        if given is not None and axis < len(d.axes) and getattr(d.axes[axis], name[1:]) not in (given, ""):
            out.append(f"{param(name)}={given} but the file has {getattr(d.axes[axis], name[1:])!r}")
    if out:
        return out
    for (axis, target, name), info in zip(
        (("x", cfg.model_file2, "model_file2"), ("y", cfg.model_file3, "model_file3"))[:ndim], d.axes
    ):
        if axis == "y" and (cfg.same_dir or d.same_dir):
            if bool(cfg.same_dir) != bool(d.same_dir):
                out.append(
                    f"{param('same_dir')} is {'given' if cfg.same_dir else 'not given'} but the file's y direction is "
                    f"{'' if d.same_dir else 'not '}the x direction"
                )
            continue
        if target and info.target_sha256 != sha256_file(target):
            where = f"towards {info.target_file}" if info.kind == "target" else "random"
            out.append(f"{param(name)} {target} but the file's {axis} direction is {where}")
        elif not target and info.kind == "target":
            out.append(f"no {param(name)} but the file's {axis} direction points to {info.target_file}")
    return out


def check(cfg: DirectionConfig, d: Directions, ndim: int, origin: dict, path: str) -> Directions:
    """``d`` read from ``path``, checked against the model and the settings given explicitly."""
    if d.reference:  # how it was made is not recorded: only the model match can be checked
        defining = [
            name
            for name in ("model_file2", "model_file3", "same_dir", "seed")
            if getattr(cfg, name) not in (None, False, "")
        ]
        if defining:
            raise MismatchError(
                f"direction file {path} is a reference-code file, whose directions are fixed; "
                f"{', '.join(map(param, defining))} cannot change them: drop {'it' if len(defining) == 1 else 'them'}"
                f" or give another {param('dir_file')}",
            )
    if ndim == 2 and d.y is None:
        raise MismatchError(f"direction file {path} holds only an x direction; a 2-D grid needs two")
    if bool(cfg.hessian) != d.axes[0].kind.startswith(HESSIAN_KIND) and not d.reference:
        raise MismatchError(
            f"direction file {path} holds {d.axes[0].kind} directions, "
            f"{'not' if cfg.hessian else 'but'} {param('hessian')} is given; drop or add it to reuse the file, "
            f"or give another {param('dir_file')}",
        )
    if cfg.pca_from and d.trajectory is None:
        raise MismatchError(
            f"direction file {path} holds no trajectory plane (its directions are "
            f"{d.axes[0].kind}); drop {param('pca_from')} to reuse it, or give another {param('dir_file')}",
        )
    if cfg.pca_from:
        now = [os.path.realpath(f) for f in pca.checkpoint_files(cfg.pca_from)]
        if now != [os.path.realpath(f) for f in d.trajectory.files]:
            raise MismatchError(
                f"direction file {path} holds the plane of other checkpoints ({len(d.trajectory.files)} "
                f"from {os.path.dirname(d.trajectory.files[0]) or '.'}) than {param('pca_from')} {cfg.pca_from} "
                f"names ({len(now)}); give another {param('dir_file')} and {param('surf_file')} for this trajectory",
            )
    if not d.reference:
        conflicts = _conflicts(cfg, d, ndim)
        if conflicts:
            raise MismatchError(
                f"direction file {path} was made with other settings: {'; '.join(conflicts)}; "
                f"drop those settings to reuse it, or give another {param('dir_file')}",
            )
    for axis, direction in zip("xy", (d.x, d.y)[:ndim]):
        dirs.check_matches(direction, origin, f"direction file {path} ({axis}direction)")
        dirs.check_finite(direction, f"direction file {path} ({axis}direction)")
    if ndim == 1 and d.y is not None:  # a 1-D surface on a file with two directions uses the first
        d = Directions(
            d.x,
            None,
            d.axes[:1],
            d.dir_type,
            d.seed,
            d.same_dir,
            d.origin_sha256,
            d.model,
            d.reference,
            d.extra,
            d.trajectory,
        )
    return d
