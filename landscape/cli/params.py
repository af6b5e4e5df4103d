"""Any command's ``Params`` (``workflows.params``) as an argparse parser: one argument per field, its
flag, help text and default taken from the field, so that ``--help`` says what the API's signature and
the recorded settings say.  Flags not given are left out of the parsed dict (the field's default holds)."""

from __future__ import annotations

import argparse
import dataclasses

from ..workflows.params import item_type, value_type
from . import boundary


def _default_words(f: dataclasses.Field) -> str:
    if "(default" in (f.metadata.get("help") or ""):  # the help text says it in its own words
        return ""
    shown = f.metadata.get("shown")
    if shown is not None:
        return f" (default: {shown})"
    if f.default is dataclasses.MISSING or f.default is None or f.default is False:
        return ""
    value = " ".join(map(str, f.default)) if isinstance(f.default, tuple) else f.default
    return f" (default: {value})"


def add_params(p: argparse.ArgumentParser, cls, skip: tuple[str, ...] = ()) -> None:
    """One argument of ``p`` per field of ``cls`` (but those in ``skip``)."""
    for f in dataclasses.fields(cls):
        if f.name in skip or not f.metadata.get("cli", True):
            continue
        m, kind = f.metadata, value_type(cls, f.name)
        if m.get("switches"):  # --log / --linear: each sets one value, at most one given
            group = p.add_mutually_exclusive_group()
            for flag, value, words in m["switches"]:
                group.add_argument(flag, dest=f.name, action="store_const", const=value, help=words)
            continue
        options = {"help": (m.get("help") or "") + _default_words(f)}
        if m.get("metavar"):
            options["metavar"] = m["metavar"]
        if m.get("choices"):
            options["choices"] = m["choices"]
        if kind is bool:
            options["action"] = "store_true"
        elif kind in (tuple, list):
            options.update(nargs=m.get("nargs") or "+", type=item_type(cls, f.name))
        elif kind in (int, float, str):
            options["type"] = kind
            if m.get("nargs"):
                options["nargs"] = m["nargs"]
            if m.get("nargs") == "?":
                options["const"] = m.get("const")
        if m.get("positional"):
            p.add_argument(f.name, **options)
        else:
            flags = [m.get("flag") or f"--{f.name}", *m.get("aliases", ())]
            if f.default is dataclasses.MISSING:
                options["required"] = True
            p.add_argument(*flags, dest=f.name, **options)


def parser_for(cls, prog: str, description: str, epilog: str = "") -> argparse.ArgumentParser:
    """The command line of ``cls``: its fields, and ``--traceback``."""
    p = boundary.ArgumentParser(prog=prog, epilog=epilog, argument_default=argparse.SUPPRESS, description=description)
    add_params(p, cls)
    p.add_argument("--traceback", action="store_true", help="on error, print the full traceback")
    return p


def parsed(parser: argparse.ArgumentParser, argv: list[str]) -> dict:
    """The flags given, by parameter name (``--traceback`` is the boundary's)."""
    given = vars(parser.parse_args(argv))
    given.pop("traceback", None)
    return given


__all__ = ["add_params", "parser_for", "parsed"]
