"""TOML files of settings (study and sweep files): read, and their tables turned into command-line flags."""

from __future__ import annotations

import json
import os

from ..errors import InputError
from .paths import read_text


def toml():
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:
        try:
            import tomli as tomllib  # the same parser, for Python 3.10
        except ModuleNotFoundError:
            raise InputError(
                "config: reading TOML needs Python >= 3.11, or the tomli package (pip install tomli)",
            ) from None
    return tomllib


def read_toml(path, what: str = "--config") -> dict:
    """A TOML file's settings: a regular file of a sane size in UTF-8 (``paths.read_text``), parsed; a
    file that does not parse (nested 20,000 deep included) is one line naming it."""
    if not os.path.lexists(path):
        raise InputError(f"{what} {path} does not exist")
    tomllib = toml()
    text = read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{what} {path} cannot be read as TOML ({exc})") from None
    except RecursionError:
        raise InputError(f"{what} {path} cannot be read as TOML (nested too deeply to read)") from None


# Flags with a --no- form (argparse.BooleanOptionalAction): false is said, not left to the default.
# tests/io/test_toml_file.py checks that every such flag of every command is listed here.
NEGATABLE = ("nesterov",)
JSON_KEYS = ("model_args", "data_args")  # given as a TOML table or a JSON string alike


def table_flags(table: dict) -> list[str]:
    """A TOML table as command-line flags: key = value -> --key=value; lists after --key; true -> --key;
    false -> --no-key for the flags of ``NEGATABLE``, else nothing (the flag's default is off)."""
    flags = []
    for key, value in table.items():
        if key in JSON_KEYS and isinstance(value, dict):  # a TOML table of a factory's arguments: its JSON
            value = json.dumps(value, sort_keys=True)
        if value is True:
            flags.append(f"--{key}")
        elif value is False:
            flags += [f"--no-{key}"] if key in NEGATABLE else []
        elif isinstance(value, list):
            flags += [f"--{key}", *map(str, value)]
        else:
            flags.append(f"--{key}={value}")
    return flags
