"""What a scorecard measures for each trained network, and how.

For one checkpoint, in its own folder of the report (``<out>/runs/<run>/``):

- a 1-D and a 2-D filter-normalized surface (``landscape surface``'s job, its file schema and resume),
  whose centre gives the train and test loss and error of the network, BatchNorm in eval mode, and
  whose 2-D grid gives the mean training-loss rise within ``radius`` of the minimum;
- on the training set (all of it, or a seeded ``train_subset``): the Hessian's largest eigenvalue
  (Lanczos), its trace (Hutchinson), Keskar's ε-sharpness, adaptive worst-case sharpness, and the
  mean loss rise at ``radius`` along ``directions`` random filter-normalized directions
  (``landscape.curvature``).

Everything lands in ``measures.json`` with the settings and the checkpoint's SHA-256: a rerun with
the same settings reads it back, one with other settings or a changed checkpoint is refused rather
than mixing two computations in one table.  Nothing here knows about ranks.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass

import numpy as np

from .. import checks
from ..curvature import Hessian, extreme, hutchinson
from ..curvature import sharpness as measures
from ..data import DataConfig, load_data
from ..errors import ConfigError, InputError, MismatchError
from ..grid import DEFAULT_X, Axis, Grid
from ..io.atomic import write_file
from ..io.surface_file import read
from ..losses import Loss
from ..models import ModelConfig, load_model
from ..parallel.comm import SerialComm
from ..provenance import sha256_file
from ..surface.config import RunConfig, SurfaceJob
from ..surface.direction_set import DirectionConfig
from ..surface.evaluation import EvaluationConfig
from ..surface.job import run_surface
from ..surface.rise import mean_rise_2d
from .runs import Run

MEASURES_FILE = "measures.json"


@dataclass(frozen=True)
class Measure:
    key: str
    label: str  # plain text and Markdown
    latex: str
    sharpness: bool  # a measure of the minimum's shape, which the verdict weighs; else an outcome of training


MEASURES = (
    Measure("train_loss", "train loss", "train loss", False),
    Measure("test_loss", "test loss", "test loss", False),
    Measure("train_error", "train error %", r"train err.\ (\%)", False),
    Measure("test_error", "test error %", r"test err.\ (\%)", False),
    Measure("gap", "gap (points)", r"gap (pts)", False),
    Measure("lambda_max", "λmax", r"$\lambda_{\max}$", True),
    Measure("trace", "trace", r"$\mathrm{tr}\,H$", True),
    Measure("epsilon_sharpness", "ε-sharpness", r"$\epsilon$-sharpness", True),
    Measure("adaptive_sharpness", "adaptive sharpness", "adaptive", True),
    Measure("average_rise", "average rise", "avg.\\ rise", True),
    Measure("surface_rise", "2-D rise", "2-D rise", True),
)
BY_KEY = {m.key: m for m in MEASURES}


def _plain(v: float) -> str:
    """``-1`` for -1.0, the exact repr otherwise: one spelling per grid."""
    return f"{v:g}" if float(f"{v:g}") == v else repr(v)


@dataclass(frozen=True)
class MeasureConfig:
    """The settings of every measure: recorded with the results, and equal for every run of a report."""

    grid_1d: str = DEFAULT_X  # the 1-D surface (MIN:MAX:NUM, must hold 0: the trained network)
    grid_2d: str = "-1:1:21"  # the 2-D surface, the same along x and y
    radius: float = 0.5  # the average rise and the 2-D rise: distance from the minimum
    directions: int = 20  # the average rise: random filter-normalized directions
    trace_samples: int = 20  # Hutchinson: Rademacher vectors
    tol: float = 1e-3  # Lanczos: relative tolerance of λmax
    rho: float = measures.SharpnessConfig.rho  # adaptive sharpness: the box |δ| <= rho |w|
    epsilon: float = measures.SharpnessConfig.epsilon  # Keskar's box |δ| <= epsilon (|w| + 1)
    subspace: int = measures.SharpnessConfig.subspace  # Keskar's random subspace dimension; 0: the full space
    method: str = measures.SharpnessConfig.method  # the worst-case searches (curvature.search): apgd or lbfgsb
    iterations: int = measures.SharpnessConfig.iterations  # ... per start
    restarts: int = measures.SharpnessConfig.restarts  # ... seeded random starts besides δ = 0
    search_tol: float = measures.SharpnessConfig.search_tol  # ... converged: the gain of the last fifth
    dtype: str = "float32"  # the Hessian products and sharpness searches
    batch_size: int = 512  # samples per forward pass (surfaces and products)
    train_subset: int | None = None  # a seeded subset of the training set for everything but the test values
    loss_name: str = "crossentropy"
    seed: int = 0  # directions, start and trace vectors, subspace

    def __post_init__(self):

        for name in ("radius", "tol", "rho", "epsilon"):
            checks.number(name, getattr(self, name), above=0)
        for name in ("grid_1d", "grid_2d"):
            axis = Axis.parse(getattr(self, name), name)
            if not np.any(axis.coordinates() == 0):
                raise ConfigError(
                    name,
                    getattr(self, name),
                    "a grid holding 0, the trained network (MIN = -MAX and an odd NUM, e.g. -1:1:21)",
                )
            object.__setattr__(self, name, f"{_plain(axis.lo)}:{_plain(axis.hi)}:{axis.num}")  # -1.0:1:5 is -1:1:5
        grid = Axis.parse(self.grid_2d, "grid_2d")
        step = (grid.hi - grid.lo) / (grid.num - 1)
        if not step <= self.radius <= min(-grid.lo, grid.hi):
            raise ConfigError(
                "radius",
                self.radius,
                f"a radius from the 2-D grid's spacing ({step:g}) to its half "
                f"width ({min(-grid.lo, grid.hi):g}): the 2-D rise averages the grid points within it",
                literal=True,
            )
        self.sharpness()  # the searches' own checks
        for name in ("directions", "batch_size"):
            checks.whole(name, getattr(self, name))
        checks.whole("trace_samples", self.trace_samples, least=2)
        checks.whole("subspace", self.subspace, least=0, expected="0 (the full space) or a positive dimension")
        if self.train_subset is not None:
            checks.whole("train_subset", self.train_subset)
        if self.dtype not in ("float32", "float64"):
            raise ConfigError("dtype", self.dtype, "float32 or float64")
        checks.whole("seed", self.seed, least=0)

    def record(self) -> dict:
        return asdict(self)

    def sharpness(self) -> measures.SharpnessConfig:
        """The sharpness measures' settings (``curvature.sharpness``), from this report's."""
        return measures.SharpnessConfig(
            rho=self.rho,
            epsilon=self.epsilon,
            subspace=self.subspace,
            radius=self.radius,
            directions=self.directions,
            method=self.method,
            iterations=self.iterations,
            restarts=self.restarts,
            search_tol=self.search_tol,
            seed=self.seed,
        )


@dataclass(frozen=True)
class Target:
    """Where one run's network and data come from (the report's flags fill what the run does not say)."""

    model: str
    dataset: str
    datapath: str | None = None
    num_classes: int | None = None
    device: str = "cpu"  # this rank's device, already chosen
    threads: int | None = None


TARGET_IDENTITY = ("model", "dataset", "datapath", "num_classes")


def _cached(path: str, config: MeasureConfig, checkpoint_sha: str, run: Run, target: Target) -> dict | None:
    if not os.path.exists(path):
        return None
    try:
        with open(path) as handle:
            found = json.load(handle)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} cannot be read ({exc}); remove it to measure {run.name} again") from None
    stored = found.get("settings", {})
    try:
        same = MeasureConfig(**stored) == config
    except (TypeError, ConfigError):
        same = False
    if not same:
        now = config.record()
        changed = [f"{k} {stored.get(k)!r} there, {now[k]!r} now" for k in now if stored.get(k) != now[k]]
        raise MismatchError(
            f"{path} was measured with other settings ({'; '.join(changed) or 'unknown'}); "
            "choose another out or remove that folder to measure again"
        )
    then = {k: found.get("target", {}).get(k) for k in TARGET_IDENTITY}
    if then != {k: getattr(target, k) for k in TARGET_IDENTITY}:
        raise MismatchError(
            f"{path} was measured as {then['model']} on {then['dataset']} (num_classes "
            f"{then['num_classes']}, datapath {then['datapath']}), not as {target.model} on "
            f"{target.dataset}; choose another out or remove that folder to measure again"
        )
    if found.get("checkpoint_sha256") != checkpoint_sha:
        raise MismatchError(
            f"{path} was measured from another checkpoint than {run.checkpoint} (its SHA-256 "
            "differs: retrained?); choose another out or remove that folder to measure again"
        )
    return found


def _surfaces(run: Run, target: Target, config: MeasureConfig, folder: str):

    out = []
    for name, grid in (
        ("surface_1d.h5", Grid.parse(config.grid_1d)),
        ("surface_2d.h5", Grid.parse(config.grid_2d, config.grid_2d)),
    ):
        job = SurfaceJob(
            model=ModelConfig(target.model, num_classes=target.num_classes, model_file=run.checkpoint),
            grid=grid,
            data=DataConfig(target.dataset, datapath=target.datapath, train_subset=config.train_subset),
            directions=DirectionConfig(xnorm="filter", xignore="biasbn", seed=config.seed),
            evaluation=EvaluationConfig(loss_name=config.loss_name, batch_size=config.batch_size),
            run=RunConfig(
                surf_file=os.path.join(folder, name),
                threads=target.threads,
                quiet=True,
                device=target.device,
                argv=("landscape", "report"),
            ),
        )
        run_surface(job, SerialComm())
        out.append(read(os.path.join(folder, name)))
    return out


def _centre(surface, name: str) -> float:
    if name not in surface.values:
        return math.nan
    return float(surface.values[name][np.flatnonzero(surface.x == 0)[0]])


def _curvature(run: Run, target: Target, config: MeasureConfig) -> dict:

    cfg = ModelConfig(target.model, num_classes=target.num_classes, model_file=run.checkpoint)
    model = load_model(cfg, cfg.classes(target.dataset), run.checkpoint, seed=0)
    data = load_data(DataConfig(target.dataset, datapath=target.datapath, train_subset=config.train_subset, test=False))
    h = Hessian(
        model,
        data.train,
        Loss(config.loss_name),
        batch_size=config.batch_size,
        dtype=config.dtype,
        device=target.device,
    )
    top = extreme(h, k=1, end="top", tol=config.tol, seed=config.seed)
    trace = hutchinson(h, samples=config.trace_samples, seed=config.seed)
    settings = config.sharpness()
    eps = measures.compute(h, "epsilon", settings)
    adaptive = measures.compute(h, "adaptive", settings)
    average = measures.compute(h, "average", settings)
    return {
        "values": {
            "lambda_max": top.values[0],
            "trace": trace.value,
            "epsilon_sharpness": eps.value,
            "adaptive_sharpness": adaptive.value,
            "average_rise": average.value,
        },
        "errors": {"trace": trace.stderr, "average_rise": average.stderr},
        "details": {
            "lambda_max": top.record(),
            "trace": trace.record(),
            "epsilon_sharpness": eps.record(),
            "adaptive_sharpness": adaptive.record(),
            "average_rise": average.record(),
            "parameters": h.dim,
            "samples": len(data.train),
        },
    }


def flagged(result: dict) -> list[str]:
    """What a run's sharpness searches said against their own values (unconverged, no rise above the
    loss's rounding), one line each: the scorecard prints and writes them beside the table."""
    details = result.get("details", {})
    return [
        f"{result['run']['name']}: {BY_KEY[key].label}: {note}"
        for key in ("epsilon_sharpness", "adaptive_sharpness")
        for note in (details.get(key) or {}).get("notes", [])
    ]


def measure_run(run: Run, target: Target, config: MeasureConfig, folder: str) -> dict:
    """Every measure of ``run`` (read back when ``folder`` already holds them): a dict with ``values``
    (by the keys of ``MEASURES``), ``errors`` (standard errors where a measure has one), ``details``."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, MEASURES_FILE)
    checkpoint_sha = sha256_file(run.checkpoint)
    found = _cached(path, config, checkpoint_sha, run, target)
    if found is not None:  # the same weights, measured the same way; how the manifest labels them is today's
        return {**found, "run": asdict(run)}
    started = time.perf_counter()
    one, two = _surfaces(run, target, config, folder)

    train_error, test_error = 100.0 - _centre(one, "train_acc"), 100.0 - _centre(one, "test_acc")
    values = {
        "train_loss": _centre(one, "train_loss"),
        "test_loss": _centre(one, "test_loss"),
        "train_error": train_error,
        "test_error": test_error,
        "gap": test_error - train_error,
        "surface_rise": mean_rise_2d(two, "train_loss", config.radius),
    }
    surfaces_s = time.perf_counter() - started
    curvature = _curvature(run, target, config)
    values.update(curvature["values"])
    result = {
        "run": asdict(run),
        "target": {k: v for k, v in asdict(target).items() if k != "threads"},
        "checkpoint_sha256": checkpoint_sha,
        "settings": config.record(),
        "values": {m.key: float(values[m.key]) for m in MEASURES},
        "errors": curvature["errors"],
        "details": curvature["details"],
        "seconds": {"surfaces": surfaces_s, "curvature": time.perf_counter() - started - surfaces_s},
    }
    write_file(path, (json.dumps(result, indent=2, default=float) + "\n").encode())
    return result


__all__ = ["Measure", "MEASURES", "BY_KEY", "MeasureConfig", "Target", "measure_run", "MEASURES_FILE"]
