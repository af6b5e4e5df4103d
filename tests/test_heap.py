"""The computing commands' processes keep the memory a batch frees (``landscape.heap``)."""

import os
import platform
import resource
import subprocess
import sys

import pytest

from landscape import api, heap
from landscape.cli import main as cli_main
from landscape.errors import UsageError

from conftest import ROOT, landscape

glibc = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's"
)

# a batch's activations: 100 blocks of 100 kB, freed together, eight times over in a fresh process; the
# page faults of each round (glibc trims the freed top of the heap past 128 kB and faults it in again)
ROUNDS = """
import resource, sys, torch
from landscape import heap
kept = heap.keep_freed_memory() if sys.argv[1] == "keep" else None
faults = []
for _ in range(8):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [torch.empty(25_000).fill_(1.0) for _ in range(100)]
    del blocks
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(kept, *faults)
"""
PAGES = 100 * 100_000 // resource.getpagesize()


def rounds(mode: str) -> tuple[str, list[int]]:
    environ = {
        name: value
        for name, value in os.environ.items()  # not the user's own malloc settings
        if not name.startswith("MALLOC_") and name not in ("GLIBC_TUNABLES", "LD_PRELOAD")
    }
    out = subprocess.run(
        [sys.executable, "-c", ROUNDS, mode],
        capture_output=True,
        text=True,
        check=True,
        env=environ,
        cwd=ROOT,
        timeout=120,
    )
    kept, *faults = out.stdout.split()
    return kept, [int(f) for f in faults]


@glibc
def test_freed_blocks_are_reused_without_faulting_their_pages_in_again():
    kept, faults = rounds("keep")
    assert kept == "True" and max(faults[2:]) < PAGES // 20, faults
    left = rounds("leave")[1]
    assert min(left[2:]) > 10 * max(1, max(faults[2:])), (faults, left)  # what the setting saves, every round


def test_the_users_own_malloc_settings_win():
    for environ in (
        {"MALLOC_TRIM_THRESHOLD_": "0"},
        {"MALLOC_MMAP_MAX_": "65536"},
        {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"},
        {"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"},
    ):
        assert heap.keep_freed_memory(environ) is False, environ


def test_the_computing_commands_keep_freed_memory_and_the_plotting_ones_do_not(monkeypatch, capsys):
    """From the command line and from the Python API alike."""
    calls = []
    monkeypatch.setattr(heap, "keep_freed_memory", lambda: calls.append(True))
    for command, kept in (("surface", True), ("train", True), ("curvature", True), ("plot1d", False), ("info", False)):
        calls.clear()
        assert landscape(command, "--no_such_flag") == 2
        assert calls == ([True] if kept else []), command
        calls.clear()
        with pytest.raises(UsageError):
            getattr(api, command)(no_such_parameter=1)
        assert calls == ([True] if kept else []), f"api.{command}"
    assert set(heap.COMPUTING) <= set(cli_main.COMMANDS)
    capsys.readouterr()
