"""Writes the system refuses (a full disk) are one input error naming the file, with no partial file left
and the previous version whole; a dead process's partial files are removed beside every file made.
(On a real full disk, for every command: ``test_atomic_full_disk.py``.)"""

import errno
import os
import subprocess
import sys

import h5py
import pytest

from landscape.errors import InputError
from landscape.io import atomic


def dead_pid() -> str:
    return subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def full_disk(monkeypatch):
    """Every fsync fails as on a full disk (tmpfs and NFS report ENOSPC there)."""

    def refuse(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", refuse)


def test_a_refused_write_names_the_file_leaves_the_old_one_whole_and_no_partial(tmp_path, full_disk):
    path = tmp_path / "run.json"
    path.write_text("the previous version")
    with pytest.raises(InputError, match=rf"^{path} cannot be written \(No space left on device\)$"):
        atomic.write_file(str(path), b"the next version")
    assert path.read_text() == "the previous version" and os.listdir(tmp_path) == ["run.json"]


def test_an_hdf5_file_made_on_a_full_disk_is_not_made_and_leaves_no_partial(tmp_path, full_disk):
    def fill(f):
        f.create_dataset("values", data=[1.0, 2.0])

    with pytest.raises(InputError, match=r"^surface file .*s\.h5 cannot be written \(No space left on device\)$"):
        atomic.make_hdf5(str(tmp_path / "s.h5"), "surface file", fill)
    assert os.listdir(tmp_path) == []


def test_an_hdf5_file_is_made_whole_and_a_failing_maker_s_own_error_is_raised_as_it_is(tmp_path):
    def fill(f):
        f.create_dataset("values", data=[1.0, 2.0])

    atomic.make_hdf5(str(tmp_path / "s.h5"), "surface file", fill)
    with h5py.File(tmp_path / "s.h5") as f:
        assert list(f["values"][()]) == [1.0, 2.0]

    def broken(f):
        f.create_dataset("values", data=[1.0])
        raise ZeroDivisionError("a bug")

    with pytest.raises(ZeroDivisionError, match="a bug"):
        atomic.make_hdf5(str(tmp_path / "t.h5"), "surface file", broken)
    assert sorted(os.listdir(tmp_path)) == ["s.h5"]
    with pytest.raises(InputError, match="appeared while this one was being written"):
        atomic.make_hdf5(str(tmp_path / "s.h5"), "surface file", fill)  # never over an existing file


def test_the_reason_is_found_in_the_errors_h5py_wraps_around_a_refused_write():
    wrapped = ValueError(
        "Unable to synchronously create dataset (file write failed: time = Sun Dec  6 01:21:43 2026\n, filename = "
        "'/tmp/full/s.h5.partial-vm-8739', file descriptor = 3, errno = 28, error message = 'No space left on "
        "device', buf = 0x7f614a46eeb8, total write size = 82088)"
    )
    assert atomic.refusal(wrapped) == "No space left on device"
    assert atomic.refusal(OSError(errno.EIO, "Input/output error", "x")) == "Input/output error"
    assert atomic.refusal(ValueError("Unable to synchronously create dataset (name already exists)")) is None
    bug = KeyError("values")
    assert atomic.write_error("surface file", "s.h5", bug) is bug


def test_a_dead_process_s_partial_files_are_removed_from_a_folder_and_live_ones_kept(tmp_path):
    dead = dead_pid()
    stale = [f"latest.pt.partial-{atomic.HOST}-{dead}", f"log.csv.partial-{atomic.HOST}-{dead}"]
    live = [f"latest.pt.partial-{atomic.HOST}-{os.getppid()}", f"run.json.partial-otherhost-{dead}", "latest.pt"]
    for name in stale + live:
        (tmp_path / name).write_text("")
    assert sorted(os.path.basename(p) for p in atomic.remove_stale_partials_in(str(tmp_path))) == sorted(stale)
    assert sorted(os.listdir(tmp_path)) == sorted(live)
