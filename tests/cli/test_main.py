"""The one ``landscape`` command: subcommands, help, version, and the reference code's names as aliases."""

import os
import subprocess
import sys

from landscape import __version__

from conftest import ROOT, landscape


def test_help_lists_every_command_and_its_alias(capsys):
    assert landscape("--help") == 0
    out = capsys.readouterr().out
    for command, alias in (
        ("surface", "plot_surface"),
        ("plot1d", "plot_1d"),
        ("plot2d", "plot_2d"),
        ("report", ""),
        ("study", ""),
        ("rescale", ""),
        ("demo", ""),
    ):
        assert f"\n  {command} " in out and (not alias or f"(alias: {alias})" in out)
    assert landscape() == 2
    assert capsys.readouterr().err.strip() == (
        "landscape: error: a command is needed: one of surface, plot1d, plot2d, train, sweep, "
        "plot-training, curvature, report, study, rescale, export, info, demo (see landscape --help)"
    )


def test_version_and_unknown_commands(capsys):
    assert landscape("--version") == 0 and capsys.readouterr().out.strip() == f"landscape {__version__}"
    assert landscape("surfcae", "--x=-1:1:3") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "landscape: error: unknown command 'surfcae': expected one of surface, plot1d, plot2d, train, "
        "sweep, plot-training, curvature, report, study, rescale, export, info, demo (see landscape --help)"
    ]


def test_subcommand_help_shows_the_configurations_defaults(capsys):
    assert landscape("surface", "--help") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("usage: landscape surface")
    for words in (
        "for a surface of 30 s or more of forward work (default: auto)",
        "(default: -1:1:51)",
        "(default: filter)",
        "target seconds between writes (default: 5)",
        "143 stopped by SIGTERM/SIGUSR1",
    ):
        assert words in out, words


def test_the_reference_names_are_console_scripts_with_their_own_prog():
    bin_dir = os.path.dirname(sys.executable)
    for name, words in (
        ("plot_surface", "usage: plot_surface"),
        ("plot_1d", "usage: plot_1d"),
        ("landscape", "usage: landscape <command>"),
    ):
        script = os.path.join(bin_dir, name)  # installed with the package (pip install -e ., as make does)
        done = subprocess.run([script, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert done.returncode == 0 and done.stdout.startswith(words), done.stdout[:200]
    done = subprocess.run(
        [sys.executable, "-m", "landscape", "plot_2d", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: landscape plot2d")
