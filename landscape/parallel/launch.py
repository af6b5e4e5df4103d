"""Starting a ``landscape`` command on N ranks from Python (the demo, the tests, benchmarks)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ..errors import InputError


def mpiexec_command() -> list[str] | None:
    """``$LANDSCAPE_MPIEXEC`` (split on spaces), else the ``mpiexec`` beside this Python, else on PATH."""
    if os.environ.get("LANDSCAPE_MPIEXEC"):
        return os.environ["LANDSCAPE_MPIEXEC"].split()
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("mpiexec")
    return [found] if found else None


def cli_command(command: str, args: list[str], ranks: int | None = None) -> list[str]:
    """``[mpiexec -n ranks] python -m landscape <command> args``; ``ranks=None`` runs one process."""
    cmd = [sys.executable, "-m", "landscape", command, *args]
    if ranks is None:
        return cmd
    launcher = mpiexec_command()
    if launcher is None:
        raise InputError(
            f"{ranks} ranks asked for but no MPI launcher was found: install mpi4py and mpich "
            "(make demo does), or set LANDSCAPE_MPIEXEC"
        )
    return [*launcher, "-n", str(ranks), *cmd]
