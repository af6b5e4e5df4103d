"""How busy the machine is: the threads of other programs running on its cores right now.

A login node or a shared workstation runs other people's work.  Torch's threads wait for each other at
every operation, so a rank with as many threads as the machine has cores, beside one other busy
process, spends its time waiting for the thread that shares a core: on the 2-core VM a 21 x 21 surface
of the MNIST-1D MLP took 4x its idle time beside one CPU hog with 2 threads (BENCHMARKS.md).  With
fewer threads, on the cores left free, it takes little more than its idle time.

``others_running`` reads the kernel's count of running threads (``procs_running`` in ``/proc/stat``)
a few times and takes the median, less this job's own ranks on the node.  It is asked only where the
job may run on every core of the machine; on a cluster's allocation (a subset of the cores, the others
another job's), the count says nothing about this job's cores and is not used.
"""

from __future__ import annotations

import os
import statistics
import time

STAT = "/proc/stat"
SAMPLES = 5
INTERVAL = 0.01  # seconds between samples


def running(path: str = STAT) -> int | None:
    """Threads running or ready to run on the machine now (this one included), or None where the kernel
    does not say (not Linux)."""
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith("procs_running "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def others_running(ours: int, path: str = STAT, samples: int = SAMPLES, interval: float = INTERVAL) -> int:
    """Threads of other programs running on the machine: the median of ``samples`` readings, less
    ``ours`` (this job's ranks on the node, each counted running); 0 where the kernel does not say."""
    readings = []
    for i in range(samples):
        count = running(path)
        if count is None:
            return 0
        readings.append(count)
        if i + 1 < samples:
            time.sleep(interval)
    return max(0, round(statistics.median(readings)) - ours)


def free_cores(cores: int, ours: int, path: str = STAT) -> int:
    """The machine's ``cores`` less those other programs keep busy, at least one per rank of ours."""
    return max(ours, cores - others_running(ours, path))


def whole_machine() -> bool:
    """Whether this process may run on every core of the machine (no allocation pins it to a subset)."""
    try:
        return len(os.sched_getaffinity(0)) >= (os.cpu_count() or 1)
    except AttributeError:  # not Linux: no count to read either
        return False


__all__ = ["free_cores", "others_running", "running", "whole_machine"]
