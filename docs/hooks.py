"""MkDocs hook: the command-line reference is written from the commands' own parsers when the site is
built (docs/reference/cli.md holds only the marker), so the flags documented are the flags that exist."""

from __future__ import annotations

import argparse

MARKER = "<!-- landscape: every command's --help -->"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    from landscape.cli.main import COMMANDS  # the package, imported only by the page that needs it

    return markdown.replace(MARKER, "\n\n".join(_command(name, c) for name, c in COMMANDS.items()))


def _command(name: str, command) -> str:
    parser = command.load().build_parser(f"landscape {name}")
    formatter = parser._get_formatter()  # argparse's own expansion of %(default)s and friends
    alias = f" (alias `{command.alias}`)" if command.alias else ""
    lines = [f"## `landscape {name}`{alias}", "", command.summary[:1].upper() + command.summary[1:] + ".", ""]
    lines += [
        "```text",
        formatter._format_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, "usage: ").strip(),
        "```",
        "",
    ]
    lines += ["| flag | default | what it sets |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        flag = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}` (positional)"
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            flag += "<br>" + " · ".join(f"`{c}`" for c in action.choices)
        default = "" if action.default in (None, False, argparse.SUPPRESS) or action.required else f"`{action.default}`"
        text = formatter._expand_help(action) if action.help else ""
        lines.append("| " + " | ".join(_cell(c) for c in (flag, default, " ".join(text.split()))) + " |")
    if parser.epilog:
        lines += ["", "```text", parser.epilog.strip("\n"), "```"]
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Table cell text: a pipe inside it is not a column border."""
    return text.replace("|", "\\|")
