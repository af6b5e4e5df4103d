"""The Python API: every ``landscape`` command as a function, and curvature measures of one network.

    from landscape import api
    result = api.surface(model="digits_mlp", x="-1:1:21", y="-1:1:21", surf_file="mlp.h5")
    result = api.loss_surface(net, (x, y), loss="mse", x="-1:1:21")       # your own model and data
    run = api.train(model="digits_cnn", batch_size=256, epochs=5, out="runs/cnn")
    eigs = api.hessian_eigs(net, (x, y), k=3)

Each command function takes the parameters of its command line (``landscape surface --help``): the
same names (the flags without their dashes, but the plots' ``formats`` and ``kinds`` for ``--format``
and ``--kind``; positional arguments by their names: ``surf_files``, ``manifests``, ``manifest``,
``files``; one value for a list parameter is a list of one), the same defaults (those of the
configurations they fill), and returns a result dataclass whose ``record()`` holds plain values.  The
functions and the command-line parsers are both made from each command's ``Params``
(``workflows/<command>.py``), so the two cannot drift apart.  From Python, ``surface``'s ``model`` may be
an ``nn.Module``, its ``dataset`` a pair ``(train, test)`` of data and its ``loss_name`` a callable.

The same calls under ``mpiexec -n N python script.py`` share the work among the ranks (every rank must
build the same model and data: this is checked).  Errors are ``landscape.errors.LandscapeError``s
naming these keywords; an error that only some ranks meet aborts the job, as the command line does,
rather than leaving the other ranks waiting.  A model passed in is never modified.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import tempfile

import torch

from . import heap
from .curvature import sharpness as measures
from .curvature import suite
from .curvature.suite import SuiteConfig
from .errors import LandscapeError, UsageError, describe, param
from .parallel import comm as comm_module
from .terminal import escaping
from .workflows import curvature as _curvature
from .workflows import demo as _demo
from .workflows import export as _export
from .workflows import info as _info
from .workflows import plots as _plots
from .workflows import report as _report
from .workflows import rescale as _rescale
from .workflows import study as _study
from .workflows import surface as _surface
from .workflows import sweep as _sweep
from .workflows import train as _train
from .workflows.params import ordered
from .workflows.surface import SurfaceResult

_SHARPNESS = measures.SharpnessConfig  # the measures' defaults, as the command line's
_SUITE = SuiteConfig()  # the curvature suite's defaults: one per parameter, the command line's too


def _guarded(call):
    """``call()`` under MPI: an error only some ranks meet aborts the job (the others may be waiting in a
    collective call); one every rank knows of is raised on every rank."""
    world = comm_module.world()
    try:
        with escaping():  # what a call prints from a file reaches the notebook or terminal escaped (terminal.py)
            return call()
    except LandscapeError as exc:
        if not getattr(exc, "collective", False):
            _abort_alone(world, exc)
        raise
    except BaseException as exc:
        _abort_alone(world, exc)
        raise


def _abort_alone(world, exc: BaseException) -> None:
    if world.size > 1:
        code = int(exc.exit_status) if isinstance(exc, LandscapeError) else 1
        print(f"landscape.api (rank {world.rank} of {world.size}): {describe(exc)}", file=sys.stderr, flush=True)
        world.abort(code)


def _command_of(cls, run, result):
    """The function of the command whose parameters are ``cls`` (``workflows.params.Params``): one keyword
    per field, with the field's default; the required positional ones also by position."""
    name = cls.COMMAND
    fields = [f for f in ordered(cls) if f.metadata.get("api", True)]
    positional = [f.name for f in fields if f.metadata.get("positional") and f.default is dataclasses.MISSING]

    def parameter(f) -> inspect.Parameter:
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if f.name in positional else inspect.Parameter.KEYWORD_ONLY
        default = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        return inspect.Parameter(f.name, kind, default=default)

    in_order = [f for f in fields if f.name in positional] + [f for f in fields if f.name not in positional]
    signature = inspect.Signature([parameter(f) for f in in_order], return_annotation=result)

    def function(*args, **params):
        if name in heap.COMPUTING:  # as the command line does (heap.py)
            heap.keep_freed_memory()
        try:
            bound = signature.bind(*args, **params)
        except TypeError as exc:
            raise UsageError(f"landscape {name}: {exc}") from None
        return _guarded(lambda: run(cls.of(dict(bound.arguments)), argv=(f"landscape.api.{name.replace('-', '_')}",)))

    function.__name__ = function.__qualname__ = name.replace("-", "_")
    function.__signature__ = signature
    lines = [cls.DESCRIPTION, "", f"The parameters of ``landscape {name}`` (its ``--help``):", ""]
    for f in in_order:
        shown = "required" if f.default is dataclasses.MISSING else f"default {f.default!r}"
        words = f.metadata.get("help") or "; ".join(f"{s[0]}: {s[2]}" for s in f.metadata.get("switches", ()))
        lines.append(f"``{f.name}`` ({shown}): {words.replace('%%', '%')}")
    lines += ["", f"Returns a ``{result.__name__}``."]
    function.__doc__ = "\n".join(lines)
    return function


surface = _command_of(_surface.SurfaceParams, _surface.run, SurfaceResult)
train = _command_of(_train.TrainParams, _train.run, _train.TrainResult)
sweep = _command_of(_sweep.SweepParams, _sweep.run, _sweep.SweepResult)
curvature = _command_of(_curvature.CurvatureParams, _curvature.run, _curvature.CurvatureResult)
report = _command_of(_report.ReportParams, _report.run, _report.ReportResult)
study = _command_of(_study.StudyParams, _study.run, _study.StudyResult)
export = _command_of(_export.ExportParams, _export.run, _export.ExportResult)
plot1d = _command_of(_plots.Plot1DParams, _plots.run_1d, _plots.FigureResult)
plot2d = _command_of(_plots.Plot2DParams, _plots.run_2d, _plots.FigureResult)
plot_training = _command_of(_plots.TrainingPlotParams, _plots.run_training, _plots.FigureResult)
rescale = _command_of(_rescale.RescaleParams, _rescale.run, _rescale.RescaleResult)
info = _command_of(_info.InfoParams, _info.run, _info.InfoResult)
demo = _command_of(_demo.DemoParams, _demo.run, _demo.DemoResult)

# each command's function
COMMANDS = {
    "surface": surface,
    "train": train,
    "sweep": sweep,
    "curvature": curvature,
    "report": report,
    "study": study,
    "rescale": rescale,
    "export": export,
    "plot1d": plot1d,
    "plot2d": plot2d,
    "plot-training": plot_training,
    "info": info,
    "demo": demo,
}


def loss_surface(
    model: torch.nn.Module, train, loss="crossentropy", *, test=None, surf_file=None, **params
) -> SurfaceResult:
    """The loss surface of your own ``model`` (an ``nn.Module``, never modified) on ``train`` (and
    ``test``) data — a pair of tensors, a ``Dataset`` or ``(inputs, targets)`` batches — with ``loss``
    (``"crossentropy"``, ``"mse"`` or a callable ``loss(output, targets)`` returning the batch mean).

    Every other parameter is ``surface``'s (``x``, ``y``, ``xnorm``, ``kernel``, ``batch_size``, ...),
    with its default.  Without ``surf_file`` the surface goes to a new temporary file (its path:
    ``result.surf_file``); with one, an existing file of the same computation is finished or read back
    (``result.read_back`` then says that nothing was computed).  Returns a ``SurfaceResult`` whose
    ``surface`` holds the values.
    """
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    if not (isinstance(loss, str) or callable(loss)):
        raise UsageError(f"loss: expected crossentropy, mse or a callable, got {type(loss).__name__}")
    if surf_file is None:
        world = comm_module.world()
        folder = world.bcast(tempfile.mkdtemp(prefix="landscape_") if world.rank == 0 else None)
        surf_file = os.path.join(folder, "surface.h5")
    return surface(model=model, dataset=(train, test), loss_name=loss, surf_file=surf_file, **params)


# --------------------------------------------------------------------------- one network's curvature


def _sharded(model, data, loss, batch_size: int, dtype: str, device: str):
    return _curvature.sharded_hessian(model, data, loss, batch_size, dtype, device)


def _measured(name: str, model, data, loss, batch_size: int, dtype: str, device: str, config: SuiteConfig):
    """One measure of the curvature suite (``curvature.suite``, as ``landscape curvature`` runs it)."""
    return _guarded(lambda: suite.one(_sharded(model, data, loss, batch_size, dtype, device), name, config))


def hessian_eigs(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    k: int = _SUITE.k,
    which: str = _SUITE.which,
    tol: float = _SUITE.tol,
    maxiter: int | None = _SUITE.maxiter,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
    seed: int = _SUITE.seed,
    method: str = _SUITE.method,
) -> dict:
    """The ``k`` largest (``'top'``) and/or smallest (``'bottom'``, ``'both'``) eigenvalues of the Hessian of
    the mean ``loss`` of ``model`` over all of ``data`` (a pair of tensors, a ``Dataset``, or batches), by
    Lanczos; the defaults are those of ``landscape curvature`` (``curvature.suite.SuiteConfig``).

    Returns ``{'top': Eigenvalues, 'bottom': Eigenvalues}`` (as ``which`` asks): ``values`` (most
    extreme first), ``residuals``, ``converged``, ``products``, ``tol``, ``method``, ``note``, ``dtype``.
    ``method``: ``lanczos`` (ours, stopped on the Ritz residual; ARPACK takes over where it misses ``tol``
    in ``maxiter`` steps) or ``eigsh`` (ARPACK).  ``dtype``: float64, or float32 (faster; enough for the
    top eigenvalue to 1e-3 or so, not for eigenvalues near zero).  BatchNorm
    uses its running statistics.  Under ``mpiexec`` the ranks share the data (one all-reduce per
    product) and all return the same.  The model is not modified.
    """
    config = SuiteConfig(k=k, which=which, tol=tol, maxiter=maxiter, seed=seed, method=method)
    return _measured("eigenvalues", model, data, loss, batch_size, dtype, device, config)


def hessian_trace(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    samples: int = _SUITE.trace_samples,
    se: float | None = _SUITE.trace_se,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
    seed: int = _SUITE.seed,
):
    """Hutchinson's estimate of the Hessian's trace (Rademacher vectors): ``Trace(value, stderr, samples,
    products, ...)``; with ``se``, stopped once ``stderr <= se * |value|`` (after 10 vectors, at most
    ``samples``); arguments and ranks as ``hessian_eigs``."""
    config = SuiteConfig(trace_samples=samples, trace_se=se, seed=seed)
    return _measured("trace", model, data, loss, batch_size, dtype, device, config)


def sharpness(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    measure: str = "adaptive",
    rho=_SHARPNESS.rho,
    rho_l2=_SHARPNESS.rho_l2,
    eta=_SHARPNESS.eta,
    epsilon=_SHARPNESS.epsilon,
    subspace=_SHARPNESS.subspace,
    radius=_SHARPNESS.radius,
    directions=_SHARPNESS.directions,
    draws=_SHARPNESS.draws,
    m=_SHARPNESS.m,
    method=_SHARPNESS.method,
    iterations=_SHARPNESS.iterations,
    restarts=_SHARPNESS.restarts,
    search_tol=_SHARPNESS.search_tol,
    extensions=_SHARPNESS.extensions,
    seed=_SHARPNESS.seed,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
):
    """Sharpness of ``model`` at its weights on all of ``data``: ``measure`` is one of
    ``landscape.curvature.sharpness.MEASURES`` — ``adaptive`` (worst-case rise in |δ| <= rho |w|),
    ``adaptive_l2`` (worst case in ‖δ / (|w| + eta)‖₂ <= rho_l2), ``adaptive_average`` (mean rise at
    δ = rho |w| ⊙ z over ``draws`` Gaussian z), ``m_sharpness`` (the adaptive worst case on batches of
    ``m`` samples, averaged), ``epsilon`` (Keskar et al.'s percentage in |δ| <= epsilon (|w| + 1), in a
    random ``subspace`` if given) or ``average`` (rise at ``radius`` over ``directions`` random
    filter-normalized directions).  The worst-case searches run ``method`` (``apgd`` or ``lbfgsb``) for
    ``iterations`` from δ = 0 and ``restarts`` seeded random starts (``search_tol``: the convergence
    check; a winning start still rising goes on from its best point for up to ``extensions`` more rounds);
    the defaults are ``SharpnessConfig``'s, as the command line's.  Returns a ``Sharpness`` with
    the measure's definition and citation, every setting used and, for the worst-case measures, how the
    search went (``search``, ``converged``, ``notes``); ranks as ``hessian_eigs``."""
    config = measures.SharpnessConfig(
        rho=rho,
        rho_l2=rho_l2,
        eta=eta,
        epsilon=epsilon,
        subspace=subspace,
        radius=radius,
        directions=directions,
        draws=draws,
        m=m,
        method=method,
        iterations=iterations,
        restarts=restarts,
        search_tol=search_tol,
        extensions=extensions,
        seed=seed,
    )
    if measure not in measures.MEASURES:
        raise UsageError(f"{param('measure')}={measure!r}: expected one of {', '.join(measures.MEASURES)}")
    return _measured(measure, model, data, loss, batch_size, dtype, device, SuiteConfig(sharpness=config))


def hessian_layers(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    samples: int = _SUITE.layer_samples,
    tol: float = _SUITE.tol,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
    seed: int = _SUITE.seed,
) -> list:
    """Each layer's diagonal block of the Hessian (a module's own parameters, the rest held fixed): a list
    of ``LayerCurvature`` (layer, parameters, weight_norm, lambda_max with its residual and convergence,
    trace with its standard error over ``samples`` shared Rademacher vectors); ranks as ``hessian_eigs``."""
    config = SuiteConfig(layer_samples=samples, tol=tol, seed=seed)
    return _measured("layers", model, data, loss, batch_size, dtype, device, config)


def relative_flatness(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    samples: int = _SUITE.flatness_samples,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
    seed: int = _SUITE.seed,
):
    """Relative flatness (Petzka et al. 2021): Σ over parameter tensors of Σ_{s,s'} ⟨W_s, W_s'⟩ Tr H_{s,s'},
    estimated from ``samples`` products (``RelativeFlatness``: value, stderr, by_layer); unchanged by a
    function-preserving rescaling of the layers, where λmax and the trace are not.  Ranks as
    ``hessian_eigs``."""
    config = SuiteConfig(flatness_samples=samples, seed=seed)
    return _measured("relative_flatness", model, data, loss, batch_size, dtype, device, config)


def fisher_rao_norm(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
):
    """The Fisher–Rao norm (Liang et al. 2019), √E⟨θ, ∇ℓ⟩² over the model's own labels (``value``) and
    over the data's (``empirical``), exactly from one forward-mode product per batch; built-in losses
    (``crossentropy``, ``mse``).  Ranks as ``hessian_eigs``."""
    return _measured("fisher_rao", model, data, loss, batch_size, dtype, device, _SUITE)


def noise_scale(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
):
    """The gradient noise scale B_simple = tr Σ / ‖G‖² (McCandlish et al. 2018) from every sample's
    gradient (``NoiseScale``: value, trace_sigma, gradient_norm2).  Ranks as ``hessian_eigs``."""
    return _measured("noise_scale", model, data, loss, batch_size, dtype, device, _SUITE)
