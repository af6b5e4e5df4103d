"""Progress of a surface job as rank 0 sees it: points done, points/s, time left, the slowest rank.

In a terminal it is one line that updates in place.  Written to a file (an sbatch output), it is
one line every ``every`` seconds (60 by default) and a last one, so a ten-hour job writes hundreds
of lines, not thousands.  When the ranks' speeds differ by more than 20 %, the line names the
slowest rank: a slow node, or a rank that got the expensive corner of the grid.
"""

from __future__ import annotations

import sys
import time

from ..terminal import raw

SPREAD = 1.2  # the fastest rank this much faster than the slowest: name the slowest


def duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else (f"{minutes}m{secs:02d}s" if minutes else f"{secs}s")


def slowest(rates: list[float]) -> str:
    """``; slowest rank 3 (4.1 points/s, fastest 6.0)`` when the ranks' speeds differ by more than 20 %."""
    working = [(rate, rank) for rank, rate in enumerate(rates) if rate > 0]
    if len(working) < 2:
        return ""
    (low, rank), (high, _) = min(working), max(working)
    return f"; slowest rank {rank} ({low:.1f} points/s, fastest {high:.1f})" if high > SPREAD * low else ""


class Progress:
    def __init__(self, total: int, already: int, enabled: bool, every: float | None = None, stream=None):
        self.total, self.already = total, already
        self.stream = stream or sys.stdout
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = every if every is not None else (1.0 if self.terminal else 60.0)
        self.enabled = enabled
        self.start = self.last = time.perf_counter()
        self.done = 0  # points computed by this run
        self.shown = -1  # the count of the last line printed
        self.open_line = False  # a terminal line waiting for its newline

    def rate(self) -> float:
        elapsed = time.perf_counter() - self.start
        return self.done / elapsed if elapsed > 0 else 0.0

    def update(self, done_this_run: int, final: bool = False, rates: list[float] | None = None) -> None:
        """``rates``: each rank's points/s over its latest round."""
        self.done = done_this_run
        now = time.perf_counter()
        if not self.enabled or (not final and now - self.last < self.every) or (final and self.shown == self.done):
            if final and self.open_line:
                self._end_line()
            return
        self.shown = self.done
        self.last = now
        todo = self.total - self.already
        rate = self.rate()
        left = (todo - self.done) / rate if rate > 0 else float("nan")
        have = self.already + self.done
        line = (
            f"  {have:>{len(str(self.total))}}/{self.total} points  {100.0 * have / self.total:5.1f}%  "
            f"{rate:8.1f} points/s  time left {duration(left) if left == left else '?'}"
            f"{slowest(rates or [])}"
        )
        if self.terminal:
            # the line's own \r and erase-line escape go to the terminal as they are (terminal.raw)
            print(f"\r{line}\033[K", end="" if not final else "\n", file=raw(self.stream), flush=True)
            self.open_line = not final
        else:
            print(line, file=self.stream, flush=True)

    def _end_line(self) -> None:
        print(file=self.stream, flush=True)
        self.open_line = False

    def elapsed(self) -> float:
        return time.perf_counter() - self.start
