"""The only module that touches mpi4py: the world communicator, or its serial stand-in.

Serial is a chosen case: when no MPI launcher started this process, ``world()``
returns a ``SerialComm`` (rank 0 of 1) with the same interface and mpi4py is
never imported.  When a launcher did start it, failing to import mpi4py is an
error, never a silent fallback to serial.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import traceback
from dataclasses import dataclass, fields, is_dataclass
from types import SimpleNamespace

import numpy as np

from .. import checks
from ..errors import CollectiveFailure, ExitStatus, InputError, LandscapeError, RanksLost, UsageError, describe
from . import busy

# Variables that MPICH/Hydra, Open MPI, PMIx and Slurm's PMI set in every rank.
LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")

_current = None

# The least time rank 0, waiting in a collective call, gives the others after a stop signal before it
# calls the missing ones lost, where the caller asked for it (``watch``; the surface's scheduler: this
# plus a round plus two chunks).  Slurm signals the ranks left on the other nodes when it ends a job for
# a lost node, and kills them ``KillWait`` later (30 s by default).
PATIENCE_SECONDS = 3.0
ARRIVAL_TAG = 7301  # the point-to-point message that tells rank 0 a rank has reached a collective call


class SerialComm:
    """Rank 0 of a world of one."""

    rank, size, local_rank, local_size = 0, 1, 0, 1
    mpi = None

    @property
    def hosts(self) -> list[str]:
        return [socket.gethostname()]

    def watch(self, signals, patience: float | None) -> None:
        """No other rank to wait for."""

    def allgather(self, value):
        return [value]

    def node_allgather(self, value):
        return [value]

    def gather(self, value):
        return [value]

    def bcast(self, value):
        return value

    def max(self, value: float) -> float:
        return value

    def sum_(self, array) -> None:
        """Sum a float64 numpy array over ranks, in place."""

    def barrier(self) -> None:
        pass

    def counter(self) -> LocalCounter:
        return LocalCounter()

    def abort(self, code: int) -> None:
        sys.exit(code)


class MpiComm:
    """``MPI.COMM_WORLD`` behind the same small interface as ``SerialComm``."""

    def __init__(self):
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise UsageError(
                f"an MPI launcher started this process but mpi4py cannot be imported ({exc}); "
                "install mpi4py for this MPI (see README, 'Cluster install')"
            ) from None
        self._MPI = MPI
        self.mpi = MPI.COMM_WORLD
        self.rank = self.mpi.Get_rank()
        self.size = self.mpi.Get_size()
        self.node = self.mpi.Split_type(MPI.COMM_TYPE_SHARED)  # the ranks of this node
        self.local_rank = self.node.Get_rank()
        self.local_size = self.node.Get_size()
        self.hosts = self.mpi.allgather(socket.gethostname())  # every rank's host, in rank order
        self.signals, self.patience = None, None  # see ``watch``
        self._mark = np.zeros(1, np.uint8)  # the arrival messages carry nothing

    def _arrive(self) -> None:
        """Wait for every rank without spinning: MPI waits by polling, and ranks polling for one that is
        still computing or writing take the CPU from it when ranks outnumber cores.  One non-blocking
        barrier, tested with short sleeps, then the collective itself completes at once.

        Each rank also tells rank 0 it has arrived (an empty message, before the barrier), so that a wait
        that cannot end names who it waits for: when a stop signal came and, ``patience`` seconds after
        the later of the signal and the start of the wait, some ranks have still not arrived (their node
        lost: Slurm signals the ranks left), rank 0 raises ``RanksLost`` instead of hanging until the job
        is killed, and the error boundary's abort ends the others.  Only rank 0 judges: another rank
        may be waiting for rank 0 while it writes the round, which has no bound.  Not watching (the
        default): no such limit."""
        if self.rank == 0:
            heard = [self.mpi.Irecv([self._mark, 0, self._MPI.BYTE], r, ARRIVAL_TAG) for r in range(1, self.size)]
        else:
            heard = [self.mpi.Isend([self._mark, 0, self._MPI.BYTE], 0, ARRIVAL_TAG)]
        request = self.mpi.Ibarrier()
        started, pause = time.monotonic(), 1e-5
        signals = self.signals if self.rank == 0 else None
        while not request.Test():
            time.sleep(pause)
            pause = min(2 * pause, 1e-3)
            if signals and signals.received and time.monotonic() - max(started, signals.received_at) > self.patience:
                missing = [rank for rank, h in enumerate(heard, 1) if not h.Test()]
                if missing:  # else every rank has arrived and the barrier is about to complete
                    raise self._lost(missing, signals.received)
        self._MPI.Request.Waitall(heard)

    def watch(self, signals, patience: float | None) -> None:
        """From now on, rank 0 calls the ranks that have not reached a collective call ``patience`` seconds
        after a stop signal in ``signals`` (a ``parallel.stop.StopSignals``) lost; ``watch(None, None)``:
        wait as long as it takes (the default: ranks may legitimately be minutes apart)."""
        self.signals, self.patience = signals, patience

    def _lost(self, missing: list[int], signal_name: str) -> RanksLost:
        """Rank 0's error for a wait that cannot end: the ranks that did not arrive, by host."""
        where: dict[str, list[int]] = {}
        for rank in missing:
            where.setdefault(self.hosts[rank], []).append(rank)
        named = "; ".join(
            f"rank{'s' if len(ranks) > 1 else ''} {_ranges(ranks)} on {host}" for host, ranks in where.items()
        )
        return RanksLost(
            f"{named} did not answer within {self.patience:.0f} s of {signal_name} (node lost, or ranks "
            "killed); every round written before is kept: resubmit the same command to resume",
            named,
        )

    def allgather(self, value):
        self._arrive()
        return self.mpi.allgather(value)

    def gather(self, value):
        self._arrive()
        return self.mpi.gather(value, root=0)

    def node_allgather(self, value):
        """``value`` of every rank of this node, in node-local rank order."""
        return self.node.allgather(value)

    def bcast(self, value):
        self._arrive()
        return self.mpi.bcast(value, root=0)

    def max(self, value: float) -> float:
        self._arrive()
        return float(self.mpi.allreduce(float(value), op=self._MPI.MAX))

    def sum_(self, array) -> None:
        """Sum a float64 numpy array over ranks, in place (one Allreduce: the ranks' curvature shards)."""
        self.mpi.Allreduce(self._MPI.IN_PLACE, array, op=self._MPI.SUM)

    def barrier(self) -> None:
        self._arrive()

    def counter(self) -> SharedCounter:
        """Collective: a counter on rank 0 that every rank advances without the others' help."""
        return SharedCounter(self._MPI, self.mpi)

    def abort(self, code: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.mpi.Abort(code)


class LocalCounter:
    """The shared counter of a world of one."""

    def __init__(self):
        self.value = 0

    def claim(self, n: int) -> int:
        """Add ``n``; return the value before (the first of the ``n`` items claimed)."""
        start, self.value = self.value, self.value + n
        return start

    def free(self) -> None:
        pass


class SharedCounter:
    """A 64-bit counter in an MPI window on rank 0, advanced with one-sided ``Fetch_and_op``: a rank
    claims work in one call, without a collective and without waiting for the others.

    One passive-target epoch (``Lock_all``) stays open from creation to ``free``, and each claim
    is the atomic plus a ``Flush``.  A lock per claim would not do: MPICH grants a window lock by a
    message the target must answer, so every claim would wait until rank 0, busy computing its
    own chunk, next entered MPI; with the open epoch a claim needs nothing of rank 0, in MPICH and
    Open MPI alike."""

    def __init__(self, MPI, comm):

        self._MPI, self._np = MPI, np
        self.window = MPI.Win.Allocate(8 if comm.Get_rank() == 0 else 0, disp_unit=8, comm=comm)
        if comm.Get_rank() == 0:
            self.window.Lock(0, MPI.LOCK_EXCLUSIVE)
            np.frombuffer(self.window.tomemory(), dtype=np.int64)[:] = 0
            self.window.Unlock(0)
        comm.Barrier()
        self.window.Lock_all()

    def claim(self, n: int) -> int:
        add, before = self._np.array([n], dtype=self._np.int64), self._np.zeros(1, dtype=self._np.int64)
        self.window.Fetch_and_op(add, before, 0, 0, self._MPI.SUM)
        self.window.Flush(0)
        return int(before[0])

    def free(self) -> None:
        """Collective."""
        self.window.Unlock_all()
        self.window.Free()


def launched_by_mpi(environ=os.environ) -> bool:
    return any(name in environ for name in LAUNCHER_VARIABLES)


def launcher_rank(environ=os.environ) -> int:
    """This process's rank as the launcher numbered it (0 without one), read without starting MPI:
    for serial programs (the plots) run under mpiexec by mistake, which only rank 0 should run."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if environ.get(name, "").isdigit():
            return int(environ[name])
    return 0


def world():
    """The world communicator of this process, created once."""
    global _current
    if _current is None:
        _current = MpiComm() if launched_by_mpi() else SerialComm()
        tasks = int(os.environ.get("SLURM_STEP_NUM_TASKS", "1") or 1)
        if "SLURM_STEP_NUM_TASKS" in os.environ and tasks > 1 and _current.size == 1 and "SLURM_PROCID" in os.environ:
            raise UsageError(
                f"srun started {tasks} tasks but each sees an MPI world of 1; "
                "srun's MPI plugin is not the one your mpi4py's MPI speaks: pass it, e.g. 'srun --mpi=pmi2' "
                "(or pmix), or set LANDSCAPE_SRUN_MPI=pmi2 for the sbatch scripts"
            )
    return _current


def current():
    """The communicator if one was made, else a serial one (used by the error boundary)."""
    return _current if _current is not None else SerialComm()


def agree(comm, fn, *args, **kwargs):
    """Run ``fn`` on every rank; if it fails on any rank, raise the same failure on all.

    One ``allgather`` of a short status, so a failure found by one rank (a missing
    file, a bad value) ends every rank cleanly instead of leaving them waiting.
    """
    try:
        result, status = fn(*args, **kwargs), None
    except CollectiveFailure as exc:  # agreed inside fn (every rank raises it): the rank that failed stays named
        result, status = None, (exc.marked, int(exc.exit_status), exc.detail, exc.rank)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - shared with the other ranks below
        result = None
        if isinstance(exc, LandscapeError):
            first = exc.marked.strip().splitlines()[0] if exc.marked.strip() else ""
            status = (first, int(exc.exit_status), traceback.format_exc(), comm.rank)
        else:  # a bug, or user code that called sys.exit: never a silent success
            status = (f"internal error: {describe(exc)}", int(ExitStatus.INTERNAL), traceback.format_exc(), comm.rank)
    for reported in comm.allgather(status):
        if reported is not None:
            message, code, detail, rank = reported
            raise CollectiveFailure(message, code, rank, detail)
    return result


def _flat(value, prefix: str = "") -> dict[str, str]:
    """A configuration as ``{"grid.x.spec": "'-1:1:5'", ...}``: dataclasses, dicts and namespaces opened
    field by field, every leaf as its ``repr`` (so NaN equals NaN, and 1 differs from 1.0 and True)."""
    if is_dataclass(value) and not isinstance(value, type):
        items = {f.name: getattr(value, f.name) for f in fields(value)}
    elif isinstance(value, dict):
        items = value
    elif isinstance(value, SimpleNamespace):
        items = vars(value)
    else:
        return {prefix: repr(value)}
    out = {}
    for key, item in items.items():
        out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
    return out


def same_everywhere(comm, what: str, value, hint: str = "every rank must run the same command") -> None:
    """Collective: ``value`` (a configuration: dataclasses, dicts, plain values) is the same on every rank,
    else every rank raises the same input error naming the first field that differs and its value on
    rank 0 and on the first rank that differs.  What an MPMD launch (``mpiexec -n 1 A : -n 1 B``) or a
    rank that reads other files would otherwise give: a surface whose points were computed by
    different jobs, each with a valid checksum."""
    everyone = comm.allgather(_flat(value))
    for key in sorted(set().union(*everyone)):
        seen = [mine.get(key, "(absent)") for mine in everyone]
        other = next((rank for rank, v in enumerate(seen) if v != seen[0]), None)
        if other is not None:
            shown = lambda v: v if len(v) <= 60 else v[:57] + "..."
            raise InputError(
                f"the ranks disagree on {what}: {key} is {shown(seen[0])} on rank 0 and {shown(seen[other])} "
                f"on rank {other}; {hint}"
            )


def placement(comm) -> dict[str, str]:
    """Where the ranks run: each host's ranks as ranges, ``{"node1": "0-1", "node2": "2-3"}``.
    A rank's node-local rank is its place among its host's ranks (MPI's shared-memory split keeps the
    ranks' order); a thousand ranks on fifty nodes fit in a run record."""
    hosts: dict[str, list[int]] = {}
    for rank, host in enumerate(comm.hosts):
        hosts.setdefault(host, []).append(rank)
    return {host: _ranges(ranks) for host, ranks in hosts.items()}


def _ranges(ranks: list[int]) -> str:
    """``[0, 1, 2, 5]`` as ``"0-2,5"``."""
    runs = [[ranks[0], ranks[0]]]
    for rank in ranks[1:]:
        if rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


@dataclass(frozen=True)
class Threads:
    """Torch threads for one rank, and a note when the request had to be lowered."""

    count: int
    note: str = ""


def threads_per_rank(comm, requested: int | None = None, environ=os.environ, stat: str | None = None) -> Threads:
    """Threads for this rank: as requested (at most the cores it may run on), else the node's
    cores shared by its ranks (``$SLURM_CPUS_PER_TASK`` when Slurm says), and on a machine whose every
    core this job may use, only the cores other programs leave free (``busy``)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 1
    if requested is not None:
        checks.whole("threads", requested, expected="a positive number of threads")
        if requested > usable:
            return Threads(
                usable, f"threads={requested} is more than the {usable} cores this rank may run on; using {usable}"
            )
        return Threads(requested)
    if environ.get("SLURM_CPUS_PER_TASK", "").isdigit():
        return Threads(max(1, min(usable, int(environ["SLURM_CPUS_PER_TASK"]))))
    ranks = max(1, comm.local_size)
    cores = min(os.cpu_count() or 1, usable * ranks)
    share = max(1, cores // ranks)
    if busy.whole_machine():
        free = busy.free_cores(cores, ranks, stat or busy.STAT)
        lowered = max(1, free // ranks)
        if lowered < share:
            return Threads(
                lowered,
                f"the machine is busy ({cores - free} of its {cores} cores running other programs): "
                f"{lowered} thread(s) per rank instead of {share} (--threads to choose)",
            )
    return Threads(share)


__all__ = [
    "world",
    "current",
    "agree",
    "same_everywhere",
    "placement",
    "threads_per_rank",
    "Threads",
    "SerialComm",
    "MpiComm",
]
