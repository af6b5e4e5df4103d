"""What the package prints from a file reaches the terminal escaped: an ANSI escape, a carriage return or
a line feed in a run record, a name or a message is shown as text and cannot forge or hide a line."""

import sys

import h5py

from landscape.io import runs
from landscape.terminal import escaping, printable, raw

from conftest import landscape

HOSTILE = "landscape surface \x1b[2J\x1b[1;1H\rforged: all good\nsecond line\u202egnp.exe\x85\x7f"


def test_every_control_character_is_written_as_its_escape_and_plain_text_is_left_alone():
    assert printable("train_loss α=0.5 β, 10 %  ok") == "train_loss α=0.5 β, 10 %  ok"
    assert printable(HOSTILE) == (
        "landscape surface \\x1b[2J\\x1b[1;1H\\rforged: all good\\nsecond line\\u202egnp.exe\\x85\\x7f"
    )
    assert printable("a\nb\tc\rd", keep="\n\t") == "a\nb\tc\\rd"
    assert printable(printable(HOSTILE)) == printable(HOSTILE)  # the escapes are plain text: no double escaping


def test_a_commands_output_is_escaped_but_its_own_progress_line_is_not(capsys):
    with escaping():
        print(HOSTILE)
        print("\r  3/9 points\x1b[K", end="", file=raw(sys.stderr))
    out, err = capsys.readouterr()
    assert "\x1b" not in out and "\r" not in out and out.count("\n") == 2  # the stream keeps newlines: info
    assert err == "\r  3/9 points\x1b[K"


def test_info_shows_a_forged_run_record_on_one_line(tmp_path, capsys, one_thread):
    from tests.cli.test_info import surface

    path = surface(tmp_path)
    with h5py.File(path, "r+") as f:
        runs.append(
            f, "start", {"command_line": HOSTILE, "host": "node\x1b[31m1", "started": "2026-01-01T00:00:00+0000"}
        )
    capsys.readouterr()
    assert landscape("info", path) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    (line,) = [x for x in out.splitlines() if "forged: all good" in x]
    assert line.strip().startswith("$ landscape surface \\x1b[2J") and "\\nsecond line" in line
    assert "node\\x1b[31m1" in out
    from landscape import api

    api.info(str(path))  # the Python API prints through the same escaping
    assert "\x1b" not in capsys.readouterr().out


def test_an_error_message_quoting_a_file_is_escaped(tmp_path, capsys):
    bad = tmp_path / "evil\x1b[2Jname.h5"
    bad.write_bytes(b"not hdf5")
    assert landscape("info", bad) == 3
    err = capsys.readouterr().err
    assert "\x1b" not in err and "evil\\x1b[2Jname.h5" in err and err.count("\n") == 1
