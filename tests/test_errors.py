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
