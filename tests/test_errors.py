"""The exit statuses are one list: the enum, the manual's table and ``--help`` say the same codes."""

import re

from landscape.errors import EXIT_WORDS, ExitStatus, exit_codes

from conftest import ROOT, landscape


def test_the_manual_s_table_lists_every_status_with_its_code_and_name():
    page = (ROOT / "docs" / "exit-codes.md").read_text()
    rows = re.findall(r"^\| (\d+) \| `([A-Z_]+)` \|", page, flags=re.M)
    assert [(int(code), name) for code, name in rows] == [(int(s), s.name) for s in ExitStatus]


def test_help_names_every_status(capsys):
    assert set(EXIT_WORDS) == set(ExitStatus)
    line = exit_codes()
    assert all(f"{int(s)} {EXIT_WORDS[s]}" in line for s in ExitStatus)
    for argv in (["--help"], ["surface", "--help"]):
        assert landscape(*argv) == 0
        out = " ".join(capsys.readouterr().out.split())  # wrapped to the terminal's width
        assert all(f"{int(s)} {' '.join(EXIT_WORDS[s].split())}" in out for s in ExitStatus), argv


def test_a_rank_that_leaves_quietly_prints_nothing_and_takes_the_job_down(monkeypatch, capsys):
    """RanksLost on a rank other than 0 has no message (rank 0 names the missing ranks): no line, and
    the job is aborted with its status, as for any error raised on one rank."""
    from landscape.cli import boundary
    from landscape.errors import RanksLost
    from landscape.parallel import comm as comm_module

    aborted = []

    class RankOne:
        rank, size = 1, 2

        def abort(self, code):
            aborted.append(code)

    monkeypatch.setattr(comm_module, "_current", RankOne())

    def lose(argv):
        raise RanksLost("")

    assert boundary.run(lose, []) == 7 and aborted == [7]
    assert capsys.readouterr().err == ""
