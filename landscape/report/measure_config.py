"""The settings of every measure a scorecard makes (``MeasureConfig``: recorded with each run's results and
equal for every run of a report, checked here) and where one run's network and data come from
(``Target``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from .. import checks
from ..curvature import sharpness as measures
from ..curvature.suite import SuiteConfig
from ..errors import ConfigError
from ..grid import DEFAULT_X, Axis
from ..surface.evaluation import EvaluationConfig
from .catalogue import SHARPNESS

SUITE_NAMES = {
    "lambda_max": "eigenvalues",
    "trace": "trace",
    "relative_flatness": "relative_flatness",
    "fisher_rao": "fisher_rao",
    "noise_scale": "noise_scale",
    "layers": "layers",  # the per-layer blocks: details only
}


def _plain(v: float) -> str:
    """``-1`` for -1.0, the exact repr otherwise: one spelling per grid."""
    return f"{v:g}" if float(f"{v:g}") == v else repr(v)


@dataclass(frozen=True)
class MeasureConfig:
    """The settings of every measure: recorded with the results, and equal for every run of a report."""

    grid_1d: str = DEFAULT_X  # the 1-D surface (MIN:MAX:NUM, must hold 0: the trained network)
    grid_2d: str = "-1:1:41"  # the 2-D surface, the same along x and y (41 x 41: smooth contours)
    radius: float = 0.5  # the average rise and the 2-D rise: distance from the minimum
    directions: int = 20  # the average rise: random filter-normalized directions
    trace_samples: int = 20  # Hutchinson: Rademacher vectors
    tol: float = 1e-3  # Lanczos: relative tolerance of λmax
    density_steps: int = 40  # the spectral density (stochastic Lanczos quadrature): Lanczos steps per run
    density_runs: int = 2  # ... random start vectors; 0: no density
    rho: float = measures.SharpnessConfig.rho  # adaptive, its average and m-sharpness: |δ| <= rho |w|
    rho_l2: float = measures.SharpnessConfig.rho_l2  # adaptive ℓ2: the ball ‖δ / (|w| + eta)‖₂ <= rho_l2
    eta: float = measures.SharpnessConfig.eta
    draws: int = measures.SharpnessConfig.draws  # average adaptive: Gaussian draws
    m: int = measures.SharpnessConfig.m  # m-sharpness: samples per batch
    epsilon: float = measures.SharpnessConfig.epsilon  # Keskar's box |δ| <= epsilon (|w| + 1)
    subspace: int = measures.SharpnessConfig.subspace  # Keskar's random subspace dimension; 0: the full space
    method: str = measures.SharpnessConfig.method  # the worst-case searches (curvature.search): apgd or lbfgsb
    iterations: int = measures.SharpnessConfig.iterations  # ... per start
    restarts: int = measures.SharpnessConfig.restarts  # ... seeded random starts besides δ = 0
    search_tol: float = measures.SharpnessConfig.search_tol  # ... converged: the gain of the last fifth
    extensions: int = measures.SharpnessConfig.extensions  # ... more rounds for a start still rising
    dtype: str = "float32"  # the Hessian products and sharpness searches
    batch_size: int = 512  # samples per forward pass (surfaces and products)
    kernel: str = "auto"  # the surfaces' kernel (landscape surface --kernel)
    points_per_pass: int | str = "auto"  # the surfaces' grid points per call of the kernel
    train_subset: int | None = None  # a seeded subset of the training set for everything but the test values
    loss_name: str = "crossentropy"
    seed: int = 0  # directions, start and trace vectors, subspace
    skip: tuple[str, ...] = ()  # measures not computed (NaN in the tables): a study's budget, say why there

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
        checks.whole("density_steps", self.density_steps)
        checks.whole("density_runs", self.density_runs, least=0, expected="0 (no density) or a positive number of runs")
        checks.whole("subspace", self.subspace, least=0, expected="0 (the full space) or a positive dimension")
        if self.train_subset is not None:
            checks.whole("train_subset", self.train_subset)
            if self.m > self.train_subset:
                raise ConfigError(
                    "m",
                    self.m,
                    f"at most train_subset ({self.train_subset}): m-sharpness takes batches of m",
                    literal=True,
                )
        if self.dtype not in ("float32", "float64"):
            raise ConfigError("dtype", self.dtype, "float32 or float64")
        checks.whole("seed", self.seed, least=0)
        skip = (self.skip,) if isinstance(self.skip, str) else tuple(self.skip or ())
        for key in skip:
            if not (key in SHARPNESS or key in SUITE_NAMES):
                raise ConfigError(
                    "skip", key, f"measures of the curvature suite among {', '.join([*SUITE_NAMES, *SHARPNESS])}"
                )
        object.__setattr__(self, "skip", tuple(dict.fromkeys(skip)))
        self.evaluation()  # the surfaces' own checks

    def record(self) -> dict:
        return json.loads(json.dumps(asdict(self)))  # plain values, as measures.json reads back (lists)

    def evaluation(self) -> EvaluationConfig:
        """How the surfaces evaluate their points (``surface.evaluation``), from this report's settings."""
        return EvaluationConfig(
            loss_name=self.loss_name,
            batch_size=self.batch_size,
            kernel=self.kernel,
            points_per_pass=self.points_per_pass,
        )

    def suite(self) -> SuiteConfig:
        """The curvature measures' settings (``curvature.suite``): λmax to ``tol``, the trace, relative
        flatness and the layers' traces from ``trace_samples`` vectors, the searches as ``sharpness``."""
        return SuiteConfig(
            k=1,
            which="top",
            tol=self.tol,
            trace_samples=self.trace_samples,
            density_steps=self.density_steps,
            density_runs=max(1, self.density_runs),
            layer_samples=self.trace_samples,
            flatness_samples=self.trace_samples,
            sharpness=self.sharpness(),
            seed=self.seed,
        )

    def sharpness(self) -> measures.SharpnessConfig:
        """The sharpness measures' settings (``curvature.sharpness``), from this report's."""
        return measures.SharpnessConfig(
            rho=self.rho,
            rho_l2=self.rho_l2,
            eta=self.eta,
            draws=self.draws,
            m=self.m,
            epsilon=self.epsilon,
            subspace=self.subspace,
            radius=self.radius,
            directions=self.directions,
            method=self.method,
            iterations=self.iterations,
            restarts=self.restarts,
            search_tol=self.search_tol,
            extensions=self.extensions,
            seed=self.seed,
        )


@dataclass(frozen=True)
class Target:
    """Where one run's network and data come from (the report's flags fill what the run does not say)."""

    model: str
    dataset: str
    datapath: str | None = None
    num_classes: int | None = None
    model_args: str = ""  # the factories' keyword arguments (canonical JSON text; "" for none)
    data_args: str = ""
    device: str = "cpu"  # this rank's device, already chosen
    threads: int | None = None


TARGET_IDENTITY = ("model", "dataset", "datapath", "num_classes", "model_args", "data_args")
