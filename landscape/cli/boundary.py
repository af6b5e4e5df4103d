"""The one error boundary: exceptions become one printed line and an exit code.

Errors that every rank agreed on (``CollectiveFailure``) are printed by rank 0
only and every rank exits with the same code.  An error raised on one rank
alone while others may be waiting in a collective call is printed by that rank,
which then aborts the whole MPI job, so nothing is left hanging.
"""
from __future__ import annotations

import argparse
import sys
import traceback

from .. import comm as comm_module
from ..errors import CollectiveFailure, LandscapeError, UsageError, describe

TRACEBACK_FLAG = "--traceback"


def _print(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(main, argv: list[str] | None = None, prog: str = "landscape") -> int:
    """Call ``main(argv)`` and map whatever it raises to a message and an exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    show_traceback = TRACEBACK_FLAG in argv
    try:
        return int(main(argv) or 0)
    except CollectiveFailure as exc:
        world = comm_module.current()
        if world.rank == 0 and str(exc):
            where = f" (rank {exc.rank})" if exc.rank != 0 else ""
            _print(f"{prog}: error{where}: {exc}")
            if show_traceback and exc.detail:
                _print(exc.detail)
        return exc.exit_code
    except KeyboardInterrupt:
        _print(f"{prog}: interrupted")
        return _end(130)
    except SystemExit as exc:  # argparse's own usage errors and --help
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        return code
    except BaseException as exc:  # noqa: BLE001 - this is the boundary
        internal = not isinstance(exc, LandscapeError)
        code = exc.exit_code if isinstance(exc, LandscapeError) else 1
        world = comm_module.current()
        where = f" (rank {world.rank} of {world.size})" if world.size > 1 else ""
        kind = "internal error" if internal else "error"
        _print(f"{prog}: {kind}{where}: {describe(exc)}")
        if show_traceback:
            _print(traceback.format_exc().rstrip())
        elif internal:
            _print(f"{prog}: this is a bug; rerun with {TRACEBACK_FLAG} and report the output")
        return _end(code)


def _end(code: int) -> int:
    """In a parallel job a lone failing rank takes the whole job down with it."""
    world = comm_module.current()
    if world.size > 1:
        world.abort(code)
    return code


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are ``UsageError``s (one line, through the one boundary), that
    takes no abbreviated flags, and that prints ``--help`` from rank 0 only."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        raise UsageError(f"{message} (see {self.prog} --help)")

    def _print_message(self, message, file=None):
        if comm_module.current().rank == 0:
            super()._print_message(message, file)


def entry(main, prog: str):
    """A console_scripts entry point around ``main``."""

    def _entry() -> None:
        sys.exit(run(main, prog=prog))

    return _entry
