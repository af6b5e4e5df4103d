"""What a surface job evaluates, loaded and checked on every rank: the model and the data (the same on
every rank), the directions (drawn by rank 0 and written once, read by all) and the weights they move."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch

from .. import directions as dirs
from ..curvature import Hessian, extreme
from ..data import Data, check_fits, load_data
from ..errors import InputError, UsageError, param
from ..io import direction_file, paths
from ..io.outputs import what
from ..losses import Loss
from ..models import load_model
from ..provenance import sha256_tensors
from . import direction_set
from .config import SurfaceJob

HESSIAN_TOL = 1e-6  # the eigenvectors of --hessian directions: Lanczos in float64
HESSIAN_BATCH = 1024


@dataclass
class Loaded:
    """The data and the model of a job on this rank, and their fingerprints (``fingerprints``)."""

    data: Data
    model: torch.nn.Module
    prints: dict = field(default_factory=dict)


def check_outputs(job: SurfaceJob) -> None:
    """Before any work: the folders exist and can be written, an existing surface can be updated."""
    surf, directions = job.surf_file, job.dir_file
    if os.path.abspath(surf) == os.path.abspath(directions):
        raise UsageError(f"{param('surf_file')} and {param('dir_file')} are both {surf}: expected two files")
    paths.output_path(surf, "surface file", "surf_file", in_place=True)
    if os.path.lexists(directions):
        paths.readable_file(directions, "direction file")
    else:
        paths.output_path(directions, "direction file", "dir_file")
    for path, flag, kind in ((surf, "surf_file", "surface"), (directions, "dir_file", "direction")):
        if os.path.isfile(path) and what(path) != "HDF5 file":  # a checkpoint given as --surf_file: refused now,
            raise InputError(  # not after the directions are drawn and written beside it
                f"{param(flag)}={path} exists and is {'a ' + what(path) if what(path) else 'not an HDF5 file'}: "
                f"expected a {kind} file to resume or a new path (it is left untouched)"
            )
    if os.path.exists(surf) and not (
        os.access(surf, os.R_OK | os.W_OK) and os.access(os.path.dirname(os.path.abspath(surf)), os.W_OK)
    ):
        raise InputError(
            f"surface file {surf} cannot be read and written (or its folder cannot be written), so "
            f"it cannot be resumed or recorded; change its permissions or choose another {param('surf_file')}",
        )


def load(job: SurfaceJob, given_model, given_data, say) -> Loaded:
    data = load_data(job.data, given_data)
    if given_model is not None:
        check_fits(given_model, data.train, "given", "given" if given_data is not None else job.data.dataset)
        return Loaded(data, given_model)
    seed = direction_set.DEFAULT_SEED if job.directions.seed is None else job.directions.seed
    model = load_model(job.model, job.model.classes(job.data.dataset), job.model.model_file, seed, say)
    check_fits(model, data.train, job.model.model, job.data.dataset)  # before any direction is drawn or written
    return Loaded(data, model)


def fingerprints(loaded: Loaded) -> dict:
    data = loaded.data
    return {
        "origin": sha256_tensors(loaded.model.state_dict()),
        "train": sha256_tensors({"x": data.train.inputs, "y": data.train.targets}),
        "test": sha256_tensors({"x": data.test.inputs, "y": data.test.targets}) if data.test is not None else "",
    }


# A model or data that differ between ranks would make a silent patchwork (``comm.same_everywhere``).
DIFFERENT_INPUTS = "every rank must build the same network and data set (a factory that is not deterministic?)"


def draw_directions(job: SurfaceJob, loaded: Loaded, rank: int, say) -> None:
    """Rank 0 draws the directions and writes them, unless the direction file exists."""
    if rank != 0 or os.path.exists(job.dir_file):
        return
    model = loaded.model
    dir_type = job.wanted_dir_type() or direction_set.DEFAULT_DIR_TYPE
    origin = origin_of(job, model, dir_type)

    def target(path: str) -> dict:
        other = load_model(job.model, job.model.classes(job.data.dataset), path, 0)
        return dirs.origin_tensors(other, dir_type)

    def eigenvectors(k: int) -> tuple[list[float], list[dict]]:
        """The Hessian's top ``k`` eigenpairs of the training loss at the model (float64, Lanczos)."""
        hessian = Hessian(model, loaded.data.train, Loss(job.evaluation.loss_name), batch_size=HESSIAN_BATCH)
        found = extreme(hessian, k=k, end="top", tol=HESSIAN_TOL, seed=0)
        if not found.converged:
            say(f"note: the Hessian's eigenvectors did not reach tol {HESSIAN_TOL:g} ({found.note})")
        say(f"Hessian directions: λ = {', '.join(f'{v:.6g}' for v in found.values)} ({found.products} products)")
        vectors = []
        for column in found.vectors.T:
            flat = torch.as_tensor(column, dtype=torch.float64)
            parts = torch.split(flat, hessian.sizes)
            vectors.append({n: p.view(s) for n, p, s in zip(hessian.names, parts, hessian.shapes)})
        return found.values, vectors

    drawn = direction_set.draw(job.directions, job.grid.ndim, origin, dir_type, target, job.model.model, eigenvectors)
    direction_file.write(job.dir_file, drawn)
    say(f"wrote directions to {job.dir_file}")
    if drawn.trajectory is not None:
        xy, t = drawn.trajectory.coordinates, drawn.trajectory
        inside = all(
            axis.lo <= lo and hi <= axis.hi
            for axis, lo, hi in (
                (job.grid.x, xy[:, 0].min(), xy[:, 0].max()),
                (job.grid.y, xy[:, 1].min(), xy[:, 1].max()),
            )
        )
        say(
            f"trajectory of {len(xy)} checkpoints: PC1 {100 * t.explained[0]:.1f} %, "
            f"PC2 {100 * t.explained[1]:.1f} % of its variance (a random walk: {100 * t.random_walk[0]:.0f} %, "
            f"{100 * t.random_walk[1]:.0f} %); it spans "
            f"x {xy[:, 0].min():.3g}..{xy[:, 0].max():.3g}, y {xy[:, 1].min():.3g}..{xy[:, 1].max():.3g}"
            + ("" if inside else " — beyond this grid: widen x and y to see all of it")
        )


def origin_of(job: SurfaceJob, model, dir_type: str) -> dict:
    """The tensors the directions move, at the centre: there must be some, and they must be finite."""
    origin = dirs.origin_tensors(model, dir_type)
    if not origin:
        raise InputError(
            f"model {job.model.model} has no floating-point "
            f"{'parameters' if dir_type == 'weights' else 'state_dict entries'} for the directions "
            f"to move ({param('dir_type')}={dir_type})",
        )
    dirs.check_finite(
        origin, f"checkpoint {job.model.model_file}" if job.model.model_file else f"model {job.model.model}"
    )
    return origin


def read_directions(job: SurfaceJob, model) -> dirs.Directions:
    stored = direction_file.read(job.dir_file)
    if stored.reference:
        stored = direction_set.named(stored, model, job.wanted_dir_type(), job.dir_file)
    origin = origin_of(job, model, stored.dir_type)
    return direction_set.check(job.directions, stored, job.grid.ndim, origin, job.dir_file)
