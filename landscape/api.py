"""The Python API: the loss surface of any ``torch.nn.Module``, loss and data, from a script.

    from landscape.api import loss_surface
    surface = loss_surface(model, (x_train, y_train), loss="mse", x="-1:1:21", surf_file="mlp.h5")

The same call under ``mpiexec -n N python script.py`` shares the points among
the ranks (every rank must build the same model and data: this is checked).
It is ``landscape surface`` without the command line: the same configurations,
directions, file schema, resume and errors.  The model passed in is never modified.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import torch

from .data import GIVEN, Data, DataConfig, Samples, as_samples
from .errors import LandscapeError, UsageError, describe, param
from .grid import Grid
from .io.surface_file import Surface, read
from .models import ModelConfig
from .parallel import comm as comm_module
from .parallel.comm import agree
from .surface.direction_set import DirectionConfig
from .surface.evaluation import EvaluationConfig
from .surface.job import RunConfig, SurfaceJob, run_surface

if TYPE_CHECKING:
    from .train import Result

ARRAYS = (torch.Tensor, np.ndarray)
SPELLING = {"xnorm": "norm", "xignore": "ignore"}  # the API keyword of a configuration field, where they differ


def to_samples(data, what: str) -> Samples:
    """``Samples``, a pair of tensors, a ``Dataset``, or an iterable of ``(inputs, targets)`` batches."""
    if isinstance(data, (Samples, torch.utils.data.Dataset)) or (
        isinstance(data, (tuple, list)) and len(data) == 2 and all(isinstance(t, ARRAYS) for t in data)
    ):
        return as_samples(data, what)
    if isinstance(data, Iterable):
        batches = list(data)
        if not batches or not all(isinstance(b, (tuple, list)) and len(b) == 2 for b in batches):
            raise UsageError(f"{what}: expected (inputs, targets) batches, a Dataset or a pair of tensors")
        try:
            return as_samples(
                (
                    torch.cat([torch.as_tensor(b[0]) for b in batches]),
                    torch.cat([torch.as_tensor(b[1]) for b in batches]),
                ),
                what,
            )
        except (RuntimeError, TypeError) as exc:
            raise UsageError(
                f"{what}: the batches cannot be joined into one tensor ({describe(exc)}); "
                "give batches whose shapes agree except along the first dimension"
            ) from None
    raise UsageError(
        f"{what}: expected a pair of tensors, a Dataset or an iterable of batches, got {type(data).__name__}"
    )


def loss_surface(
    model: torch.nn.Module,
    train,
    loss="crossentropy",
    *,
    test=None,
    x: str = "-1:1:21",
    y: str | None = None,
    surf_file: str = "surface.h5",
    dir_file: str | None = None,
    dir_type: str | None = None,
    norm: str | None = None,
    ignore: str | None = None,
    seed: int | None = None,
    same_dir: bool = False,
    batch_size: int = 128,
    dtype: str = "float32",
    bn: str | None = None,
    bn_batches: int = 10,
    train_subset: int | None = None,
    threads: int | None = None,
    force: bool = False,
    device: str = "auto",
    allow_shared_gpus: bool = False,
    quiet: bool = True,
) -> Surface:
    """Compute (or finish) the surface of ``model`` and return it as read back from ``surf_file``.

    ``loss`` is ``"crossentropy"``, ``"mse"`` or a callable ``loss(output, targets)``
    returning the mean over a batch.  ``norm``/``ignore`` default to ``filter``/``biasbn``.
    ``threads`` (default: the node's cores shared by its ranks) is set for the whole process.
    Errors are ``landscape.errors.LandscapeError``s naming these keywords.  Under MPI, an
    error that only some ranks meet aborts the job, as the command line does, rather than
    leaving the other ranks waiting.
    """
    world = comm_module.world()

    def setup() -> tuple[SurfaceJob, Data]:
        if not isinstance(model, torch.nn.Module):
            raise UsageError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
        if not (isinstance(loss, str) or callable(loss)):
            raise UsageError(f"loss: expected crossentropy, mse or a callable, got {type(loss).__name__}")
        job = SurfaceJob(
            model=ModelConfig(f"api:{type(model).__module__}.{type(model).__qualname__}"),
            grid=Grid.parse(x, y, force),
            data=DataConfig(GIVEN, train_subset=train_subset),
            directions=DirectionConfig(
                dir_type=dir_type, xnorm=norm, xignore=ignore, seed=seed, same_dir=same_dir, dir_file=dir_file
            ),
            evaluation=EvaluationConfig(
                loss_name=loss if isinstance(loss, str) else "crossentropy",
                batch_size=batch_size,
                dtype=dtype,
                bn=bn,
                bn_batches=bn_batches,
            ),
            run=RunConfig(
                surf_file=surf_file,
                threads=threads,
                quiet=quiet,
                device=device,
                allow_shared_gpus=allow_shared_gpus,
                argv=("landscape.api.loss_surface",),
            ),
        )
        data = Data(GIVEN, to_samples(train, "train data"), None if test is None else to_samples(test, "test data"))
        return job, data

    try:
        # Under MPI every rank checks its arguments and all learn of a failure together (no abort);
        # on one process the error keeps its own type.
        job, data = setup() if world.size == 1 else agree(world, setup)
        summary = run_surface(job, world, model=model, data=data, loss=None if isinstance(loss, str) else loss)
        world.barrier()  # rank 0 finishes the file's run record before anyone reads it
        return read(summary.surf_file)
    except LandscapeError as exc:
        if not getattr(exc, "collective", False):  # every rank has a collective one: each caller handles it
            _abort_alone(world, exc)
        raise
    except BaseException as exc:
        _abort_alone(world, exc)
        raise


def _abort_alone(world, exc: BaseException) -> None:
    """An error on some ranks only: the others may wait forever in a collective call."""
    if world.size > 1:
        code = int(exc.exit_status) if isinstance(exc, LandscapeError) else 1
        print(f"landscape.api (rank {world.rank} of {world.size}): {describe(exc)}", file=sys.stderr, flush=True)
        world.abort(code)


def train(
    model: str,
    out: str,
    *,
    dataset: str = "digits",
    recipe: str = "sgd",
    datapath: str | None = None,
    num_classes: int | None = None,
    micro_batch: int | None = None,
    seed: int = 0,
    augment: str = "auto",
    save_every: int = 1,
    threads: int | None = None,
    device: str = "auto",
    quiet: bool = False,
    **hyper,
) -> Result:
    """``landscape train`` from a script: train registry or plug-in ``model`` on ``dataset`` into ``out``.

    ``hyper`` are the recipe's hyper-parameters by name (``epochs``, ``batch_size``, ``lr``, ``momentum``,
    ``weight_decay``, ``milestones``, ``warmup_epochs``, ``trust``, ``theta``, ``sync_every``, ...);
    unset ones take the recipe's defaults.  Under ``mpiexec`` the ranks train data-parallel.  A finished
    run is left as it is and an interrupted one resumed.  Returns the run's ``Result`` (``final``: the
    checkpoint ``loss_surface``/``landscape surface`` read; ``history``: one dict per epoch).
    """
    from .train import TrainJob, TrainRun, resolve, run_training

    world = comm_module.world()

    def setup() -> TrainJob:
        return TrainJob(
            model=ModelConfig(model, num_classes=num_classes),
            data=DataConfig(dataset, datapath=datapath),
            recipe=resolve(recipe, **hyper),
            run=TrainRun(
                out=out,
                micro_batch=micro_batch,
                seed=seed,
                augment=augment,
                save_every=save_every,
                threads=threads,
                device=device,
                quiet=quiet,
                argv=("landscape.api.train",),
            ),
        )

    try:
        job = setup() if world.size == 1 else agree(world, setup)
        return run_training(job, world)
    except LandscapeError as exc:
        if not getattr(exc, "collective", False):
            _abort_alone(world, exc)
        raise
    except BaseException as exc:
        _abort_alone(world, exc)
        raise


def _curvature_setup(model, data, loss, batch_size: int, dtype: str, device: str):
    """This rank's shard of ``data`` (contiguous, as the evaluation splits a set), the number of samples
    over all ranks, and the sum over ranks: the ranks share the data of one network."""
    from .curvature import Hessian
    from .losses import Loss

    world = comm_module.world()
    samples = to_samples(data, "data")
    n = len(samples)
    share = -(-n // world.size)
    lo, hi = min(n, world.rank * share), min(n, (world.rank + 1) * share)
    shard = Samples(samples.inputs[lo:hi], samples.targets[lo:hi])
    return Hessian(
        model,
        shard,
        Loss(loss),
        batch_size=batch_size,
        dtype=dtype,
        device=device,
        count=n,
        reduce=world.sum_ if world.size > 1 else None,
    )


def hessian_eigs(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    k: int = 1,
    which: str = "both",
    tol: float = 1e-6,
    maxiter: int | None = None,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
    seed: int = 0,
) -> dict:
    """The ``k`` largest (``'top'``) and/or smallest (``'bottom'``) eigenvalues of the Hessian of the mean
    ``loss`` of ``model`` over all of ``data`` (a pair of tensors, a ``Dataset``, or batches), by Lanczos.

    Returns ``{'top': Eigenvalues, 'bottom': Eigenvalues}`` (as ``which`` asks): ``values`` (most
    extreme first), ``residuals``, ``converged``, ``products``, ``tol``, ``method``, ``note``.  BatchNorm
    uses its running statistics.  Under ``mpiexec`` the ranks share the data (one all-reduce per
    product) and all return the same.  The model is not modified.
    """
    from .curvature import extremes

    return extremes(
        _curvature_setup(model, data, loss, batch_size, dtype, device),
        k=k,
        which=which,
        tol=tol,
        maxiter=maxiter,
        seed=seed,
    )


def hessian_trace(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    samples: int = 100,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
    seed: int = 0,
):
    """Hutchinson's estimate of the Hessian's trace (Rademacher vectors): ``Trace(value, stderr, samples,
    products)``; arguments and ranks as ``hessian_eigs``."""
    from .curvature import hutchinson

    return hutchinson(_curvature_setup(model, data, loss, batch_size, dtype, device), samples=samples, seed=seed)


def sharpness(
    model: torch.nn.Module,
    data,
    loss="crossentropy",
    *,
    measure: str = "adaptive",
    rho: float = 0.01,
    epsilon: float = 1e-3,
    subspace: int | None = None,
    radius: float = 0.5,
    directions: int = 20,
    maxiter: int = 10,
    dtype: str = "float64",
    batch_size: int = 1024,
    device: str = "cpu",
    seed: int = 0,
):
    """Sharpness of ``model`` at its weights on all of ``data``: ``measure`` is ``adaptive`` (worst-case
    rise in |δ| <= rho |w|), ``epsilon`` (Keskar et al.'s percentage in |δ| <= epsilon (|w| + 1), in a
    random ``subspace`` if given) or ``average`` (rise at ``radius`` over ``directions`` random
    filter-normalized directions, with its standard error and the 0-1 error rise).  Returns a
    ``Sharpness`` whose ``settings`` hold every hyper-parameter used; ranks as ``hessian_eigs``."""
    from .curvature import sharpness as measures

    h = _curvature_setup(model, data, loss, batch_size, dtype, device)
    if measure == "adaptive":
        return measures.adaptive_sharpness(h, rho=rho, maxiter=maxiter)
    if measure == "epsilon":
        return measures.epsilon_sharpness(h, epsilon=epsilon, subspace=subspace, maxiter=maxiter, seed=seed)
    if measure == "average":
        return measures.average_rise(h, radius=radius, directions=directions, seed=seed)
    raise UsageError(f"{param('measure')}={measure!r}: expected one of {', '.join(measures.MEASURES)}")
