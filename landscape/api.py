"""The Python API: the loss surface of any ``torch.nn.Module``, loss and data, from a script.

    from landscape.api import loss_surface
    surface = loss_surface(model, (x_train, y_train), loss="mse", x="-1:1:21", surf_file="mlp.h5")

The same call under ``mpiexec -n N python script.py`` shares the points among
the ranks (every rank must build the same model and data: this is checked).
It is ``plot_surface`` without the command line: the same directions, file
schema, resume and errors.  The model passed in is copied, never modified.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable

import numpy as np
import torch

from . import comm as comm_module
from .data import Data, Split, as_split
from .errors import CollectiveFailure, LandscapeError, UsageError, describe
from .schema import Surface, read_surface
from .surface import SurfaceConfig, run_surface


ARRAYS = (torch.Tensor, np.ndarray)


def to_split(data, what: str) -> Split:
    """A ``Split``, a pair of tensors, a ``Dataset``, or an iterable of ``(inputs, targets)`` batches."""
    if isinstance(data, (Split, torch.utils.data.Dataset)) or (isinstance(data, (tuple, list)) and len(data) == 2
                                                              and all(isinstance(t, ARRAYS) for t in data)):
        return as_split(data, what)
    if isinstance(data, Iterable):
        batches = list(data)
        if not batches or not all(isinstance(b, (tuple, list)) and len(b) == 2 for b in batches):
            raise UsageError(f"{what}: expected (inputs, targets) batches, a Dataset or a pair of tensors")
        try:
            return as_split((torch.cat([torch.as_tensor(b[0]) for b in batches]),
                             torch.cat([torch.as_tensor(b[1]) for b in batches])), what)
        except (RuntimeError, TypeError) as exc:
            raise UsageError(f"{what}: the batches cannot be joined into one tensor ({describe(exc)}); "
                             "give batches whose shapes agree except along the first dimension") from None
    raise UsageError(f"{what}: expected a pair of tensors, a Dataset or an iterable of batches, "
                     f"got {type(data).__name__}")


def loss_surface(model: torch.nn.Module, train, loss="crossentropy", *, test=None, x: str = "-1:1:21",
                 y: str | None = None, surf_file: str = "surface.h5", dir_file: str | None = None,
                 dir_type: str | None = None, norm: str | None = None, ignore: str | None = None, seed: int = 0,
                 same_dir: bool = False, batch_size: int = 128, dtype: str = "float32", bn: str | None = None,
                 bn_batches: int = 10, train_subset: int | None = None, threads: int | None = None,
                 quiet: bool = True) -> Surface:
    """Compute (or finish) the surface of ``model`` and return it as read back from ``surf_file``.

    ``loss`` is ``"crossentropy"``, ``"mse"`` or a callable ``loss(output, targets)``
    returning the mean over a batch.  ``norm``/``ignore`` default to ``filter``/``biasbn``.
    ``threads`` (default: the node's cores shared by its ranks) is set for the whole process.
    Under MPI, an error that only some ranks meet aborts the job, as the command line does,
    rather than leaving the other ranks waiting.
    """
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    world = comm_module.world()
    try:
        return _loss_surface(world, model, train, loss, test, x, y, surf_file, dir_file, dir_type, norm, ignore, seed,
                             same_dir, batch_size, dtype, bn, bn_batches, train_subset, threads, quiet)
    except CollectiveFailure:
        raise  # every rank has it: each caller handles it
    except BaseException as exc:
        if world.size > 1:
            code = exc.exit_code if isinstance(exc, LandscapeError) else 1
            print(f"landscape.api (rank {world.rank} of {world.size}): {describe(exc)}", file=sys.stderr, flush=True)
            world.abort(code)
        raise


def _loss_surface(world, model, train, loss, test, x, y, surf_file, dir_file, dir_type, norm, ignore, seed,
                  same_dir, batch_size, dtype, bn, bn_batches, train_subset, threads, quiet) -> Surface:
    data = Data("api", to_split(train, "train data"), None if test is None else to_split(test, "test data"))
    name = f"api:{type(model).__module__}.{type(model).__qualname__}"
    cfg = SurfaceConfig(model=name, dataset="api", x=x, y=y, dir_type=dir_type, xnorm=norm, xignore=ignore,
                        seed=seed, same_dir=same_dir, dir_file=dir_file, surf_file=surf_file,
                        batch_size=batch_size, loss_name=loss if isinstance(loss, str) else "crossentropy",
                        dtype=dtype, bn=bn, bn_batches=bn_batches, train_subset=train_subset, threads=threads,
                        quiet=quiet, argv=["landscape.api.loss_surface"])
    result = run_surface(cfg, world, model=model, data=data, loss=None if isinstance(loss, str) else loss)
    world.barrier()  # rank 0 finishes the file's run record before anyone reads it
    return read_surface(result["surf_file"])
