"""Progress of a surface job as rank 0 sees it: points done, points/s, time left."""
from __future__ import annotations

import sys
import time


def duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else (f"{minutes}m{secs:02d}s" if minutes else f"{secs}s")


class Progress:
    def __init__(self, total: int, already: int, enabled: bool, every: float = 2.0, stream=None):
        self.total, self.already = total, already
        self.enabled, self.every = enabled, every
        self.stream = stream or sys.stdout
        self.start = self.last = time.perf_counter()
        self.done = 0  # points computed by this run
        self.shown = -1  # the count of the last line printed

    def rate(self) -> float:
        elapsed = time.perf_counter() - self.start
        return self.done / elapsed if elapsed > 0 else 0.0

    def update(self, done_this_run: int, final: bool = False) -> None:
        self.done = done_this_run
        now = time.perf_counter()
        if not self.enabled or (not final and now - self.last < self.every) or (final and self.shown == self.done):
            return
        self.shown = self.done
        self.last = now
        todo = self.total - self.already
        rate = self.rate()
        left = (todo - self.done) / rate if rate > 0 else float("nan")
        have = self.already + self.done
        line = (f"  {have:>{len(str(self.total))}}/{self.total} points  {100.0 * have / self.total:5.1f}%  "
                f"{rate:8.1f} points/s  time left {duration(left) if left == left else '?'}")
        print(line, file=self.stream, flush=True)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start
