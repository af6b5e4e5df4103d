"""A study or sweep file's tables as command-line flags."""

import argparse

from landscape.cli.main import COMMANDS
from landscape.io.toml_file import NEGATABLE, table_flags


def test_values_lists_and_booleans_become_flags():
    flags = table_flags({"lr": 0.05, "milestones": [0.5, 0.75], "raw_data": True, "no_test": False})
    assert flags == ["--lr=0.05", "--milestones", "0.5", "0.75", "--raw_data"]  # false: the flag's default


def test_false_is_said_for_a_flag_that_is_on_by_default():
    # nesterov = false in a study's [train] table is heavy-ball momentum, not the recipe's Nesterov default
    assert table_flags({"nesterov": False, "momentum": 0.9}) == ["--no-nesterov", "--momentum=0.9"]
    assert table_flags({"nesterov": True}) == ["--nesterov"]


def test_every_flag_with_a_no_form_is_known():
    negatable = set()
    for command in COMMANDS.values():
        module = command.load()
        if not hasattr(module, "build_parser"):
            continue
        for action in module.build_parser()._actions:
            if isinstance(action, argparse.BooleanOptionalAction):
                negatable.add(action.dest)
    assert negatable <= set(NEGATABLE), sorted(negatable - set(NEGATABLE))


def test_a_toml_file_that_cannot_be_read_is_one_line(tmp_path):
    import os

    import pytest

    from landscape.errors import InputError
    from landscape.io.toml_file import read_toml

    (tmp_path / "bytes.toml").write_bytes(b"\xff\xfe")
    (tmp_path / "deep.toml").write_text("x = " + "[" * 20000 + "]" * 20000 + "\n")
    os.mkfifo(tmp_path / "fifo.toml")
    for name, words in (("bytes", "is not a text file"), ("deep", "nested too deeply"), ("fifo", "is a FIFO")):
        with pytest.raises(InputError, match=words):
            read_toml(str(tmp_path / f"{name}.toml"))
    with pytest.raises(InputError, match="does not exist"):
        read_toml(str(tmp_path / "missing.toml"))
