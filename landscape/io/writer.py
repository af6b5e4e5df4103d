"""Writing finished points into the one shared surface file while the job runs.

Two ways, chosen by what h5py can do:

* ``MpioWriter`` — h5py built with parallel HDF5: every rank opens the file with
  ``driver='mpio'`` and writes its own points independently; the flush that
  ends a round is collective.
* ``GatherWriter`` — serial h5py (the PyPI wheel): at the end of each round the
  ranks gather their points to rank 0, which writes them.  A round carries only
  that round's points, so communication per point does not grow with the grid.

Both write values and their checksums first and mark the points done only after
those are flushed, so a job killed at any moment leaves no point marked done without
its values.  The file's structure never changes here; only raw data are written.

A write the system refuses (a full disk, an I/O error) is an input error naming the file; the points
marked done before it stay valid.  The serial writer then closes the file, its datasets first
(``atomic.abandon``); an mpio file is closed collectively only, so a rank that fails alone leaves it to the
error boundary, which aborts the job.
"""

from __future__ import annotations

import errno
import os

import h5py
import numpy as np

from ..errors import ConfigError, UsageError, param
from . import atomic, surface_file
from .schema import CHECKSUM, DONE

IO_MODES = ("auto", "mpio", "gather")


def parallel_hdf5() -> bool:
    return bool(h5py.get_config().mpi)


def _datasets(file: h5py.File, quantities: list[str]) -> dict:
    """Open each dataset once (collectively under mpio) rather than at every write."""
    return {name: file[name] for name in [*quantities, DONE, CHECKSUM]}


def _sync(file: h5py.File) -> None:
    """Values on disk before their done marks, even if the node itself goes down."""
    file.flush()
    try:
        handle = file.id.get_vfd_handle()
    except (OSError, ValueError, TypeError):
        return  # a driver without a plain file descriptor: flush is what it offers
    try:
        os.fsync(handle)
    except OSError as exc:  # a file that cannot be synced is no failure; a refused write (EIO, ENOSPC) is
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise


class GatherWriter:
    collective_close = False  # rank 0 alone holds the file

    def __init__(self, comm, path: str, quantities: list[str]):
        self.comm, self.quantities, self.path = comm, list(quantities), path
        self.file = h5py.File(path, "r+") if comm.rank == 0 else None
        self.datasets = _datasets(self.file, self.quantities) if self.file else None

    def write_round(self, flat: np.ndarray, values: np.ndarray) -> None:
        """Collective: every rank passes its points of this round (possibly none)."""
        parts = self.comm.gather((np.asarray(flat, np.int64), np.asarray(values, np.float64)))
        if self.comm.rank != 0:
            return
        flat = np.concatenate([p[0] for p in parts])
        if len(flat) == 0:
            return
        values = np.concatenate([p[1].reshape(-1, len(self.quantities)) for p in parts])
        order = np.argsort(flat, kind="stable")
        try:
            surface_file.write_values(self.datasets, flat[order], values[order], self.quantities, sole_writer=True)
            _sync(self.file)
            surface_file.mark_done(self.datasets, flat[order], sole_writer=True)
            self.file.flush()
        except Exception as exc:  # noqa: BLE001 - closed in order, then one line if the system refused
            self.datasets = None
            atomic.abandon(self.file, exc)
            self.file = None
            raise atomic.write_error("surface file", self.path, exc) from None

    def close(self) -> None:
        if self.file is not None:
            self.datasets = None
            self.file.close()


class MpioWriter:
    collective_close = True

    def __init__(self, comm, path: str, quantities: list[str]):
        self.comm, self.quantities, self.path = comm, list(quantities), path
        self.file = h5py.File(path, "r+", driver="mpio", comm=comm.mpi)
        self.datasets = _datasets(self.file, self.quantities)  # collective, once

    def write_round(self, flat: np.ndarray, values: np.ndarray) -> None:
        flat = np.asarray(flat, np.int64)
        order = np.argsort(flat, kind="stable")
        try:
            if len(flat):  # independent writes of this rank's own points
                surface_file.write_values(self.datasets, flat[order], np.asarray(values)[order], self.quantities)
            self.file.flush()  # collective; MPI_File_sync underneath
            if len(flat):
                surface_file.mark_done(self.datasets, flat[order])
            self.file.flush()
        except Exception as exc:  # noqa: BLE001 - not closed: that is collective (see the module's docstring)
            raise atomic.write_error("surface file", self.path, exc) from None

    def close(self) -> None:
        self.datasets = None  # release the dataset handles on every rank, then the file
        self.file.close()  # collective


def choose(mode: str, size: int) -> str:
    """The write path for ``io`` on ``size`` ranks: ``auto`` takes mpio whenever it can help."""
    if mode not in IO_MODES:
        raise ConfigError("io", mode, f"one of {', '.join(IO_MODES)}")
    if mode == "mpio" and not parallel_hdf5():
        raise UsageError(
            f"{param('io')}=mpio: this h5py was built without parallel HDF5 (h5py.get_config().mpi is False); "
            f"use {param('io')}=gather or install an MPI build of h5py",
        )
    if mode == "auto":
        return "mpio" if size > 1 and parallel_hdf5() else "gather"
    return mode


def open_writer(mode: str, comm, path: str, quantities: list[str]):
    return (MpioWriter if mode == "mpio" else GatherWriter)(comm, path, quantities)
