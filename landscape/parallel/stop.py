"""Stopping a job cleanly at a signal.

SIGTERM is what Slurm sends at a time limit (and ``scancel``), followed by SIGKILL
after ``KillWait`` (30 s by default); SIGUSR1 is what ``sbatch --signal=USR1@120``
sends ahead of the limit.  The handler only records the signal.  The scheduler
looks at the record before each pass of points and every rank learns of it at the
end of the round, so all ranks save that round, write their run record and leave
together, with the exit code of ``errors.Stopped``.  Rerunning the command resumes.
Commands made of units (a report's runs, curvature's measures, a sweep's runs) ask
``requested`` between two units, a collective, and stop after the same one.
"""

from __future__ import annotations

import atexit
import signal
import threading
import time

SIGNALS = ("SIGTERM", "SIGUSR1")


_installed: StopSignals | None = None


def install() -> StopSignals:
    """Catch the stop signals for the rest of this process.  The command line does so first thing:
    a Slurm signal can come while torch is still being imported, and must not kill the job then.
    Nor at the other end: Python's shutdown puts back the default handlers (which kill) while torch
    and MPI are still being torn down, so a job whose work is done and saved would die of a stop
    signal sent just then (``requeue.sbatch``'s timer, racing the job's end) and Slurm would call it
    FAILED.  The signals are ignored from the exit handlers on, which shutdown leaves in place."""
    global _installed
    if _installed is None:
        _installed = StopSignals().__enter__()
        atexit.register(_ignore_from_now_on)
    return _installed


def _ignore_from_now_on() -> None:
    if threading.current_thread() is threading.main_thread():
        for name in SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, signal.SIG_IGN)


def installed() -> StopSignals | None:
    return _installed


def requested(comm) -> str | None:
    """Collective: the stop signal any rank has received (its name, the lowest rank's), or None.  Every rank
    calls it at the same point between two units of work (a run's measurement, a curvature measure), so all
    of them stop after the same unit and none waits for one that has left."""
    received = _installed.received if _installed is not None else None
    return next((name for name in comm.allgather(received) if name), None)


def stopped_line(signal_name: str, done: int, total: int, what: str = "runs", rerun: str = "resume") -> str:
    """The one line a command stopped between units prints (``errors.Stopped``'s message)."""
    return f"stopped by {signal_name} after {done} of {total} {what}; rerun the same command to {rerun}"


class StopSignals:
    """A context in which SIGTERM and SIGUSR1 set ``received`` (the signal's name) instead of killing."""

    def __init__(self):
        self.received: str | None = None
        self.received_at = 0.0  # time.monotonic() of the first signal
        self._previous: dict = {}

    def _handle(self, signum, _frame) -> None:
        if self.received is None:
            self.received_at = time.monotonic()
        self.received = signal.Signals(signum).name

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # Python allows handlers only there
            for name in SIGNALS:
                sig = getattr(signal, name, None)
                if sig is not None:
                    self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
