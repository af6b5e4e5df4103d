"""The one error boundary: exceptions become one printed line and an exit code.

Errors that every rank knows about (``CollectiveFailure``, ``Stopped``) are
printed by rank 0 only and every rank exits with the same code.  An error raised
on one rank alone while others may be waiting in a collective call is printed by
that rank, which then aborts the whole MPI job, so nothing is left hanging.
Messages name configuration parameters; here they are spelled as the program's
flags (``batch_size`` -> ``--batch_size``).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from ..errors import ExitStatus, LandscapeError, Stopped, UsageError, describe
from ..parallel import comm as comm_module
from ..terminal import escaping

TRACEBACK_FLAG = "--traceback"


class ParserExit(LandscapeError):
    """argparse is done (after --help): every rank leaves with this status, silently."""

    def __init__(self, code: int):
        super().__init__("")
        self.exit_status = ExitStatus(code)


def _print(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(main, argv: list[str] | None = None, prog: str = "landscape", spell=None) -> int:
    """Call ``main(argv)`` and map whatever it raises to a message and an exit status (``ExitStatus``).

    ``spell`` maps parameter names to this program's flags: a dict, or a function returning one.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    with escaping():  # what the command prints from a file reaches the terminal escaped (terminal.py)
        return _run(main, argv, prog, spell)


def _run(main, argv: list[str], prog: str, spell) -> int:
    show_traceback = TRACEBACK_FLAG in argv
    try:
        return int(main(argv) or 0)
    except KeyboardInterrupt:
        _print(f"{prog}: interrupted")
        return _end(ExitStatus.INTERRUPTED)
    except BrokenPipeError:  # the reader of our output went away (| head): leave quietly, like other tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _end(ExitStatus.BROKEN_PIPE)
    except SystemExit as exc:  # raised by code outside our parsers: keep its code
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except BaseException as exc:  # noqa: BLE001 - this is the boundary
        world = comm_module.current()
        if getattr(exc, "collective", False):
            text = exc.spelled(_spelling(spell))
            if world.rank == 0 and text:
                where = f" (rank {exc.rank})" if getattr(exc, "rank", 0) else ""
                _print(f"{prog}: {text}" if isinstance(exc, Stopped) else f"{prog}: error{where}: {text}")
                if show_traceback and getattr(exc, "detail", ""):
                    _print(exc.detail)
            return int(exc.exit_status)
        if isinstance(exc, MemoryError):
            code, kind, text = (
                ExitStatus.INPUT,
                "error",
                f"not enough memory ({describe(exc)}): choose a smaller grid, batch size "
                "or data set, or fewer ranks per node",
            )
        elif isinstance(exc, LandscapeError):
            code, kind = exc.exit_status, "error"
            lines = exc.spelled(_spelling(spell)).strip().split("\n")  # a \r inside is shown escaped
            text = lines[0] if lines else ""
        else:
            code, kind, text = ExitStatus.INTERNAL, "internal error", describe(exc)
        where = f" (rank {world.rank} of {world.size})" if world.size > 1 else ""
        if text or code:
            _print(f"{prog}: {kind}{where}: {text}")
        if show_traceback:
            _print(traceback.format_exc().rstrip())
        elif kind == "internal error":
            _print(f"{prog}: this is a bug; rerun with {TRACEBACK_FLAG} and report the output")
        return _end(code)


def _spelling(spell) -> dict:
    if not callable(spell):
        return spell or {}
    try:
        return spell()
    except BaseException:  # noqa: BLE001 - the message is spelled plainly rather than lost
        return {}


def _end(code: int) -> int:
    """In a parallel job a lone failing rank takes the whole job down with it."""
    world = comm_module.current()
    if world.size > 1:
        world.abort(int(code))
    return int(code)


# the reference code's flags that landscape spells otherwise: what to give instead
REFERENCE_ONLY = {
    "--cuda": "the reference code's --cuda is --device cuda here (auto, the default, takes a GPU where there is one)",
    "--ngpu": "the reference code's --ngpu is one MPI rank per GPU here (mpiexec -n N ... --device cuda)",
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are ``UsageError``s (one line, through the one boundary), that takes no
    abbreviated flags, that prints ``--help`` from rank 0 only, and that never calls ``sys.exit``."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        if message.startswith("unrecognized arguments:"):
            words = message.split(":", 1)[1].split()
            hint = next((REFERENCE_ONLY[w.split("=")[0]] for w in words if w.split("=")[0] in REFERENCE_ONLY), None)
            if hint:
                raise UsageError(f"{message}: {hint} (see {self.prog} --help)")
        raise UsageError(f"{message} (see {self.prog} --help)")

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            self._print_message(message, sys.stderr)
        raise ParserExit(status)

    def _print_message(self, message, file=None):
        if comm_module.current().rank == 0:
            super()._print_message(message, file)


def entry(main, prog: str, spell=None):
    """A console_scripts entry point around ``main``."""

    def _entry() -> None:
        sys.exit(run(main, prog=prog, spell=spell))

    return _entry
