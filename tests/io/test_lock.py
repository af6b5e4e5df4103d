"""One job per surface file, also where HDF5's own file locking is switched off."""

import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from landscape.errors import InputError
from landscape.io.lock import SurfaceLock
from landscape.io.surface_file import read as read_surface

from conftest import ROOT, done_count, landscape, run, start

NO_HDF5_LOCKS = {"HDF5_USE_FILE_LOCKING": "FALSE"}


def try_lock_in_another_process(path) -> subprocess.CompletedProcess:
    code = (
        "import sys; from landscape.io.lock import SurfaceLock\n"
        "try:\n    SurfaceLock(sys.argv[1]).__enter__()\n"
        "except Exception as e:\n    print(e); sys.exit(3)\n"
    )
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT)


def test_a_held_lock_names_its_owner_and_is_gone_after_release(tmp_path):
    path = tmp_path / "s.h5"
    with SurfaceLock(str(path), "landscape surface --x=-1:1:5") as held:
        # (reading the sidecar here would release the lock: POSIX locks belong to the process and go
        # with the first close of any descriptor of the file; the other process reads the owner)
        other = try_lock_in_another_process(path)
        assert other.returncode == 3
        assert f"is being computed by process {os.getpid()} on {held.owner['host']}" in other.stdout
    assert not (tmp_path / "s.h5.lock").exists()
    assert try_lock_in_another_process(path).returncode == 0


def test_without_fcntl_locks_the_sidecar_is_created_exclusively(tmp_path, monkeypatch):
    def no_locks(*args):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "lockf", no_locks)
    path = str(tmp_path / "s.h5")
    with SurfaceLock(path):  # no sidecar yet: the one this job creates is its lock
        assert json.loads((tmp_path / "s.h5.lock").read_text())["pid"] == os.getpid()
        with pytest.raises(InputError, match=f"being computed by process {os.getpid()}"):
            SurfaceLock(path).__enter__()
    assert not (tmp_path / "s.h5.lock").exists()
    (tmp_path / "s.h5.lock").write_text(json.dumps({"host": os.uname().nodename, "pid": 2**22 + 7}))  # dead
    with SurfaceLock(path):
        assert json.loads((tmp_path / "s.h5.lock").read_text())["pid"] == os.getpid()  # taken over
    assert not (tmp_path / "s.h5.lock").exists()
    (tmp_path / "s.h5.lock").write_text(json.dumps({"host": os.uname().nodename, "pid": os.getppid()}))  # alive
    with pytest.raises(InputError, match=f"being computed by process {os.getppid()}"):
        SurfaceLock(path).__enter__()


@pytest.mark.slow
def test_a_second_job_on_the_same_file_is_refused_without_hdf5_locking(tmp_path, plugins, monkeypatch):
    args = [
        "--model",
        f"{plugins}:slow_model",
        "--x=-1:1:401",
        "--no_test",
        "--batch_size",
        "5000",
        "--threads",
        "1",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--round_seconds",
        "0.1",
        "--surf_file",
        str(tmp_path / "s.h5"),
    ]
    first = start("surface", args, env={**NO_HDF5_LOCKS, "LANDSCAPE_TEST_SLEEP": "0.05"})
    deadline = time.monotonic() + 60
    while done_count(tmp_path / "s.h5") < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    second = run("surface", args, env={**NO_HDF5_LOCKS, "LANDSCAPE_TEST_SLEEP": "0"})
    assert second.returncode == 3, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"is being computed by process {first.pid}" in lines[0], lines
    assert "HDF5_USE_FILE_LOCKING" not in lines[0]
    first.send_signal(signal.SIGTERM)  # the first job was not disturbed: it saves its round and stops
    out, err = first.communicate(timeout=120)
    assert first.returncode == 143, err
    assert not (tmp_path / "s.h5.lock").exists()
    monkeypatch.setenv("LANDSCAPE_TEST_SLEEP", "0")
    assert landscape("surface", *args[:-1], tmp_path / "fresh.h5", "--quiet") == 0
    a, b = read_surface(str(tmp_path / "s.h5")), read_surface(str(tmp_path / "fresh.h5"))
    assert 2 <= a.done.sum() < 401 and len(a.runs) == 1  # the refused job left no run record
    assert all(np.array_equal(a.values[q][a.done], b.values[q][a.done]) for q in b.values)


def test_a_symbolic_link_hard_link_or_foreign_file_at_the_lock_path_is_refused_and_left_alone(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path = str(tmp_path / "s.h5")
    os.symlink(victim, tmp_path / "s.h5.lock")
    with pytest.raises(InputError, match=f"lock file {path}.lock is a symbolic link to {victim}, which no job"):
        SurfaceLock(path).__enter__()
    os.remove(tmp_path / "s.h5.lock")
    os.link(victim, tmp_path / "s.h5.lock")
    with pytest.raises(InputError, match="is a file with 2 names"):
        SurfaceLock(path).__enter__()
    os.remove(tmp_path / "s.h5.lock")
    (tmp_path / "s.h5.lock").write_text("not a lock\n")
    with pytest.raises(InputError, match="a file of 11 bytes that holds no lock record"):
        SurfaceLock(path).__enter__()
    assert victim.read_text() == "precious\n" and (tmp_path / "s.h5.lock").read_text() == "not a lock\n"
    (tmp_path / "s.h5.lock").write_text(json.dumps({"host": "elsewhere", "pid": 1}))  # a dead job's record
    with SurfaceLock(path):
        assert json.loads((tmp_path / "s.h5.lock").read_text())["pid"] == os.getpid()  # taken over


def test_a_link_planted_at_a_partial_name_is_replaced_not_followed(tmp_path):
    from landscape.io import atomic

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    target = str(tmp_path / "out.json")
    os.symlink(victim, atomic.partial_path(target))  # the name a write by this process will use
    os.symlink(victim, target)  # and the output's own name
    atomic.write_file(target, b"{}")
    assert victim.read_text() == "precious\n"
    assert not os.path.islink(target) and (tmp_path / "out.json").read_text() == "{}"
    os.symlink(victim, atomic.partial_path(str(tmp_path / "new.h5")))
    atomic.make_hdf5(str(tmp_path / "new.h5"), "surface file", lambda f: f.create_dataset("values", data=[1.0]))
    assert victim.read_text() == "precious\n" and os.path.isfile(tmp_path / "new.h5")


@pytest.mark.parametrize("locks", [True, False], ids=["fcntl", "no-locks"])
def test_a_full_disk_refusing_the_owner_record_is_one_input_error_and_leaves_no_lock_file(tmp_path, monkeypatch, locks):
    from landscape.io import lock

    def refuse(*_):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def no_locks(*_):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(lock.os, "pwrite", refuse)
    if not locks:  # a file system without fcntl locks: the sidecar is created exclusively instead
        monkeypatch.setattr(lock.fcntl, "lockf", no_locks)
    path = str(tmp_path / "s.h5")
    with pytest.raises(InputError) as refused:
        SurfaceLock(path).__enter__()
    assert str(refused.value) == f"lock file {path}.lock cannot be written (No space left on device)"
    assert os.listdir(tmp_path) == []
