"""Which MPI launcher starts a ``landscape`` command on N ranks: $LANDSCAPE_MPIEXEC, else the mpiexec beside
this Python, else the one on PATH; asking for ranks without any is an error that says how to get one."""

import sys

import pytest

from landscape.errors import InputError
from landscape.parallel.launch import cli_command, mpiexec_command


@pytest.fixture
def no_launcher(tmp_path, monkeypatch):
    """A Python in a folder without mpiexec, an empty PATH and no $LANDSCAPE_MPIEXEC."""
    (tmp_path / "venv").mkdir()
    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("LANDSCAPE_MPIEXEC", raising=False)
    return tmp_path


def executable(path):
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_the_launcher_is_the_variable_then_the_one_beside_python_then_the_one_on_path(no_launcher, monkeypatch):
    assert mpiexec_command() is None
    on_path = executable(no_launcher / "bin" / "mpiexec")
    assert mpiexec_command() == [on_path]
    beside = executable(no_launcher / "venv" / "mpiexec")
    assert mpiexec_command() == [beside]
    monkeypatch.setenv("LANDSCAPE_MPIEXEC", "srun  --mpi=pmix")
    assert mpiexec_command() == ["srun", "--mpi=pmix"]  # split on spaces, however many


def test_one_process_runs_the_module_with_this_python(no_launcher):
    args = ["--x=-1:1:5", "--surf_file", "a b.h5"]
    assert cli_command("surface", args) == [sys.executable, "-m", "landscape", "surface", *args]


def test_ranks_put_the_launcher_and_their_number_in_front(no_launcher, monkeypatch):
    monkeypatch.setenv("LANDSCAPE_MPIEXEC", "mpirun --oversubscribe")
    assert cli_command("info", ["s.h5"], ranks=3) == [
        "mpirun", "--oversubscribe", "-n", "3", sys.executable, "-m", "landscape", "info", "s.h5"
    ]  # fmt: skip


def test_ranks_without_a_launcher_are_refused_saying_how_to_get_one(no_launcher):
    with pytest.raises(InputError) as caught:
        cli_command("surface", [], ranks=2)
    assert str(caught.value) == (
        "2 ranks asked for but no MPI launcher was found: install mpi4py and mpich (make demo does), "
        "or set LANDSCAPE_MPIEXEC"
    )
