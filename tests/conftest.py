"""Shared helpers: run the CLIs in a subprocess, serially or under an MPI launcher."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = str(ROOT / "tests" / "plugins.py")


def mpiexec() -> list[str] | None:
    """The launcher to test with: $LANDSCAPE_MPIEXEC, else the venv's, else one on PATH."""
    if os.environ.get("LANDSCAPE_MPIEXEC"):
        return os.environ["LANDSCAPE_MPIEXEC"].split()
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("mpiexec")
    return [found] if found else None


def require_mpi() -> list[str]:
    launcher = mpiexec()
    if launcher is None:
        if os.environ.get("CI"):
            pytest.fail("no MPI launcher found in CI: MPI tests must run there (set LANDSCAPE_MPIEXEC)")
        pytest.skip("no MPI launcher (install mpi4py and mpich, or set LANDSCAPE_MPIEXEC)")
    return launcher


def command(program: str, args: list[str], ranks: int | None = None) -> list[str]:
    cmd = [sys.executable, "-m", f"landscape.cli.{program}", *args]
    if ranks is not None:
        cmd = [*require_mpi(), "-n", str(ranks), *cmd]
    return cmd


def run(program: str, args: list[str], ranks: int | None = None, timeout: float = 180, **kw):
    env = dict(os.environ, **kw.pop("env", {}))
    return subprocess.run(command(program, args, ranks), capture_output=True, text=True, timeout=timeout,
                          cwd=kw.pop("cwd", ROOT), env=env, **kw)


@pytest.fixture
def plugins() -> str:
    return PLUGINS
