"""What the package prints reaches a terminal as text: control characters are shown escaped, never obeyed.

A run record's command line, a quantity's name, a recipe or a file name can come from someone else's
file, and an ANSI escape, a carriage return or a line feed in it would forge or hide lines on the
reader's terminal.  ``printable`` writes every control character (C0 and C1, DEL, and Unicode's format
and separator characters such as the bidirectional overrides) as ``\\xNN``, ``\\uNNNN`` or
``\\UNNNNNNNN``, the way Python's ``repr`` does.  The error boundary (``cli.boundary``) runs each
command with stdout and stderr wrapped by ``escaping``, which keeps the newline and the tab that our
own lines are made of; ``landscape info`` escapes those too inside each line it prints from a file.
The live progress line's own carriage return and erase-line escape go to the terminal through ``raw``.
"""

from __future__ import annotations

import contextlib
import io
import sys
import unicodedata

CONTROL = ("Cc", "Cf", "Zl", "Zp")  # control, format (bidi overrides, zero-width), line and paragraph separators


NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(ch: str) -> str:
    if ch in NAMED:
        return NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str, keep: str = "") -> str:
    """``text`` with every control character but those in ``keep`` written as its escape."""
    if text.isprintable():  # the common case: no control, format or separator character but the space
        return text
    return "".join(c if c in keep or unicodedata.category(c) not in CONTROL else _escaped(c) for c in text)


class _Escaping(io.TextIOBase):
    """A text stream that writes to ``stream`` with control characters escaped (newline and tab kept)."""

    def __init__(self, stream):
        self.raw = stream  # the stream itself: for the progress line's \r and erase-line escape only

    def write(self, text: str) -> int:
        self.raw.write(printable(text, keep="\n\t"))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self):
        return getattr(self.raw, "encoding", "utf-8")


def raw(stream):
    """The stream under an escaping one (``escaping``), for the package's own terminal control."""
    return stream.raw if isinstance(stream, _Escaping) else stream


@contextlib.contextmanager
def escaping():
    """stdout and stderr escape control characters for the duration (a command's run)."""
    if isinstance(sys.stdout, _Escaping):  # nested: a command run by another
        yield
        return
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaping(sys.stdout), _Escaping(sys.stderr)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdout, sys.stderr = saved


__all__ = ["printable", "escaping", "raw"]
