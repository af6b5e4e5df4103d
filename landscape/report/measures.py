"""What a scorecard measures for each trained network, and how.

For one checkpoint, in its own folder of the report (``<out>/runs/<run>/``):

- a 1-D and a 2-D filter-normalized surface (``landscape surface``'s job, its file schema and resume),
  whose centre gives the train and test loss and error of the network, BatchNorm in eval mode, and
  whose 2-D grid gives the mean training-loss rise within ``radius`` of the minimum;
- a 1-D surface on the same grid along the Hessian's top eigenvector (``surface_1d_hessian.h5``, made
  as ``landscape surface --hessian`` makes it: a unit vector of all the weights, its kind and λ in the
  file), so the random direction's curve can be set beside the steepest one: ``details.hessian_1d``;
- on the training set (all of it, or a seeded ``train_subset``, ``landscape.curvature``): the Hessian's
  largest eigenvalue (Lanczos) and trace (Hutchinson), both also per layer (``details.layers``), relative
  flatness, the Fisher–Rao norm, the gradient noise scale, and the six sharpness measures of
  ``curvature.sharpness`` by their names (``SHARPNESS``): Keskar's ε-sharpness, worst-case adaptive
  sharpness in the ℓ∞ box and the ℓ2 ball, its average case, m-sharpness, and the mean loss rise at
  ``radius`` along ``directions`` random filter-normalized directions.  Each measure says whether a
  function-preserving rescaling of a ReLU network can change it (``Measure.invariant``);
- on the same data and in the same precision, the Hessian's spectral density by stochastic Lanczos
  quadrature (``curvature.density``: nodes and weights of ``density_runs`` runs of ``density_steps``
  steps), ``details.density``.

Everything lands in ``measures.json`` with the settings, the checkpoint's SHA-256 and a SHA-256 of the
whole record: a rerun with the same settings reads it back, one with other settings, a changed
checkpoint or a record changed since (an edited value) is refused rather than mixing two computations
in one table.  Nothing here knows about ranks.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict

import numpy as np

from ..curvature import Hessian
from ..curvature.suite import one
from ..data import Data, DataConfig, load_data, load_named
from ..grid import Grid
from ..io import direction_file
from ..io.atomic import write_file
from ..io.surface_file import read
from ..losses import Loss
from ..models import ModelConfig, load_model
from ..parallel.comm import SerialComm
from ..provenance import sha256_file
from ..surface.config import RunConfig, SurfaceJob
from ..surface.direction_set import DirectionConfig
from ..surface.job import run_surface
from ..surface.rise import mean_rise_2d
from .catalogue import BY_KEY, MEASURES, SHARPNESS
from .measure_config import SUITE_NAMES, MeasureConfig, Target
from .measures_file import MEASURES_FILE, RECORD_DIGEST, cached, digest, run_record
from .runs import Run

HESSIAN_1D = "surface_1d_hessian.h5"
# How the Hessian direction is scaled: ``landscape surface --hessian`` draws a unit vector of all the
# weights (biases too, norm "none" in the file), so the coordinate t is the distance moved in weight
# space and the loss of a quadratic rises as λ t² / 2.
HESSIAN_SCALE = "unit"


def _surface(
    run: Run, target: Target, config: MeasureConfig, data: Data, path: str, grid: Grid, directions: DirectionConfig
):
    """The surface at ``path``, made, finished or found done by ``landscape surface``'s job, read back;
    and the path of its direction file.  ``data``: the target's data set as named, loaded once for
    every job of the run (the subset is drawn from it as from a data set loaded by name)."""
    job = SurfaceJob(
        model=ModelConfig(
            target.model, num_classes=target.num_classes, model_file=run.checkpoint, model_args=target.model_args
        ),
        grid=grid,
        data=DataConfig(
            target.dataset, datapath=target.datapath, train_subset=config.train_subset, data_args=target.data_args
        ),
        directions=directions,
        evaluation=config.evaluation(),
        run=RunConfig(
            surf_file=path, threads=target.threads, quiet=True, device=target.device, argv=("landscape", "report")
        ),
    )
    run_surface(job, SerialComm(), data=data)
    return read(path), job.dir_file


def _surfaces(run: Run, target: Target, config: MeasureConfig, data: Data, folder: str):
    """The random 1-D and 2-D surfaces, filter-normalized."""
    random = DirectionConfig(xnorm="filter", xignore="biasbn", seed=config.seed)
    return [
        _surface(run, target, config, data, os.path.join(folder, name), grid, random)[0]
        for name, grid in (
            ("surface_1d.h5", Grid.parse(config.grid_1d)),
            ("surface_2d.h5", Grid.parse(config.grid_2d, config.grid_2d)),
        )
    ]


def _eigenvalue(model, train, config: MeasureConfig, device: str, direction: dict) -> float:
    """vᵀHv / vᵀv of the Hessian surface's direction (keyed by parameter name): the eigenvalue it was
    drawn with, to full precision (the file's axis label rounds it to 6 digits).  In float64 on the same
    samples, as ``landscape surface --hessian`` draws it: in float32 the products of a network near zero
    loss can differ from float64's in the fifth digit.  One product: no graph is kept for another."""
    h = Hessian(model, train, Loss(config.loss_name), batch_size=config.batch_size, device=device, graph_budget=0)
    v = np.concatenate([direction[n].reshape(-1).numpy() for n in h.names])
    return float(v @ h.matvec(v) / (v @ v))


def _centre(surface, name: str) -> float:
    if name not in surface.values:
        return math.nan
    return float(surface.values[name][np.flatnonzero(surface.x == 0)[0]])


# the curvature suite's measure behind each scorecard key that is not a sharpness search


def _model_and_hessian(run: Run, target: Target, config: MeasureConfig, data: Data):
    cfg = ModelConfig(
        target.model, num_classes=target.num_classes, model_file=run.checkpoint, model_args=target.model_args
    )
    model = load_model(cfg, cfg.classes(target.dataset), run.checkpoint, seed=0)
    train = load_data(
        DataConfig(
            target.dataset,
            datapath=target.datapath,
            train_subset=config.train_subset,
            test=False,
            data_args=target.data_args,
        ),
        data,
    ).train
    h = Hessian(model, train, Loss(config.loss_name), batch_size=config.batch_size, dtype=config.dtype,
                device=target.device)  # fmt: skip
    return model, train, h


def _curvature(
    run: Run, target: Target, config: MeasureConfig, data: Data, hessian_directions: str | None, keys
) -> dict:
    """The measures ``keys`` (scorecard keys; others skipped) on the Hessian of the training loss on ``data``
    (or its subset), through the curvature suite; ``hessian_directions``: the direction file of the
    Hessian surface (None: no figures' extras, the top-eigenvector curve's eigenvalue and the density)."""
    model, train, h = _model_and_hessian(run, target, config, data)
    suite = config.suite()
    wanted = [k for k in (*SUITE_NAMES, *SHARPNESS) if k in keys or k == "layers" and "lambda_max" in keys]
    found = {key: one(h, SUITE_NAMES.get(key) or SHARPNESS[key], suite) for key in wanted}
    if "lambda_max" in found:
        found["lambda_max"] = found["lambda_max"]["top"]
    extras = hessian_directions is not None
    if extras:
        eigenvalue = _eigenvalue(model, train, config, target.device, direction_file.read(hessian_directions).x)
    started = time.perf_counter()
    density = one(h, "density", suite) if config.density_runs and extras else None
    density_s = time.perf_counter() - started
    values = {key: (r.values[0] if key == "lambda_max" else r.value) for key, r in found.items() if key != "layers"}
    errors = {
        key: r.stderr
        for key, r in found.items()
        if key not in ("lambda_max", "layers") and math.isfinite(getattr(r, "stderr", math.nan))
    }
    details = {key: ([x.record() for x in r] if key == "layers" else r.record()) for key, r in found.items()}
    return {
        "values": values,
        "errors": errors,
        "details": {
            **details,
            **(
                {"hessian_1d": {"file": HESSIAN_1D, "eigenvalue": eigenvalue, "scale": HESSIAN_SCALE}} if extras else {}
            ),
            **({"density": {**density.record(), "dtype": config.dtype}} if density is not None else {}),
            "parameters": h.dim,
            "samples": len(train),
            "loss": h.loss_and_gradient()[0],
        },
        "density_seconds": density_s,
    }


def flags(result: dict) -> dict[str, list[str]]:
    """A run's sharpness searches that flagged their own values (unconverged, no rise above the loss's
    rounding): measure key -> the notes."""
    details = result.get("details", {})
    return {key: list(notes) for key in SHARPNESS if (notes := (details.get(key) or {}).get("notes"))}


def flagged(result: dict) -> list[str]:
    """The flags of a run's searches, at its final weights and at matched loss (``matched_flags``), one
    line each: the report prints and writes them beside the table."""
    name = result["run"]["name"]
    lines = [f"{name}: {BY_KEY[key].label}: {note}" for key, notes in flags(result).items() for note in notes]
    return lines + [
        f"{name} at matched loss: {BY_KEY[key].label}: {note}"
        for key, notes in (result.get("matched_flags") or {}).items()
        for note in notes
    ]


def measure_run(run: Run, target: Target, config: MeasureConfig, folder: str, extras: bool = True) -> dict:
    """Every measure of ``run`` (read back when ``folder`` already holds them): a dict with ``values``
    (by the keys of ``MEASURES``), ``errors`` (standard errors where a measure has one), ``details``.
    ``extras``: also what only the figures draw, the top-eigenvector 1-D surface and the spectral
    density (a matched-loss checkpoint gives values only)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, MEASURES_FILE)
    checkpoint_sha = sha256_file(run.checkpoint)
    found = cached(path, config, checkpoint_sha, run, target)
    if found is not None and (found.get("extras", True) or not extras):  # the same weights, measured the same
        return {**found, "run": run_record(run)}  # way; how the manifest labels them is today's
    started = time.perf_counter()
    data = load_named(target.dataset, target.datapath, args=target.data_args)
    one, two = _surfaces(run, target, config, data, folder)
    surfaces_done = time.perf_counter()
    hessian_directions = None
    if extras:
        along = DirectionConfig(hessian=True)
        _, hessian_directions = _surface(
            run, target, config, data, os.path.join(folder, HESSIAN_1D), Grid.parse(config.grid_1d), along
        )
    hessian_done = time.perf_counter()
    keys = [m.key for m in MEASURES if m.key not in config.skip]
    curvature = _curvature(run, target, config, data, hessian_directions, keys)
    density_s = curvature["density_seconds"]

    train_error, test_error = 100.0 - _centre(one, "train_acc"), 100.0 - _centre(one, "test_acc")
    values = {
        "train_loss": _centre(one, "train_loss"),
        "test_loss": _centre(one, "test_loss"),
        "train_error": train_error,
        "test_error": test_error,
        "gap": test_error - train_error,
        "surface_rise": mean_rise_2d(two, "train_loss", config.radius),
    }
    values.update(curvature["values"])
    result = {
        "run": run_record(run),
        "target": {k: v for k, v in asdict(target).items() if k != "threads"},
        "checkpoint_sha256": checkpoint_sha,
        "settings": config.record(),
        "extras": extras,
        "values": {m.key: float(values.get(m.key, math.nan)) for m in MEASURES},  # skipped: NaN
        "errors": curvature["errors"],
        "details": curvature["details"],
        "seconds": {
            "surfaces": surfaces_done - started,
            "hessian_1d": hessian_done - surfaces_done,
            "curvature": time.perf_counter() - hessian_done - density_s,
            "density": density_s,
        },
    }
    result[RECORD_DIGEST] = digest(json.loads(json.dumps(result, default=float)))  # of the record as read back
    write_file(path, (json.dumps(result, indent=2, default=float) + "\n").encode())
    return result


LIGHT = ("lambda_max", "adaptive_sharpness")  # what a run is measured by along its training (sharpness_path)


def measure_light(run: Run, target: Target, config: MeasureConfig, folder: str, keys=LIGHT) -> dict:
    """``keys`` of ``run`` (scorecard keys of the curvature suite's measures) and its training loss, with
    no surface: the few numbers drawn against the training loss along a run's path (read back when
    ``folder`` holds them, as ``measure_run``'s are)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, MEASURES_FILE)
    checkpoint_sha = sha256_file(run.checkpoint)
    found = cached(path, config, checkpoint_sha, run, target)
    if found is not None and list(found.get("light") or []) == list(keys):
        return {**found, "run": run_record(run)}
    data = load_named(target.dataset, target.datapath, args=target.data_args)
    curvature = _curvature(run, target, config, data, None, keys)
    result = {
        "run": run_record(run),
        "target": {k: v for k, v in asdict(target).items() if k != "threads"},
        "checkpoint_sha256": checkpoint_sha,
        "settings": config.record(),
        "light": list(keys),
        "values": {"train_loss": float(curvature["details"]["loss"]), **curvature["values"]},
        "errors": curvature["errors"],
        "details": curvature["details"],
    }
    result[RECORD_DIGEST] = digest(json.loads(json.dumps(result, default=float)))
    write_file(path, (json.dumps(result, indent=2, default=float) + "\n").encode())
    return result


__all__ = [
    "LIGHT",
    "measure_light",
    "MeasureConfig",
    "Target",
    "measure_run",
    "MEASURES_FILE",
    "HESSIAN_1D",
]
