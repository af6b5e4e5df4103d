"""Progress lines: one updating line in a terminal, few lines in a batch log, the slowest rank named."""

import io

from landscape.surface.progress import Progress, slowest


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_batch_log_gets_a_line_per_interval_and_a_last_one():
    log = io.StringIO()
    p = Progress(1000, 0, enabled=True, every=3600, stream=log)
    for done in range(0, 1001, 10):
        p.update(done)
    p.update(1000, final=True)
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].lstrip().startswith("1000/1000 points  100.0%")


def test_a_terminal_line_is_rewritten_in_place_and_ended_once():
    term = Terminal()
    p = Progress(100, 0, enabled=True, every=0, stream=term)
    for done in (10, 50, 100):
        p.update(done)
    p.update(100, final=True)
    text = term.getvalue()
    assert text.count("\r") == 3 and text.count("\n") == 1 and text.endswith("\n")


def test_the_slowest_rank_is_named_only_when_ranks_differ_by_more_than_a_fifth():
    assert slowest([10.0, 11.5, 9.9]) == ""
    assert slowest([10.0, 6.0, 9.0, 0.0]) == "; slowest rank 1 (6.0 points/s, fastest 10.0)"
    log = io.StringIO()
    Progress(10, 0, enabled=True, every=0, stream=log).update(5, rates=[4.0, 8.0])
    assert log.getvalue().rstrip().endswith("slowest rank 0 (4.0 points/s, fastest 8.0)")
