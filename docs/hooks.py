"""MkDocs hook: the command-line reference is written from the commands' own ``Params`` (the fields their
parsers are made from) when the site is built (docs/reference/cli.md holds only the marker), so the
flags documented are the flags that exist."""

from __future__ import annotations

MARKER = "<!-- landscape: every command's --help -->"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    from landscape.cli.main import COMMANDS  # the package, imported only by the page that needs it

    return markdown.replace(MARKER, "\n\n".join(_command(name, c) for name, c in COMMANDS.items()))


def _command(name: str, command) -> str:
    """A command's section: its usage line, and one row per parameter of its ``Params`` (the fields the
    parser is made from: their flags, choices, defaults and help text)."""
    import dataclasses

    from landscape.cli.params import default_shown
    from landscape.workflows.params import ordered

    module = command.load()
    parser = module.build_parser(f"landscape {name}")
    alias = f" (alias `{command.alias}`)" if command.alias else ""
    lines = [f"## `landscape {name}`{alias}", "", command.summary[:1].upper() + command.summary[1:] + ".", ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    lines += ["| flag | default | what it sets |", "|---|---|---|"]
    for f in ordered(module.PARAMS[0]):
        m = f.metadata
        if not m.get("cli", True):
            continue
        if m.get("switches"):
            for flag, _, words in m["switches"]:
                lines.append("| " + " | ".join(_cell(c) for c in (f"`{flag}`", "", words.replace("%%", "%"))) + " |")
            continue
        flags = [m.get("flag") or f"--{f.name}", *m.get("aliases", ())]
        flag = f"`{f.name}` (positional)" if m.get("positional") else ", ".join(f"`{s}`" for s in flags)
        if m.get("choices"):
            flag += "<br>" + " · ".join(f"`{c}`" for c in m["choices"])
        shown = default_shown(f)
        if f.default is dataclasses.MISSING:
            default = "required"
        elif shown is None or m.get("shown") is not None:  # no default, or one said in words
            default = shown or ""
        else:
            default = f"`{shown}`"
        text = " ".join((m.get("help") or "").replace("%%", "%").split())
        lines.append("| " + " | ".join(_cell(c) for c in (flag, default, text)) + " |")
    if parser.epilog:
        lines += ["", "```text", parser.epilog.strip("\n"), "```"]
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Table cell text: a pipe inside it is not a column border."""
    return text.replace("|", "\\|")
