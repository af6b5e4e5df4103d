"""Shared helpers: run the CLIs in a subprocess, serially or under an MPI launcher."""
import os
import subprocess
from pathlib import Path

import pytest

from landscape.parallel.launch import cli_command, mpiexec_command

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = str(ROOT / "tests" / "plugins.py")


def require_mpi() -> None:
    if mpiexec_command() is None:
        if os.environ.get("CI"):
            pytest.fail("no MPI launcher found in CI: MPI tests must run there (set LANDSCAPE_MPIEXEC)")
        pytest.skip("no MPI launcher (install mpi4py and mpich, or set LANDSCAPE_MPIEXEC)")


def command(program: str, args: list[str], ranks: int | None = None) -> list[str]:
    if ranks is not None:
        require_mpi()
    return cli_command(program, args, ranks)


def run(program: str, args: list[str], ranks: int | None = None, timeout: float = 180, **kw):
    env = dict(os.environ, **kw.pop("env", {}))
    return subprocess.run(command(program, args, ranks), capture_output=True, text=True, timeout=timeout,
                          cwd=kw.pop("cwd", ROOT), env=env, **kw)


def landscape(*argv) -> int:
    """The ``landscape`` command run in this process (one error boundary): its exit code."""
    from landscape.cli.main import main
    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def one_thread():
    """Small models gain nothing from intra-op threads, and on a busy machine lose much."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def plugins() -> str:
    return PLUGINS
