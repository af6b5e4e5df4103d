"""Directions from a training trajectory: the plane of its top two principal components (Li et al.
2018, Sec. 7).

Random directions are nearly orthogonal to the path an optimizer took in a space of millions of
weights, so a surface along them shows nothing of that path.  Given the checkpoints w_1 … w_T of one
run and the final weights w (the surface's centre), the differences d_t = w_t − w are centred and
their top two principal components become the x and y directions (unit vectors, not normalized per
filter: their coordinates are distances in weight space).  Each checkpoint's coordinates on the plane
come from least squares on the two directions, so the path can be drawn over the surface.

The principal components come from the eigenvectors of the T×T Gram matrix of the centred
differences (``numpy.linalg.eigh``), not from a d×d covariance: with 10⁸ weights and a few hundred
checkpoints, the Gram matrix is small, and it is accumulated over slices of the weights, so at most
``T × chunk`` numbers of the trajectory are in memory at once (checkpoints can be memory-mapped).

High-dimensional random walks look low-dimensional too: a Gaussian random walk of T steps puts about
6/π² ≈ 61 % of its variance on the first component and 15 % on the second (Antognini &
Sohl-Dickstein 2018).  ``random_walk_ratios`` gives the same ratios, by simulation, for the number of
checkpoints at hand: the baseline a trajectory's ratios should be read against.
"""

from __future__ import annotations

import glob
import os
import re

import numpy as np
import torch

from ..directions import Trajectory
from ..errors import InputError, param

CHUNK = 1 << 20  # weights per slice when accumulating the Gram matrix


def _number(path: str) -> int | None:
    found = re.findall(r"\d+", os.path.basename(path))
    return int(found[-1]) if found else None


def checkpoint_files(spec: str) -> list[str]:
    """The checkpoints a ``pca_from`` names: a training run's folder (its ``epoch_*.pt``), a glob pattern
    (quoted on the command line) whose files are put in epoch order by the number in their names, or a
    ``.txt`` file with one path per line (relative to the file; ``#`` starts a comment), in its order."""
    listed = False
    if os.path.isdir(spec):
        files = glob.glob(os.path.join(glob.escape(spec), "epoch_*.pt"))
        where = f"folder {spec} holds no epoch_*.pt checkpoints (train with save_every 1 to keep every epoch)"
    elif os.path.isfile(spec) and spec.endswith(".txt"):
        try:
            with open(spec) as handle:
                lines = [line.split("#")[0].strip() for line in handle]
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{param('pca_from')}: list {spec} cannot be read as text ({exc})") from None
        here = os.path.dirname(os.path.abspath(spec))
        files, listed = [os.path.join(here, line) for line in lines if line], True
        where = f"list {spec} names no checkpoint"
    elif os.path.isfile(spec) and not spec.endswith((".pt", ".pth", ".t7", ".tar", ".ckpt")):
        raise InputError(f"{param('pca_from')}: {spec} is neither a checkpoint pattern nor a .txt list of checkpoints")
    else:
        files = glob.glob(spec)
        where = f"pattern {spec!r} matches no file"
    if not files:
        raise InputError(f"{param('pca_from')}: {where}")
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise InputError(f"{param('pca_from')}: checkpoint {missing[0]} does not exist")
    if len(files) < 3:
        raise InputError(f"{param('pca_from')}: {len(files)} checkpoint(s); two principal components need at least 3")
    if len(set(map(os.path.realpath, files))) < len(files):
        raise InputError(f"{param('pca_from')}: a checkpoint is listed twice ({spec}); expected each once")
    if not listed:
        numbers = [_number(f) for f in files]
        unnumbered = [f for f, n in zip(files, numbers) if n is None]
        if unnumbered:
            raise InputError(
                f"{param('pca_from')}: {os.path.basename(unnumbered[0])} has no epoch number in its name, so the "
                f"pattern {spec!r} cannot be put in epoch order; match the epoch files only (e.g. "
                "'run/epoch_*.pt') or give a .txt list in order",
            )
        if len(set(numbers)) < len(numbers):
            raise InputError(
                f"{param('pca_from')}: two files of {spec!r} carry the same epoch number; "
                "expected one checkpoint per epoch",
            )
        files = [f for _, f in sorted(zip(numbers, files))]
    return files


def _slices(origin: dict[str, torch.Tensor], names: list[str], chunk: int):
    """(name, start, stop) over the flattened tensors ``names``, at most ``chunk`` numbers each."""
    for name in names:
        size = origin[name].numel()
        for start in range(0, size, chunk):
            yield name, start, min(size, start + chunk)


def plane(
    origin: dict[str, torch.Tensor], states: list[dict[str, torch.Tensor]], ignore: str = "biasbn", chunk: int = CHUNK
) -> tuple[dict, dict, np.ndarray, tuple[float, float]]:
    """The top two principal directions of ``states`` − ``origin`` (unit vectors keyed as ``origin``),
    each state's coordinates on them (least squares), and the two explained-variance ratios."""
    names = [n for n, w in origin.items() if not (ignore == "biasbn" and w.dim() <= 1)]
    if not names:
        raise InputError(
            f"{param('pca_from')}: every tensor is ignored (1-D tensors with ignore=biasbn): nothing to project",
        )
    T = len(states)

    def block(name, start, stop) -> np.ndarray:  # (T, stop - start) differences, float64
        w = origin[name].reshape(-1)[start:stop].to(torch.float64)
        return torch.stack([s[name].reshape(-1)[start:stop].to(torch.float64) - w for s in states]).numpy()

    mean_sq = np.zeros((T, T))
    for name, start, stop in _slices(origin, names, chunk):
        X = block(name, start, stop)
        mean_sq += X @ X.T  # the uncentred Gram matrix, slice by slice
    centring = np.eye(T) - 1.0 / T  # J = I - 11ᵀ/T: the Gram matrix of the centred differences
    gram = centring @ mean_sq @ centring
    values, vectors = np.linalg.eigh(gram)
    order = np.argsort(values)[::-1]
    values, vectors = np.clip(values[order], 0.0, None), vectors[:, order]
    # Spread measured against the differences' own size: rounding alone leaves ~1e-16 of it.
    if values.sum() <= 1e-12 * np.trace(mean_sq) or values[1] <= 1e-12 * values.sum():
        raise InputError(
            f"{param('pca_from')}: the checkpoints span fewer than two dimensions (identical, or on one line): "
            "no plane to show",
        )
    explained = (float(values[0] / values.sum()), float(values[1] / values.sum()))
    # Principal directions: v_k = Xcᵀ u_k / sqrt(λ_k), unit length; X's rows centred by J.
    mix = centring @ vectors[:, :2] / np.sqrt(values[:2])
    directions = ({}, {})
    coordinates = np.zeros((T, 2))
    for name in origin:
        for d in directions:
            d[name] = torch.zeros_like(origin[name], dtype=torch.float64)
    for name, start, stop in _slices(origin, names, chunk):
        X = block(name, start, stop)
        V = X.T @ mix  # (slice, 2)
        for k in range(2):
            directions[k][name].view(-1)[start:stop] = torch.from_numpy(V[:, k])
        coordinates += X @ V  # x_t · v_k: orthonormal v, so least squares is the dot product
    # A sign convention, so that a rerun draws the same picture: the first checkpoint at negative x and y.
    for k in range(2):
        if coordinates[0, k] > 0:
            coordinates[:, k] *= -1
            for name in names:
                directions[k][name].neg_()
    return directions[0], directions[1], coordinates, explained


def random_walk_ratios(steps: int, dim: int = 2000, trials: int = 20, seed: int = 0) -> tuple[float, float]:
    """The explained-variance ratios of the top two components of a Gaussian random walk of ``steps``
    points in ``dim`` dimensions, averaged over ``trials`` walks."""
    rng = np.random.default_rng(seed)
    shares = []
    for _ in range(trials):
        walk = np.cumsum(rng.standard_normal((steps, dim)), axis=0)
        walk -= walk.mean(axis=0)
        s = np.linalg.svd(walk, compute_uv=False) ** 2
        shares.append(s[:2] / s.sum())
    mean = np.mean(shares, axis=0)
    return float(mean[0]), float(mean[1])


def trajectory(
    origin: dict[str, torch.Tensor], files: list[str], states: list[dict[str, torch.Tensor]], ignore: str = "biasbn"
) -> tuple[dict, dict, Trajectory]:
    """The x and y directions of ``files`` (whose tensors are ``states``) and their ``Trajectory``."""
    x, y, coordinates, explained = plane(origin, states, ignore)
    numbers = [_number(f) for f in files]
    labels = tuple(numbers) if all(n is not None for n in numbers) else tuple(range(1, len(files) + 1))
    return (
        x,
        y,
        Trajectory(
            tuple(os.path.abspath(f) for f in files), labels, coordinates, explained, random_walk_ratios(len(files))
        ),
    )


__all__ = ["Trajectory", "checkpoint_files", "plane", "random_walk_ratios", "trajectory"]
