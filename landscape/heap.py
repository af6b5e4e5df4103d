"""The process's heap: memory a batch frees is kept for the next batch, not handed back to the kernel.

glibc's malloc serves a block over its mmap threshold (128 KiB at first, raised to the largest mapped
block freed, at most 32 MiB) with a mapping of its own and unmaps it when it is freed, and it hands
the heap's free top back to the kernel past a trim threshold (128 KiB at first, then twice the mmap
threshold).  A forward pass frees its activations and the next batch asks for blocks of the same
sizes, so their pages fault in again, each zeroed by the kernel, and a process's speed depends on
what it ran before (a larger batch raises the threshold).  BENCHMARKS.md has the measurements.

``keep_freed_memory`` fixes the threshold at glibc's largest, 32 MiB, and never trims the heap:
blocks up to 32 MiB come from the heap and are reused as they are.  A process then holds on to its
peak of such blocks, which it reaches again at every batch.  Larger blocks keep their mappings: taking
them from the heap as well nearly doubled the peak memory, since a freed block the aligned allocator
cannot reuse stays beside the new one.  The commands that compute (``COMPUTING``) call it when they
start, from the command line (``cli.main``) and from the Python API (``api``) alike: a forward pass of
the MNIST-1D MLP on 4,000 samples took 2.73 ms under glibc's defaults and 1.19 ms with it (2-core
EPYC, 2026-12-07, BENCHMARKS.md).  A process whose environment sets malloc's parameters keeps its own.
"""

from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
LARGEST_THRESHOLD = 32 << 20  # glibc's on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX)
NEVER_TRIM = 2**31 - 1  # the largest int mallopt takes

# the user's own settings of what this changes win: glibc reads them before the program starts, as
# MALLOC_<NAME>_ variables or glibc.malloc.<name> tunables
SETTINGS = ("mmap_threshold", "trim_threshold", "mmap_max", "top_pad")

# the commands that run forward passes batch after batch: their processes keep the memory a batch frees
COMPUTING = ("surface", "train", "sweep", "curvature", "report", "study", "demo")


def keep_freed_memory(environ=os.environ) -> bool:
    """Keep freed blocks up to 32 MiB in this process's heap (glibc on Linux); True when it was set.
    Nothing is changed elsewhere, with another allocator preloaded, or when the environment sets
    malloc's thresholds, its mappings or its padding (``MALLOC_MMAP_THRESHOLD_``,
    ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_MAX_``, ``MALLOC_TOP_PAD_`` or their ``glibc.malloc``
    tunables): those are the user's choice."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    tunables = environ.get("GLIBC_TUNABLES", "")
    if any(f"MALLOC_{name.upper()}_" in environ or f"glibc.malloc.{name}" in tunables for name in SETTINGS):
        return False
    if any(name in environ.get("LD_PRELOAD", "") for name in ("jemalloc", "tcmalloc", "mimalloc")):
        return False
    mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, NEVER_TRIM))
