"""Any command's ``Params`` (``workflows.params``) as an argparse parser: one argument per field, its
flag, help text and default taken from the field, so that ``--help`` says what the API's signature and
the recorded settings say.  Flags not given are left out of the parsed dict (the field's default holds)."""

from __future__ import annotations

import argparse
import dataclasses

from ..workflows.params import item_type, ordered, value_type
from . import boundary


def _default_words(f: dataclasses.Field) -> str:
    if "(default" in (f.metadata.get("help") or ""):  # the help text says it in its own words
        return ""
    shown = default_shown(f)
    return "" if shown is None else f" (default: {shown})"


def default_shown(f: dataclasses.Field) -> str | None:
    """The default of field ``f`` as ``--help`` says it: its ``shown`` words, or its value (a tuple's items
    spaced); None where there is none to say (required, None, False, empty)."""
    if f.metadata.get("shown") is not None:
        return str(f.metadata["shown"])
    if f.default is dataclasses.MISSING or f.default is None or f.default is False or f.default in ("", ()):
        return None
    return " ".join(map(str, f.default)) if isinstance(f.default, tuple) else str(f.default)


def add_params(p: argparse.ArgumentParser, cls, skip: tuple[str, ...] = ()) -> None:
    """One argument of ``p`` per field of ``cls`` (but those in ``skip``), under its field's group heading."""
    groups: dict = {}
    for f in ordered(cls):
        if f.name in skip or not f.metadata.get("cli", True):
            continue
        m, kind = f.metadata, value_type(cls, f.name)
        heading = m.get("group")
        into = p if heading is None else groups.setdefault(heading, p.add_argument_group(heading))
        if m.get("switches"):  # --log / --linear: each sets one value, at most one given
            group = into.add_mutually_exclusive_group()
            for flag, value, words in m["switches"]:
                group.add_argument(flag, dest=f.name, action="store_const", const=value, help=words)
            continue
        options = {"help": (m.get("help") or "") + _default_words(f)}
        if m.get("metavar"):
            options["metavar"] = m["metavar"]
        if m.get("choices"):
            options["choices"] = m["choices"]
        if m.get("parse"):
            options["type"] = m["parse"]
            if m.get("nargs"):
                options["nargs"] = m["nargs"]
        elif kind is bool:
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
            into.add_argument(f.name, **options)
        else:
            flags = [m.get("flag") or f"--{f.name}", *m.get("aliases", ())]
            if f.default is dataclasses.MISSING:
                options["required"] = True
            into.add_argument(*flags, dest=f.name, **options)


def parser_for(cls, prog: str, epilog: str = "") -> argparse.ArgumentParser:
    """The command line of ``cls``: its description, its fields, and ``--traceback``."""
    p = boundary.ArgumentParser(
        prog=prog, epilog=epilog, argument_default=argparse.SUPPRESS, description=cls.DESCRIPTION
    )
    add_params(p, cls)
    p.add_argument("--traceback", action="store_true", help="on error, print the full traceback")
    return p


def flags_of(*classes) -> dict[str, str]:
    """How each parameter of ``classes`` is spelled on the command line (``--name``; a positional one by
    its name): the spelling of the messages that name it."""
    out = {}
    for cls in classes:
        for f in dataclasses.fields(cls):
            m = f.metadata
            spelled = m["switches"][0][0] if m.get("switches") else f.name if m.get("positional") else m.get("flag")
            out.setdefault(f.name, spelled or f"--{f.name}")
    return out


def parsed(parser: argparse.ArgumentParser, argv: list[str]) -> dict:
    """The flags given, by parameter name (``--traceback`` is the boundary's)."""
    given = vars(parser.parse_args(argv))
    given.pop("traceback", None)
    return given


def main_of(build_parser, run, params):
    """A command's ``main`` that only parses its flags into ``params`` (a ``Params`` class) and calls ``run``."""

    def main(argv: list[str], prog: str) -> int:
        run(params.of(parsed(build_parser(prog), argv)), argv=(*prog.split(), *argv))
        return 0

    return main


__all__ = ["add_params", "default_shown", "flags_of", "main_of", "parser_for", "parsed"]
