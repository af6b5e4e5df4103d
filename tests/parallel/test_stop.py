"""SIGTERM (a Slurm time limit, scancel) and SIGUSR1 (sbatch --signal): the round in progress is saved,
the run record says how the run ended, every rank leaves with exit code 143 and one line, and rerunning
the same command finishes to exactly the values of an uninterrupted run."""

import os
import signal
import time

import numpy as np
import pytest

from landscape.io.surface_file import read as read_surface

from conftest import done_count, landscape, process_tree, run, start

SLOW = {"LANDSCAPE_TEST_SLEEP": "0.05"}
POINTS = 41


def args(plugins, tmp_path, surf):
    return [
        "--model",
        f"{plugins}:slow_model",
        f"--x=-1:1:{POINTS}",
        "--no_test",
        "--batch_size",
        "5000",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--round_seconds",
        "0.1",
        "--threads",
        "1",
        "--surf_file",
        str(tmp_path / surf),
    ]


@pytest.mark.mpi
@pytest.mark.parametrize("ranks, signum, whom", [(None, signal.SIGTERM, "job"), (2, signal.SIGUSR1, "every process")])
def test_a_signal_saves_the_round_and_a_rerun_finishes_the_surface(tmp_path, plugins, ranks, signum, whom, monkeypatch):
    job = start("surface", args(plugins, tmp_path, "s.h5"), ranks, env=SLOW)
    deadline = time.monotonic() + 60
    while done_count(tmp_path / "s.h5") < 4 and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.02)
    for pid in process_tree(job.pid) if whom == "every process" else [job.pid]:  # as Slurm signals a job step
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
    out, err = job.communicate(timeout=60)
    name = signal.Signals(signum).name
    assert job.returncode == 143, err
    ours = [line for line in err.splitlines() if line.startswith("landscape")]  # Open MPI adds its own banners
    assert len(ours) == 1 and f"stopped by {name} after saving" in ours[0], err
    stopped = read_surface(str(tmp_path / "s.h5"))
    saved = int(stopped.done.sum())
    assert 4 <= saved < POINTS, f"not stopped mid-run ({saved} of {POINTS})"
    assert stopped.run["ended"] == f"stopped by {name}" and stopped.run["points_computed"] == saved
    assert np.isfinite(stopped.values["train_loss"][stopped.done]).all()

    monkeypatch.setenv("LANDSCAPE_TEST_SLEEP", "0")
    resumed = run("surface", args(plugins, tmp_path, "s.h5"), ranks)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{saved} already done, {POINTS - saved} to compute" in resumed.stdout
    assert landscape("surface", *args(plugins, tmp_path, "fresh.h5"), "--quiet") == 0
    a, b = read_surface(str(tmp_path / "s.h5")), read_surface(str(tmp_path / "fresh.h5"))
    assert a.done.all() and all(np.array_equal(a.values[q], b.values[q]) for q in b.values)
    assert [r["ended"] for r in a.runs] == [f"stopped by {name}", "complete"]


def test_a_stop_signal_during_shutdown_does_not_kill_a_finished_process():
    """Python's shutdown puts back the killing default handlers while modules are still torn down; a
    requeue timer's SIGUSR1 arriving then must not turn a finished job into a failed one."""
    import subprocess
    import sys

    code = (
        "import os, signal\n"
        "from landscape.parallel import stop\n"
        "stop.install()\n"
        "class Late:\n"
        "    def __del__(self):\n"  # runs in the module teardown, after the default handlers are back
        "        os.kill(os.getpid(), signal.SIGUSR1)\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        os.write(1, b'survived')\n"
        "late = Late()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "survived", (done.returncode, done.stderr)


def test_a_stop_signal_on_any_rank_is_every_rank_s_between_two_units(monkeypatch):
    """``requested`` is what a command made of units (report's runs, curvature's measures) asks between two:
    one rank's signal stops them all, the lowest rank's name is the one reported."""
    from landscape.parallel import stop
    from landscape.parallel.comm import SerialComm

    class Ranks:  # what allgather gives when ranks 1 and 2 received signals, rank 0 none
        def allgather(self, value):
            return [value, "SIGUSR1", "SIGTERM"]

    signals = stop.StopSignals()
    monkeypatch.setattr(stop, "_installed", signals)
    assert stop.requested(SerialComm()) is None
    assert stop.requested(Ranks()) == "SIGUSR1"
    signals.received = "SIGTERM"
    assert stop.requested(SerialComm()) == "SIGTERM"
    monkeypatch.setattr(stop, "_installed", None)  # no handler (the Python API): a signal kills as it always did
    assert stop.requested(SerialComm()) is None


def _rank_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            names = dict(v.split(b"=", 1) for v in environ.read().split(b"\0") if b"=" in v)
    except OSError:
        return None
    rank = names.get(b"PMI_RANK", names.get(b"OMPI_COMM_WORLD_RANK"))
    return int(rank) if rank is not None else None


@pytest.mark.mpi
def test_a_rank_lost_mid_round_is_named_and_the_others_leave_instead_of_hanging(tmp_path, plugins, monkeypatch):
    """Rank 1 frozen (as if its node had vanished: no answer, no closed socket), then the job signalled,
    as Slurm signals the ranks left when it ends a job for a lost node: rank 0 waits a few seconds plus
    two chunks for it at the end of the round, then leaves with exit code 7 and one line naming rank 1 and
    its host; the file keeps every round written before, and a rerun finishes it identical."""
    import socket

    job = start("surface", args(plugins, tmp_path, "s.h5"), 2, env=SLOW)
    deadline = time.monotonic() + 60
    while done_count(tmp_path / "s.h5") < 4 and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.02)
    ranks = {_rank_of(pid): pid for pid in process_tree(job.pid)}
    assert 1 in ranks, (ranks, job.poll(), done_count(tmp_path / "s.h5"))
    os.kill(ranks[1], signal.SIGSTOP)
    signalled = time.monotonic()
    os.kill(ranks[0], signal.SIGTERM)  # the ranks left, as Slurm's step daemon signals them
    out, err = job.communicate(timeout=60)
    took = time.monotonic() - signalled
    assert job.returncode == 7, err
    ours = [line for line in err.splitlines() if line.startswith("landscape")]
    assert len(ours) == 1 and f"rank 1 on {socket.gethostname()} did not answer within" in ours[0], err
    assert "of SIGTERM" in ours[0] and "resubmit the same command to resume" in ours[0]
    assert took < 15, f"{took:.1f} s"  # 3 s plus two chunks (0.05 s each), and the launcher's clean-up
    left = read_surface(str(tmp_path / "s.h5"))
    saved = int(left.done.sum())
    assert 4 <= saved < POINTS
    if os.environ.get("LANDSCAPE_TEST_MPIO") == "1":  # every rank holds an mpio file: closing it is collective
        assert "ended" not in left.run, left.run
        ended = "killed (no end recorded)"
    else:  # rank 0 alone holds the file: it records how the run ended
        ended = f"lost rank 1 on {socket.gethostname()}"
        assert left.run["ended"] == ended, left.run

    monkeypatch.setenv("LANDSCAPE_TEST_SLEEP", "0")
    resumed = run("surface", args(plugins, tmp_path, "s.h5"), 2)
    assert resumed.returncode == 0, resumed.stderr
    assert f"ended: {ended}" in resumed.stdout
    assert f"{saved} already done" in resumed.stdout
    assert landscape("surface", *args(plugins, tmp_path, "fresh.h5"), "--quiet") == 0
    a, b = read_surface(str(tmp_path / "s.h5")), read_surface(str(tmp_path / "fresh.h5"))
    assert a.done.all() and all(np.array_equal(a.values[q], b.values[q]) for q in b.values)


@pytest.mark.mpi
def test_a_signal_to_rank_zero_alone_waits_for_the_others_round_and_is_no_loss(tmp_path, plugins):
    """Rank 0 alone signalled (nothing lost), with the default 5 s round: the other rank learns of the
    signal only at the end of its round, up to a round later; rank 0 waits for it and the job stops
    as usual (143), instead of calling it lost."""
    flags = args(plugins, tmp_path, "s.h5")
    flags[flags.index("--round_seconds") + 1] = "5"
    flags[flags.index(f"--x=-1:1:{POINTS}")] = "--x=-1:1:401"
    job = start("surface", flags, 2, env=SLOW)
    deadline = time.monotonic() + 60
    while done_count(tmp_path / "s.h5") < 2 and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.02)
    ranks = {_rank_of(pid): pid for pid in process_tree(job.pid)}
    assert 0 in ranks, (ranks, job.poll())
    os.kill(ranks[0], signal.SIGTERM)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 143, err
    ours = [line for line in err.splitlines() if line.startswith("landscape")]
    assert len(ours) == 1 and "stopped by SIGTERM after saving" in ours[0], err
