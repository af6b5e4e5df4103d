"""The evaluation kernel: quantities of a model at grid points ``origin + a*dx + b*dy``.

``Evaluator.evaluate(points)`` maps an ``(n, 2)`` array of coefficients to an
``(n, q)`` array of values (``Evaluator.quantities``).  It is pure: each point's
weights are computed fresh from the origin, never by walking from the previous
point, and go into the model through ``torch.func.functional_call``, so no
rounding error accumulates, nothing is left behind in the model, and a point's
value does not depend on which rank computes it or in what order.  Nothing here
knows about MPI or files.
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

from ..data import Samples
from ..errors import ConfigError, EvaluationError, LandscapeError, describe
from ..plugins import is_plugin
from . import batchnorm, first_layer, last_layer
from .losses import BUILTIN as BUILTIN_LOSSES
from .losses import Loss, check_labels
from .sweep import BatchedSweep, FlatLayout, SetData, Sweep, UnrolledSweep
from .quantities import Quantity, curvature_quantities, forward_quantities

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
    """How a point is evaluated: loss, batch size, precision and BatchNorm statistics."""

    loss_name: str = "crossentropy"
    batch_size: int | str = 128     # or "auto": chosen by measurement (surface.tuning)
    dtype: str = "float32"
    bn: str | None = None     # eval | states | recalibrate; None: states with states directions, else eval
    bn_batches: int = 10
    points_per_pass: int | str = 1  # grid points evaluated together in one call (see surface.sweep), or "auto"
    compile: bool = False           # torch.compile the work of one batch (see surface.sweep)
    curvature: bool = False         # also the Hessian's extreme eigenvalues at every point (curvature maps)
    curvature_tol: float = 1e-3     # Lanczos tolerance of those eigenvalues (relative)

    def __post_init__(self):
        if not is_plugin(self.loss_name) and self.loss_name not in BUILTIN_LOSSES:
            raise ConfigError("loss_name", self.loss_name, f"one of {', '.join(BUILTIN_LOSSES)} "
                              "or package.module:callable")
        for name in ("batch_size", "bn_batches", "points_per_pass"):
            value = getattr(self, name)
            if value == "auto" and name != "bn_batches":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(name, value, "a positive whole number" + (" or auto" if name != "bn_batches"
                                                                              else ""), literal=True)
        if not isinstance(self.compile, bool):
            raise ConfigError("compile", self.compile, "true or false")
        if not isinstance(self.curvature, bool):
            raise ConfigError("curvature", self.curvature, "true or false")
        if (isinstance(self.curvature_tol, bool) or not isinstance(self.curvature_tol, (int, float))
                or not 0 < self.curvature_tol < 1):
            raise ConfigError("curvature_tol", self.curvature_tol, "a number between 0 and 1", literal=True)
        if self.dtype not in DTYPES:
            raise ConfigError("dtype", self.dtype, f"one of {', '.join(DTYPES)}")
        batchnorm.resolve(self.bn, None)


def unrolls(device: torch.device, cfg: EvaluationConfig) -> bool:
    """Whether a pass's points are made from their coefficients and run one after another in one call
    (``UnrolledSweep``): on a CPU, compiled every pass (one point or several) and eagerly passes of
    several points (at one point per pass ``Sweep`` is as fast, and faster at small batches).  On a GPU
    several points per pass go through vmap (``BatchedSweep``), which fills it."""
    return device.type == "cpu" and (cfg.compile or cfg.points_per_pass > 1)


class Evaluator:
    """The quantities of ``model`` at ``origin + a*dx + b*dy`` on fixed tensors of data.

    ``origin`` and the directions are dicts keyed by the names of the tensors they
    move (parameters, or the state_dict for ``states`` directions), kept in float64:
    a point's weights are rounded once, from the exact combination, into the
    model's dtype, so (0, 0) is the trained model and coefficient 1 along
    model2 - model is model2.  ``bn`` is the resolved BatchNorm policy
    (``surface.batchnorm``); ``stderr`` adds the standard error of each mean loss
    (built-in losses only).  The model is copied; the caller's is never changed.
    """

    def __init__(self, model: nn.Module, origin: dict, dx: dict, dy: dict | None, data: dict[str, Samples],
                 loss, cfg: EvaluationConfig = EvaluationConfig(), bn: str = "eval", stderr: bool = False,
                 device: str = "cpu"):
        self.loss = loss if isinstance(loss, Loss) else Loss(loss)
        if "auto" in (cfg.batch_size, cfg.points_per_pass):
            raise ValueError("the kernel needs a batch size and points per pass; resolve auto first (surface.tuning)")
        self.cfg = cfg
        self.dtype = DTYPES[cfg.dtype]
        self.device = torch.device(device)
        self.model = copy.deepcopy(model).to(device=device, dtype=self.dtype).eval()
        as_f64 = lambda d: {k: torch.as_tensor(v).to(device=device, dtype=torch.float64) for k, v in d.items()}
        self.origin = as_f64({k: origin[k] for k in dx})
        directions = [as_f64({k: d[k] for k in dx}) for d in (dx, dy) if d is not None]
        for name, direction in ((k, v) for d in directions for k, v in d.items()):
            if direction.numel() != self.origin[name].numel():
                raise ValueError(f"direction tensor {name!r} has shape {tuple(direction.shape)}, "
                                 f"expected that of the origin's, {tuple(self.origin[name].shape)}")
        # the directions held once, as the (1 or 2, n) rows of one matrix, every tensor flattened in the order
        # of origin (UnrolledSweep's product); dx and dy are views into it
        empty = [torch.zeros(0, dtype=torch.float64, device=device)]
        self.plane = torch.stack([torch.cat([v.flatten() for v in d.values()] or empty) for d in directions])
        layout = FlatLayout(self.origin)
        self.dx = layout.views(self.plane[0])
        self.dy = layout.views(self.plane[1]) if dy is not None else None
        self.running_vars = {name for name in dx if name.endswith("running_var")}
        tensors = {}
        for name, samples in data.items():
            inputs = samples.inputs.to(device)
            tensors[name] = (inputs.to(self.dtype) if inputs.is_floating_point() else inputs, samples.targets.to(device))
        with_accuracy = all(s.is_classification for s in data.values())
        self.stderr = stderr and self.loss.per_sample  # a callable's batch mean has no per-sample spread
        self.quantities: list[Quantity] = forward_quantities(list(data), with_accuracy, self.stderr)
        if cfg.curvature:
            self.quantities += curvature_quantities()
        self.unconverged = 0  # points whose eigenvalues missed the Lanczos tolerance (their estimates are kept)
        self.counts = {name: samples.targets.numel() for name, samples in data.items()}
        self.label_range = {name: (int(s.targets.min()), int(s.targets.max())) for name, s in data.items()
                            if s.is_classification and s.targets.numel()}
        self.sizes = {name: len(samples) for name, samples in data.items()}
        sets = SetData.of(tensors, self.loss)  # the sets joined once (where they can be), for both sweeps
        self.sweep = Sweep(self.model, sets, self.loss, cfg.batch_size, with_accuracy, cfg.compile)
        self.recalibrator = (batchnorm.Recalibrator(self.model, sets.data["train"][0], cfg.batch_size, cfg.bn_batches)
                             if bn == "recalibrate" else None)
        # Neither UnrolledSweep nor vmap can update BatchNorm statistics in place, and a curvature map
        # takes one point at a time.
        plain = self.recalibrator is None and not cfg.curvature
        unrolled = plain and unrolls(self.device, cfg)
        # compiled, a first linear layer is taken by linearity (first_layer), where it qualifies
        example = next(iter(tensors.values()))[0][:2] if tensors else None
        self.start = (first_layer.find(self.model, self.dtype, example, sum(self.sizes.values()))
                      if unrolled and cfg.compile and example is not None and len(example) else None)
        # eagerly, a model that ends with a linear classifier has its scores made as rows (last_layer)
        self.end = (last_layer.find(self.model, self.dtype, example)
                    if unrolled and not cfg.compile and self.loss.name == "crossentropy" and with_accuracy
                    and example is not None and len(example) else None)
        self.unrolled = self._unrolled_sweep(sets, with_accuracy, cfg.points_per_pass, cfg.compile) if unrolled else None
        self.batched = (BatchedSweep(self.model, sets, self.loss, cfg.batch_size, with_accuracy, cfg.compile)
                        if plain and cfg.points_per_pass > 1 and self.unrolled is None else None)
        self.note = ("points_per_pass: BatchNorm recalibration updates statistics in place, point by point: "
                     "one point per pass" if cfg.points_per_pass > 1 and self.recalibrator is not None else "")
        if cfg.points_per_pass > 1 and cfg.curvature:
            self.note = "points_per_pass: curvature maps take one point at a time (a Lanczos run per point)"

    def _unrolled_sweep(self, data, with_accuracy: bool, points: int, compile: bool) -> UnrolledSweep:
        return UnrolledSweep(self.model, data, self.loss, self.cfg.batch_size, with_accuracy, origin=self.origin,
                             plane=self.plane, dtype=self.dtype, running_vars=self.running_vars, points=points,
                             compile=compile, start=self.start, end=self.end)

    def rebatched(self, batch_size: int) -> "Evaluator":
        """This kernel in batches of ``batch_size``, sharing its model, data and compiled code (for tuning,
        where compiling again for every batch size tried would cost seconds each)."""
        other = copy.copy(self)
        other.cfg = replace(self.cfg, batch_size=batch_size)
        other.sweep = self.sweep.with_batch_size(batch_size)
        other.batched = self.batched.with_batch_size(batch_size) if self.batched is not None else None
        other.unrolled = self.unrolled.with_batch_size(batch_size) if self.unrolled is not None else None
        if self.recalibrator is not None:
            other.recalibrator = batchnorm.Recalibrator(self.model, self.sweep.data["train"][0], batch_size,
                                                        self.cfg.bn_batches)
        return other

    @property
    def points_per_pass(self) -> int:
        """Points evaluated together: as configured, or 1 where a pass takes one point (BatchNorm
        recalibration, curvature maps, a model vmap rejects on a GPU)."""
        return self.cfg.points_per_pass if self.batched is not None or self.unrolled is not None else 1

    @property
    def names(self) -> list[str]:
        return [q.name for q in self.quantities]

    @torch.no_grad()
    def weights(self, a: float, b: float) -> dict[str, torch.Tensor]:
        """``origin + a*dx + b*dy`` in float64, rounded once into the model's dtype."""
        out = {}
        for name, origin in self.origin.items():
            point = torch.add(origin, self.dx[name], alpha=a)
            if self.dy is not None and b != 0.0:
                point.add_(self.dy[name], alpha=b)
            if name in self.running_vars:
                point.clamp_(min=0.0)  # a perturbed variance is never negative
            out[name] = point.to(self.dtype)
        return out

    @torch.inference_mode()
    def _values(self, a: float, b: float) -> np.ndarray:
        tensors = self.weights(a, b)
        if self.recalibrator is not None:
            forward = lambda batch, stats: functional_call(self.model, {**tensors, **stats}, (batch,))
            tensors = {**tensors, **self.recalibrator.statistics(forward)}
        values = self._quantities(self.sweep(tensors))
        if self.cfg.curvature:
            values = np.concatenate([values, self._curvature(tensors)])
        return values

    def _curvature(self, tensors: dict[str, torch.Tensor]) -> np.ndarray:
        """λmax, λmin and |λmin/λmax| of the Hessian of the mean training loss at the point (its weights,
        and BatchNorm statistics where the point moves them), each end by its own Lanczos run."""
        from ..curvature import Hessian, extremes

        inputs, targets = self.sweep.data["train"]
        exact = self.dtype in (torch.float32, torch.float64)  # low precision: the Hessian in float32
        with torch.inference_mode(False):  # the point's tensors are cloned out of inference mode for autograd
            hessian = Hessian(self.model, Samples(inputs, targets), self.loss,
                              batch_size=max(self.cfg.batch_size, HESSIAN_BATCH),
                              dtype="float64" if self.dtype == torch.float64 else "float32", device=str(self.device),
                              state=tensors, copy_model=not exact)
            ends = extremes(hessian, k=1, which="both", tol=self.cfg.curvature_tol, seed=0)
        top, bottom = ends["top"].values[0], ends["bottom"].values[0]
        self.unconverged += not (ends["top"].converged and ends["bottom"].converged)
        ratio = abs(bottom / top) if top != 0 else math.nan
        return np.array([top, bottom, ratio])

    @torch.inference_mode()
    def _values_many(self, points: np.ndarray) -> np.ndarray:
        """The values of several points from one vmapped pass per batch of data."""
        per_point = [self.weights(float(a), float(b)) for a, b in points]
        stacked = {name: torch.stack([w[name] for w in per_point]) for name in per_point[0]}
        return self._quantities(self.batched(stacked))  # (K, sets, 3): one transfer for K points

    @torch.inference_mode()
    def _values_unrolled(self, points: np.ndarray) -> np.ndarray:
        """The values of points whose weights are made inside the calls (``UnrolledSweep``)."""
        return self._quantities(self.unrolled(torch.from_numpy(points).to(self.device)))

    def _quantities(self, sums: torch.Tensor) -> np.ndarray:
        """Points' quantities ``(..., q)``, in the order of ``self.quantities``, from their per-set sums
        ``(..., sets, 3)``, all points at once (a loop over points in Python took 24 µs a point, 4 % of the
        digits MLP's evaluation)."""
        sums = sums.cpu().numpy()
        out = []
        for s, (name, n) in enumerate(self.sizes.items()):
            total, squares, correct = sums[..., s, 0], sums[..., s, 1], sums[..., s, 2]
            mean = total / n
            out.append(mean)
            if self.stderr:  # sample standard deviation of the per-sample losses / sqrt(n)
                with np.errstate(invalid="ignore", over="ignore"):  # a diverged point's inf - inf: NaN, silently
                    variance = (np.maximum(squares - n * mean * mean, 0.0) / (n - 1) if n > 1
                                else np.full_like(mean, np.nan))
                out.append(np.sqrt(variance / n))
            if self.sweep.with_accuracy:
                out.append(100.0 * correct / self.counts[name])  # NaN stays NaN
        return np.stack(out, axis=-1).astype(np.float64, copy=False)

    @torch.inference_mode()
    def probe(self) -> None:
        """One forward pass of a few samples of each data set at the centre, through the loss: a model
        that does not fit its data (its output shape, the number of classes) is reported before any
        file is made, not at the first grid point."""
        weights = self.weights(0.0, 0.0)
        few = {name: (inputs[:2], targets[:2]) for name, (inputs, targets) in self.sweep.data.items()}
        probe = Sweep(self.model, few, self.loss, self.cfg.batch_size, self.sweep.with_accuracy)
        try:
            for name, (inputs, targets) in few.items():
                if not targets.is_floating_point():  # the labels of the whole set against the model's classes
                    output = functional_call(self.model, weights, (inputs,))
                    check_labels(self.loss.name, output, *self.label_range[name])
            probe(weights)
            if self.unrolled is not None and not self.cfg.compile:  # a pass's own kernel (compiled: see the job)
                trial = self._unrolled_sweep(few, self.sweep.with_accuracy, 2, compile=False)
                trial(torch.zeros((2, 2), dtype=torch.float64, device=self.device))
        except LandscapeError:
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code
            raise EvaluationError(f"the model cannot be evaluated on the data at the centre: {describe(exc)}") from exc
        if self.batched is not None:  # vmap cannot run every module: find out now, and say so once
            trial = BatchedSweep(self.model, few, self.loss, self.cfg.batch_size, self.sweep.with_accuracy)
            try:
                trial({k: torch.stack([v, v]) for k, v in weights.items()})
            except Exception as exc:  # noqa: BLE001 - whatever vmap rejects
                self.batched = None
                self.note = f"points_per_pass: vmap cannot run this model ({describe(exc)[:120]}): one point per pass"

    def evaluate(self, points: np.ndarray) -> np.ndarray:
        """Values ``(n, q)`` at the ``(n, 2)`` coefficients ``points``, one row per point."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if self.unrolled is not None and len(points):
            with _naming_failures(points):
                return self._values_unrolled(points)
        if self.batched is not None and len(points) > 1:
            with _naming_failures(points):
                return self._values_many(points)
        out = np.empty((len(points), len(self.quantities)))
        for row, (a, b) in enumerate(points):
            with _naming_failures(points[row:row + 1]):
                out[row] = self._values(float(a), float(b))
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
        raise EvaluationError(f"evaluating the model at {_where(points)} failed: the model or loss called "
                              f"sys.exit({exc.code!r})") from None
    except Exception as exc:  # noqa: BLE001 - user code
        raise EvaluationError(f"evaluating the model at {_where(points)} failed: {describe(exc)}") from exc
