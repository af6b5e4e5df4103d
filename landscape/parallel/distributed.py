"""torch.distributed set up from the MPI world: the one place that starts a process group.

``mpiexec -n 8 landscape train ...`` and ``srun landscape train ...`` need no second launcher: the
ranks and their number come from MPI, and rank 0 picks the rendezvous address (its host and a free
port) and broadcasts it with mpi4py.  Gloo on CPUs, NCCL on GPUs.  A job of one process starts no
process group at all (``Collective``, the serial case, does nothing).

The trainer sees only the small interface below: ``wrap`` (DistributedDataParallel), ``sum_`` and
``mean_`` (one all-reduce of a list of tensors, flattened into one buffer), and the seconds and bytes
those spent, for the log.
"""

from __future__ import annotations

import inspect
import os
import socket
import time
from datetime import timedelta

import torch
from torch import nn

TIMEOUT = timedelta(minutes=30)  # a rank that fails aborts the MPI job before this matters


class Collective:
    """One process: every reduction is the identity."""

    rank, size = 0, 1

    def __init__(self):
        self.seconds, self.bytes = 0.0, 0

    def wrap(self, model: nn.Module) -> nn.Module:
        return model

    def sum_(self, tensors: list[torch.Tensor]) -> None:
        pass

    def mean_(self, tensors: list[torch.Tensor]) -> None:
        pass

    def close(self) -> None:
        pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _address() -> str:
    """This host's address for the other ranks: ``$MASTER_ADDR`` if set, else the host name's address."""
    if os.environ.get("MASTER_ADDR"):
        return os.environ["MASTER_ADDR"]
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


class TorchCollective(Collective):
    """A torch.distributed process group over the ranks of ``comm`` (``parallel.comm.MpiComm``)."""

    def __init__(self, comm, device: str):
        import torch.distributed as dist  # only where ranks train on GPUs: NCCL, set up on demand

        super().__init__()
        self.dist, self.rank, self.size = dist, comm.rank, comm.size
        self.device = torch.device(device)
        self.backend = "nccl" if self.device.type == "cuda" else "gloo"
        where = comm.bcast(f"tcp://{_address()}:{_free_port()}" if comm.rank == 0 else None)
        dist.init_process_group(self.backend, init_method=where, rank=comm.rank, world_size=comm.size, timeout=TIMEOUT)
        self.where = where

    def wrap(self, model: nn.Module) -> nn.Module:
        """DistributedDataParallel; BatchNorm buffers are not broadcast (the trainer moves them per step),
        and a comm hook counts the seconds and bytes of the gradient all-reduces."""
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.device.index or 0] if self.device.type == "cuda" else None

        quiet = (
            "forward_sync_buffers"
            if "forward_sync_buffers" in inspect.signature(DistributedDataParallel).parameters
            else "broadcast_buffers"
        )  # the newer name of the same switch
        ddp = DistributedDataParallel(model, device_ids=ids, **{quiet: False})
        ddp.register_comm_hook(self, _timed_average)
        return ddp

    def _reduce(self, tensors: list[torch.Tensor], divide: bool) -> None:
        if not tensors:
            return
        started = time.perf_counter()
        groups: dict = {}
        for t in tensors:
            groups.setdefault(t.dtype, []).append(t)
        for same in groups.values():
            flat = torch.cat([t.reshape(-1) for t in same]).to(self.device)
            self.dist.all_reduce(flat)
            if divide:
                flat.div_(self.size)
            self.bytes += flat.numel() * flat.element_size()
            start = 0
            for t in same:
                t.copy_(flat[start : start + t.numel()].view_as(t))
                start += t.numel()
        self.seconds += time.perf_counter() - started

    def sum_(self, tensors: list[torch.Tensor]) -> None:
        self._reduce(tensors, divide=False)

    def mean_(self, tensors: list[torch.Tensor]) -> None:
        self._reduce(tensors, divide=True)

    def close(self) -> None:
        if self.dist.is_initialized():
            self.dist.destroy_process_group()


def _timed_average(state: TorchCollective, bucket):
    """DDP's default all-reduce (average over ranks), timed from launch to completion (so overlapping
    the rest of the backward pass) and counted in bytes."""
    started = time.perf_counter()
    buffer = bucket.buffer().div_(state.size)
    state.bytes += buffer.numel() * buffer.element_size()
    future = state.dist.all_reduce(buffer, async_op=True).get_future()

    def done(fut):
        state.seconds += time.perf_counter() - started
        return fut.value()[0]

    return future.then(done)


def collective(comm, device: str) -> Collective:
    """The ranks of ``comm`` joined by torch.distributed, or the serial collective for one process."""
    return TorchCollective(comm, device) if comm.size > 1 else Collective()


__all__ = ["Collective", "TorchCollective", "collective"]
