"""The communicator: agreeing on failures, choosing threads per rank (no MPI needed), and the shared
counter under a real MPI launcher."""

import os
import subprocess
import sys

import pytest

from landscape.errors import CollectiveFailure, ConfigError, InputError
from landscape.parallel import busy
from landscape.parallel.comm import SerialComm, agree, threads_per_rank
from landscape.parallel.launch import mpiexec_command

from conftest import require_mpi


class Ranks:
    """A stand-in world whose allgather returns what the other ranks are scripted to report."""

    def __init__(self, rank: int, others: dict, size: int = 3, local_size: int = 1):
        self.rank, self.size, self.local_size, self.others = rank, size, local_size, others

    def allgather(self, value):
        return [value if r == self.rank else self.others.get(r) for r in range(self.size)]


def test_agree_returns_the_result_when_every_rank_succeeds():
    assert agree(SerialComm(), lambda a, b: a + b, 2, b=3) == 5
    assert agree(Ranks(0, {}), lambda: "ok") == "ok"


def test_a_failure_on_this_rank_becomes_everyones_with_its_code_and_fields():
    def bad():
        raise ConfigError("batch_size", 0, "a positive whole number")

    with pytest.raises(CollectiveFailure) as caught:
        agree(SerialComm(), bad)
    assert caught.value.exit_status == 2 and caught.value.rank == 0 and caught.value.fields == ("batch_size",)
    assert caught.value.spelled({"batch_size": "--batch_size"}).startswith("--batch_size=0: expected")
    assert str(caught.value).startswith("batch_size=0: expected")


def test_a_failure_on_another_rank_stops_this_one_too():
    report = ("checkpoint m.pt does not exist", InputError.exit_status, "traceback", 2)
    with pytest.raises(CollectiveFailure) as caught:
        agree(Ranks(0, {2: report}), lambda: "fine here")
    assert caught.value.rank == 2 and caught.value.exit_status == 3 and "m.pt" in str(caught.value)


def test_a_failure_agreed_inside_still_names_the_rank_that_failed():
    """A collective step inside another (the tuning's measurements inside the job's settings): every rank
    raises the inner failure, and the outer agreement keeps its rank, code and traceback."""

    def inner():
        raise CollectiveFailure("out of cheese", InputError.exit_status, 1, "rank 1's traceback")

    with pytest.raises(CollectiveFailure) as caught:
        agree(Ranks(0, {1: ("out of cheese", 3, "rank 1's traceback", 1)}), inner)
    assert (caught.value.rank, caught.value.exit_status, caught.value.detail) == (1, 3, "rank 1's traceback")
    assert str(caught.value) == "out of cheese"


@pytest.mark.parametrize(
    "raised, code, words",
    [(KeyError("k"), 1, "internal error: KeyError"), (SystemExit(0), 1, "internal error: SystemExit: 0")],
)
def test_bugs_and_stray_sys_exit_are_internal_errors_never_a_silent_success(raised, code, words):
    def fn():
        raise raised

    with pytest.raises(CollectiveFailure) as caught:
        agree(SerialComm(), fn)
    assert caught.value.exit_status == code and str(caught.value).startswith(words)


def test_threads_follow_slurm_then_the_cores_shared_by_the_ranks_of_a_node(monkeypatch, tmp_path):

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(busy, "STAT", str(tmp_path / "no_stat"))  # an idle machine: nobody else running
    assert threads_per_rank(Ranks(0, {}, local_size=4), environ={}).count == 2
    assert threads_per_rank(Ranks(0, {}, local_size=1), environ={}).count == 8
    assert threads_per_rank(Ranks(0, {}, local_size=16), environ={}).count == 1
    assert threads_per_rank(Ranks(0, {}, local_size=4), environ={"SLURM_CPUS_PER_TASK": "3"}).count == 3
    assert threads_per_rank(SerialComm(), 5, environ={}).count == 5
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})  # a process bound to 2 of the 8 cores
    assert threads_per_rank(SerialComm(), environ={}).count == 2
    assert threads_per_rank(Ranks(0, {}, local_size=2), environ={}).count == 2  # 2 ranks bound to 2 cores each
    assert threads_per_rank(SerialComm(), environ={"SLURM_CPUS_PER_TASK": "4"}).count == 2


def test_threads_asked_beyond_the_usable_cores_are_capped_with_a_note(monkeypatch):

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    choice = threads_per_rank(SerialComm(), 100000, environ={})
    assert choice.count == 2 and "threads=100000 is more than the 2 cores" in choice.note
    for bad in (0, -3, True, 2.5):
        with pytest.raises(ConfigError, match="threads="):
            threads_per_rank(SerialComm(), bad, environ={})


BUSY_RANK_ZERO = """
import time
from landscape.parallel import comm as comm_module
world = comm_module.world()
counter = world.counter()
world.barrier()
if world.rank == 0:
    started = time.perf_counter()
    while time.perf_counter() - started < 2.0:  # computing: no MPI call for 2 s
        pass
else:
    started = time.perf_counter()
    firsts = [counter.claim(3) for _ in range(50)]
    assert firsts == list(range(0, 150, 3)), firsts
    print(f"claims took {time.perf_counter() - started:.3f} s")
world.barrier()
counter.free()
"""


def test_a_rank_claims_work_while_rank_zero_computes_without_waiting_for_it():
    """The counter lives on rank 0, but a claim must not wait until rank 0 next enters MPI (with a
    window lock per claim, MPICH made every claim wait for rank 0's chunk to finish)."""
    require_mpi()
    proc = subprocess.run(
        [*mpiexec_command(), "-n", "2", sys.executable, "-c", BUSY_RANK_ZERO],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    took = float(proc.stdout.split("claims took ")[1].split()[0])
    assert took < 1.0, proc.stdout  # 2 s or more when claims wait for rank 0 (slack for a loaded machine)


def test_the_placement_names_each_host_s_ranks_as_ranges(monkeypatch):
    from landscape.parallel import comm as comm_module

    class Hosts:  # the ranks' host names on 2 nodes with a block, then a cyclic tail
        hosts = ["node1", "node1", "node2", "node2", "node1", "node2", "node2"]

    assert comm_module.placement(Hosts()) == {"node1": "0-1,4", "node2": "2-3,5-6"}
    assert comm_module.placement(SerialComm()) == {comm_module.socket.gethostname(): "0"}


def test_a_wait_that_cannot_end_names_the_missing_ranks_by_host():
    from landscape.errors import ExitStatus, RanksLost
    from landscape.parallel.comm import MpiComm

    comm = object.__new__(MpiComm)  # the naming alone: no MPI
    comm.rank, comm.patience = 0, 3.6
    comm.hosts = ["node1", "node1", "node2", "node2", "node3", "node3"]
    lost = comm._lost([2, 3, 5], "SIGTERM")
    assert isinstance(lost, RanksLost) and lost.exit_status == ExitStatus.LOST == 7
    assert lost.named == "ranks 2-3 on node2; rank 5 on node3"
    assert str(lost).startswith("ranks 2-3 on node2; rank 5 on node3 did not answer within 4 s of SIGTERM")


def test_same_everywhere_names_the_first_field_that_differs_and_where():
    """A configuration opened field by field (dataclasses, dicts): the first differing field in name order,
    its value on rank 0 and on the first rank that differs; NaN equals NaN, 1 differs from 1.0."""
    from dataclasses import dataclass

    from landscape.parallel.comm import _flat, same_everywhere

    @dataclass(frozen=True)
    class Axis:
        lo: float
        num: int

    mine = {"grid": Axis(-1.0, 5), "loss": "crossentropy", "tol": float("nan")}
    same_everywhere(Ranks(0, {1: _flat(mine), 2: _flat(mine)}), "the job", mine)
    other = {"grid": Axis(-1.0, 7), "loss": "mse", "tol": float("nan")}
    with pytest.raises(InputError) as caught:
        same_everywhere(Ranks(0, {1: _flat(mine), 2: _flat(other)}), "the job", mine)
    assert str(caught.value) == (
        "the ranks disagree on the job: grid.num is 5 on rank 0 and 7 on rank 2; every rank must run the same command"
    )
    with pytest.raises(InputError, match="grid.num is 5 on rank 0 and 5.0 on rank 1"):
        same_everywhere(Ranks(0, {1: _flat({**mine, "grid": Axis(-1.0, 5.0)}), 2: _flat(mine)}), "the job", mine)
    with pytest.raises(InputError, match=r"extra is \(absent\) on rank 0 and 1 on rank 1"):
        same_everywhere(Ranks(0, {1: _flat({**mine, "extra": 1}), 2: _flat(mine)}), "the job", mine)


def test_on_a_busy_machine_a_rank_takes_the_cores_other_programs_leave(monkeypatch, tmp_path):
    """The kernel's count of running threads, less this job's ranks on the node, keeps as many cores
    busy; a rank's share of the rest, with a note.  Not where the job runs on a subset of the cores (an
    allocation: the count is of the whole machine), nor where the threads or Slurm say."""

    stat = tmp_path / "stat"
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    for running, ranks, expected in ((1, 1, 8), (3, 1, 6), (8, 2, 1), (20, 1, 1), (5, 2, 2)):
        stat.write_text(f"cpu  1 2 3\nprocs_running {running}\nprocs_blocked 0\n")
        threads = threads_per_rank(Ranks(0, {}, local_size=ranks), environ={}, stat=str(stat))
        assert threads.count == expected, (running, ranks)
        assert ("the machine is busy" in threads.note) == (expected < 8 // ranks), threads.note
    assert threads.note == (
        "the machine is busy (3 of its 8 cores running other programs): 2 thread(s) per rank instead of 4 "
        "(--threads to choose)"
    )
    stat.write_text("procs_running 8\n")
    assert threads_per_rank(SerialComm(), 3, environ={}, stat=str(stat)).count == 3  # asked for
    assert threads_per_rank(SerialComm(), environ={"SLURM_CPUS_PER_TASK": "4"}, stat=str(stat)).count == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})  # pinned to 2 of the 8: not counted
    assert threads_per_rank(SerialComm(), environ={}, stat=str(stat)).count == 2
