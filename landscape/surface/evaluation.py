"""The evaluator: the quantities of a model at grid points ``origin + a*dx + b*dy``.

``Evaluator.evaluate(points)`` maps an ``(n, 2)`` array of coefficients to an ``(n, q)`` array of values
(``Evaluator.quantities``): the mean loss and the accuracy of each data set (and, asked for, the standard
error of the loss, the Hessian's extreme eigenvalues).  The per-set sums come from an evaluation kernel
(``surface.kernels``), chosen by name; each point's weights are made fresh from the origin, so a point's
value does not depend on which rank computes it or in what order.  Nothing here knows about MPI or files.
"""

from __future__ import annotations

import copy
import math
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from .. import checks
from ..curvature import Hessian, extremes
from ..data import Samples
from ..errors import ConfigError, EvaluationError, LandscapeError, describe
from ..losses import BUILTIN as BUILTIN_LOSSES
from ..losses import Loss, check_labels
from ..plugins import is_plugin
from . import batchnorm, kernels
from .quantities import Quantity, curvature_quantities, forward_quantities
from .tuning import AUTO

# bfloat16 and float16: the model and the data in that type (not autocast, which keeps float32 weights
# and would not show what the low precision does to the surface); losses are taken in float32 or
# better from the outputs.  float16 is for GPUs: CPUs have few float16 kernels and run it slowly.
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
LOW_PRECISION = ("bfloat16", "float16")
# Hessian-vector products of a curvature map take batches of at least this many samples: a product is a
# double backward, whose per-batch overhead dominates small batches (its value does not depend on it).
HESSIAN_BATCH = 2048


@dataclass(frozen=True)
class EvaluationConfig:
    """How a point is evaluated: loss, kernel, batch size, points per pass, precision, BatchNorm statistics.

    ``kernel``, ``batch_size`` and ``points_per_pass`` default to ``auto``: measured at the start, in time
    proportional to the surface's (``surface.tuning``)."""

    loss_name: str = "crossentropy"
    kernel: str = AUTO  # one of kernels.CHOICES
    batch_size: int | str = AUTO
    points_per_pass: int | str = AUTO  # grid points evaluated together in one call of the kernel
    dtype: str = "float32"
    bn: str | None = None  # eval | states | recalibrate; None: states with states directions, else eval
    bn_batches: int = 10
    curvature: bool = False  # also the Hessian's extreme eigenvalues at every point (curvature maps)
    curvature_tol: float = 1e-3  # Lanczos tolerance of those eigenvalues (relative)

    def __post_init__(self):
        if not is_plugin(self.loss_name) and self.loss_name not in BUILTIN_LOSSES:
            raise ConfigError(
                "loss_name", self.loss_name, f"one of {', '.join(BUILTIN_LOSSES)} or package.module:callable"
            )
        if self.kernel not in kernels.CHOICES:
            raise ConfigError("kernel", self.kernel, f"one of {', '.join(kernels.CHOICES)}")
        for name in ("batch_size", "bn_batches", "points_per_pass"):
            value = getattr(self, name)
            if value == AUTO and name != "bn_batches":
                continue
            checks.whole(name, value, expected="a positive whole number" + (" or auto" if name != "bn_batches" else ""))
        if not isinstance(self.curvature, bool):
            raise ConfigError("curvature", self.curvature, "true or false")
        if (
            isinstance(self.curvature_tol, bool)
            or not isinstance(self.curvature_tol, (int, float))
            or not 0 < self.curvature_tol < 1
        ):
            raise ConfigError("curvature_tol", self.curvature_tol, "a number between 0 and 1", literal=True)
        if self.dtype not in DTYPES:
            raise ConfigError("dtype", self.dtype, f"one of {', '.join(DTYPES)}")
        batchnorm.resolve(self.bn, None)

    @property
    def resolved(self) -> bool:
        return AUTO not in (self.kernel, self.batch_size, self.points_per_pass)


class Evaluator:
    """The quantities of ``model`` at ``origin + a*dx + b*dy`` on fixed tensors of data.

    ``origin`` and the directions are dicts keyed by the names of the tensors they move (parameters, or
    the state_dict for ``states`` directions).  ``cfg`` must name a kernel, a batch size and points per
    pass (``auto`` is resolved by ``surface.tuning`` first).  ``bn`` is the resolved BatchNorm policy
    (``surface.batchnorm``); ``stderr`` adds the standard error of each mean loss (built-in losses only).
    The model is copied; the caller's is never changed.
    """

    def __init__(
        self,
        model: nn.Module,
        origin: dict,
        dx: dict,
        dy: dict | None,
        data: dict[str, Samples],
        loss,
        cfg: EvaluationConfig = EvaluationConfig(kernel="reference", batch_size=128, points_per_pass=1),
        bn: str = "eval",
        stderr: bool = False,
        device: str = "cpu",
    ):
        if not cfg.resolved:
            raise ValueError(
                "the evaluator needs a kernel, a batch size and points per pass; resolve auto first (surface.tuning)"
            )
        self.loss = loss if isinstance(loss, Loss) else Loss(loss)
        self.cfg = cfg
        self.dtype = DTYPES[cfg.dtype]
        self.device = torch.device(device)
        with_accuracy = all(s.is_classification for s in data.values())
        self.problem = kernels.Problem.of(
            model,
            origin,
            [d for d in (dx, dy) if d is not None],
            {name: (s.inputs, s.targets) for name, s in data.items()},
            self.loss,
            self.dtype,
            self.device,
            with_accuracy,
            bn,
            cfg.bn_batches,
        )
        self.stderr = stderr and self.loss.per_sample  # a callable's batch mean has no per-sample spread
        self.quantities: list[Quantity] = forward_quantities(list(data), with_accuracy, self.stderr)
        if cfg.curvature:
            self.quantities += curvature_quantities()
        self.unconverged = 0  # points whose eigenvalues missed the Lanczos tolerance (their estimates are kept)
        self.counts = {name: samples.targets.numel() for name, samples in data.items()}
        self.label_range = {
            name: (int(s.targets.min()), int(s.targets.max()))
            for name, s in data.items()
            if s.is_classification and s.targets.numel()
        }
        self.sizes = {name: len(samples) for name, samples in data.items()}
        try:
            self.kernel = kernels.make(cfg.kernel, self.problem, cfg.batch_size, cfg.points_per_pass)
        except ValueError as exc:
            raise ConfigError("kernel", cfg.kernel, f"a kernel that can evaluate this surface ({exc})") from None
        self.note = ""

    @property
    def model(self) -> nn.Module:
        return self.problem.model

    @property
    def sets(self):
        return self.problem.sets

    def rebatched(self, batch_size: int) -> Evaluator:
        """This evaluator in batches of ``batch_size``, sharing its model, data and compiled code (tuning)."""
        other = copy.copy(self)
        other.cfg = replace(self.cfg, batch_size=batch_size)
        other.kernel = self.kernel.rebatched(batch_size)
        return other

    @property
    def points_per_pass(self) -> int:
        return self.cfg.points_per_pass

    @property
    def names(self) -> list[str]:
        return [q.name for q in self.quantities]

    @torch.no_grad()
    def weights(self, a: float, b: float) -> dict[str, torch.Tensor]:
        """The tensors the plane moves at ``(a, b)``: ``origin + a*dx + b*dy`` in float64, rounded once into
        the model's dtype."""
        coefficients = torch.tensor([[a, b]], dtype=torch.float64, device=self.device)
        return {name: t.clone() for name, t in self.problem.weights(coefficients)[0].items()}

    def _curvature(self, a: float, b: float) -> np.ndarray:
        """λmax, λmin and |λmin/λmax| of the Hessian of the mean training loss at the point (its weights,
        and BatchNorm statistics where the point moves them), each end by its own Lanczos run."""

        tensors = self.problem.recalibrated(self.weights(a, b))
        inputs, targets = self.sets.data["train"]
        exact = self.dtype in (torch.float32, torch.float64)  # low precision: the Hessian in float32
        with torch.inference_mode(False):  # the point's tensors are cloned out of inference mode for autograd
            hessian = Hessian(
                self.model,
                Samples(inputs, targets),
                self.loss,
                batch_size=max(self.cfg.batch_size, HESSIAN_BATCH),
                dtype="float64" if self.dtype == torch.float64 else "float32",
                device=str(self.device),
                state=tensors,
                copy_model=not exact,
            )
            ends = extremes(hessian, k=1, which="both", tol=self.cfg.curvature_tol, seed=0)
        top, bottom = ends["top"].values[0], ends["bottom"].values[0]
        self.unconverged += not (ends["top"].converged and ends["bottom"].converged)
        ratio = abs(bottom / top) if top != 0 else math.nan
        return np.array([top, bottom, ratio])

    def _quantities(self, sums: torch.Tensor) -> np.ndarray:
        """Points' quantities ``(..., q)``, in the order of ``self.quantities``, from their per-set sums
        ``(..., sets, 3)``, all points at once."""
        sums = sums.cpu().numpy()
        out = []
        for s, (name, n) in enumerate(self.sizes.items()):
            total, squares, correct = sums[..., s, 0], sums[..., s, 1], sums[..., s, 2]
            mean = total / n
            out.append(mean)
            if self.stderr:  # sample standard deviation of the per-sample losses / sqrt(n)
                with np.errstate(invalid="ignore", over="ignore"):  # a diverged point's inf - inf: NaN, silently
                    variance = (
                        np.maximum(squares - n * mean * mean, 0.0) / (n - 1) if n > 1 else np.full_like(mean, np.nan)
                    )
                out.append(np.sqrt(variance / n))
            if self.problem.with_accuracy:
                out.append(100.0 * correct / self.counts[name])  # NaN stays NaN
        return np.stack(out, axis=-1).astype(np.float64, copy=False)

    @torch.inference_mode()
    def probe(self) -> None:
        """The kernel on a few samples of each data set at the centre, through the loss: a model that does
        not fit its data (its output shape, the number of classes) or that the kernel cannot run is
        reported before any file is made, not at the first grid point."""
        few = {name: Samples(inputs[:2], targets[:2]) for name, (inputs, targets) in self.sets.data.items()}
        weights = self.weights(0.0, 0.0)
        try:
            for name, samples in few.items():
                if not samples.targets.is_floating_point():  # the labels of the whole set against the model's classes
                    output = functional_call(self.model, weights, (samples.inputs,))
                    check_labels(self.loss.name, output, *self.label_range[name])
            origin = self.problem.layout.views(self.problem.origin)
            plane = [self.problem.layout.views(row) for row in self.problem.plane]
            trial = kernels.Problem.of(
                self.model,
                origin,
                plane,
                {n: (s.inputs, s.targets) for n, s in few.items()},
                self.loss,
                self.dtype,
                self.device,
                self.problem.with_accuracy,
                "recalibrate" if self.problem.recalibrator else "eval",
                self.cfg.bn_batches,
            )
            if self.kernel.name != "compiled":  # compiling for two samples would cost seconds for nothing
                kernels.make(self.kernel.name, trial, 2, 2)(
                    torch.zeros((2, 2), dtype=torch.float64, device=self.device)
                )
            else:
                kernels.make("reference", trial, 2, 1)(torch.zeros((1, 2), dtype=torch.float64, device=self.device))
        except LandscapeError:
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code, or what a kernel rejects
            kind = f" with kernel {self.kernel.name}" if self.kernel.name != "reference" else ""
            raise EvaluationError(
                f"the model cannot be evaluated on the data at the centre{kind}: {describe(exc)}"
            ) from exc

    @torch.inference_mode()
    def evaluate(self, points: np.ndarray) -> np.ndarray:
        """Values ``(n, q)`` at the ``(n, 2)`` coefficients ``points``, one row per point, in passes of at
        most ``points_per_pass``."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        out = np.empty((len(points), len(self.quantities)))
        step = self.points_per_pass
        for start in range(0, len(points), step):
            chunk = points[start : start + step]
            with _naming_failures(chunk):
                values = self._quantities(self.kernel(torch.from_numpy(chunk).to(self.device)))
                if self.cfg.curvature:
                    values = np.concatenate(
                        [values, np.stack([self._curvature(float(a), float(b)) for a, b in chunk])], axis=1
                    )
            out[start : start + len(chunk)] = values
        return out

    def __call__(self, a: float, b: float = 0.0) -> np.ndarray:
        """The values at one point ``(a, b)``."""
        return self.evaluate(np.array([[a, b]]))[0]


def _where(points: np.ndarray) -> str:
    """The point(s) of a failed evaluation, for its message."""
    more = f" and {len(points) - 1} more points" if len(points) > 1 else ""
    return f"(x={points[0, 0]:g}, y={points[0, 1]:g}){more}"


@contextmanager
def _naming_failures(points: np.ndarray):
    """User code (model, loss) that fails at ``points`` becomes an ``EvaluationError`` naming the
    point(s) (described only then, not on every call); a plug-in's ``sys.exit`` must neither end the
    job nor look like success."""
    try:
        yield
    except LandscapeError:
        raise
    except SystemExit as exc:
        raise EvaluationError(
            f"evaluating the model at {_where(points)} failed: the model or loss called sys.exit({exc.code!r})"
        ) from None
    except Exception as exc:  # noqa: BLE001 - user code
        raise EvaluationError(f"evaluating the model at {_where(points)} failed: {describe(exc)}") from exc
