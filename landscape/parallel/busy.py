"""How busy the machine is: the threads of other programs running on its cores right now.

A login node or a shared workstation runs other people's work.  Torch's threads wait for each other at
every operation, so a rank with as many threads as the machine has cores, beside one other busy
process, spends its time waiting for the thread that shares a core.  With fewer threads, on the cores
left free, it loses far less: ``scripts/bench_peers.py --hog 1`` (BENCHMARKS.md) has the A/B.

``others_running`` reads the kernel's count of running threads (``procs_running`` in ``/proc/stat``)
a few times over 10 ms, less this process's own running threads (``/proc/self/task``: torch's pool
spinning down after its last task is ours) and one for each other rank of this job on the node, and
takes the least: a program that keeps a core busy is counted in every reading, a moment's work in one.
It is asked only where the job may run on every core of the machine; on a cluster's allocation (a subset
of the cores, the others another job's), the count says nothing about this job's cores and is not used.
"""

from __future__ import annotations

import os
import time

STAT = "/proc/stat"
TASKS = "/proc/self/task"  # this process's threads
SAMPLES = 5
INTERVAL = 0.0025  # seconds between samples


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


def own_running(tasks: str = TASKS) -> int:
    """This process's threads running or ready to run (at least 1: the one asking)."""
    count = 0
    for name in os.listdir(tasks) if os.path.isdir(tasks) else ():
        try:
            with open(os.path.join(tasks, name, "stat")) as handle:
                text = handle.read()
        except OSError:
            continue  # a thread that ended meanwhile
        state = text.rfind(")") + 2  # after the name, which may hold spaces and parentheses
        count += text[state : state + 1] == "R"
    return max(1, count)


def others_running(
    ours: int, path: str = STAT, samples: int = SAMPLES, interval: float = INTERVAL, tasks: str = TASKS
) -> int:
    """Threads of other programs running on the machine: the least of ``samples`` readings, less this
    process's running threads and one for each of the other ``ours - 1`` ranks of this job on the node;
    0 where the kernel does not say."""
    readings = []
    for i in range(samples):
        count = running(path)
        if count is None:
            return 0
        readings.append(count - own_running(tasks) - (ours - 1))
        if i + 1 < samples:
            time.sleep(interval)
    return max(0, min(readings))


def free_cores(cores: int, ours: int, path: str = STAT) -> int:
    """The machine's ``cores`` less those other programs keep busy, at least one per rank of ours."""
    return max(ours, cores - others_running(ours, path))


def whole_machine() -> bool:
    """Whether this process may run on every core of the machine (no allocation pins it to a subset)."""
    try:
        return len(os.sched_getaffinity(0)) >= (os.cpu_count() or 1)
    except AttributeError:  # not Linux: no count to read either
        return False


__all__ = ["free_cores", "others_running", "own_running", "running", "whole_machine"]
