"""Typed errors of the library, the exit status each one maps to, and how a message names a parameter.

The library raises these; exactly one place (``landscape.cli.boundary``) turns them into a one-line
message and a process exit status; the Python API raises them as they are.  Every message names the
offending value and what was expected.

A message names a configuration parameter through ``param(name)`` (``f"{param('batch_size')}=0:
expected ..."``): ``str(error)`` shows the parameter's name (``batch_size=0``), as the Python API
spells it; ``error.spelled(spell)`` shows it as a front end spells it (the command line:
``--batch_size=0``).  The marks are placed where the message is written, so no message is ever
rewritten by guessing which of its words are parameters.
"""

from __future__ import annotations

import re
import reprlib
from enum import IntEnum

from .terminal import printable


class ExitStatus(IntEnum):
    """The exit status of a ``landscape`` command (documented in README.md and ``--help``)."""

    OK = 0
    INTERNAL = 1  # a bug: rerun with --traceback and report it
    USAGE = 2  # a flag or value is malformed
    INPUT = 3  # a file, model, data set or plug-in cannot be used; or not enough memory
    MISMATCH = 4  # an existing surface or direction file was made differently
    EVALUATION = 5  # the model or loss raised an error at a grid point
    DIVERGED = 6  # the training loss became NaN or infinite: stopped, the last finite checkpoint kept
    LOST = 7  # a rank stopped answering (its node lost, or the rank killed): what was saved is kept
    INTERRUPTED = 130  # Ctrl-C
    BROKEN_PIPE = 141  # the reader of the output went away
    STOPPED = 143  # SIGTERM or SIGUSR1, after the round in progress was saved


EXIT_WORDS = {
    ExitStatus.OK: "ok",
    ExitStatus.INTERNAL: "internal error",
    ExitStatus.USAGE: "usage",
    ExitStatus.INPUT: "input",
    ExitStatus.MISMATCH: "mismatch",
    ExitStatus.EVALUATION: "evaluation",
    ExitStatus.DIVERGED: "training diverged",
    ExitStatus.LOST: "a rank lost (resubmit to resume)",
    ExitStatus.INTERRUPTED: "interrupted",
    ExitStatus.BROKEN_PIPE: "output closed",
    ExitStatus.STOPPED: "stopped by SIGTERM/SIGUSR1 (rerun to resume)",
}


def exit_codes() -> str:
    """Every exit status in a few words, for ``--help``: ``Exit codes: 0 ok, 1 internal error, ...``."""
    return "Exit codes: " + ", ".join(f"{int(code)} {EXIT_WORDS[code]}" for code in ExitStatus) + "."


MARK = "\ue000"  # a private-use character: never part of a message's own text, neither space nor line break
_MARKED = re.compile(f"{MARK}([^{MARK}]*){MARK}")


def param(name: str) -> str:
    """A parameter's name inside a message, to be spelled by whoever shows the message."""
    return f"{MARK}{name}{MARK}"


def spell(message: str, spelling=None) -> str:
    """``message`` with each parameter named as ``spelling`` (a dict) says, else by its plain name."""
    spelling = spelling or {}
    return _MARKED.sub(lambda m: spelling.get(m.group(1), m.group(1)), message)


class LandscapeError(Exception):
    """Base class for every error a user can cause and fix."""

    exit_status = ExitStatus.INTERNAL

    def __init__(self, message: str = ""):
        super().__init__(message)

    @property
    def marked(self) -> str:
        """The message with its parameters marked (``param``): what crosses ranks."""
        return self.args[0] if self.args else ""

    @property
    def fields(self) -> tuple[str, ...]:
        """The parameters the message names, in order."""
        return tuple(dict.fromkeys(_MARKED.findall(self.marked)))

    def spelled(self, spelling=None) -> str:
        return spell(self.marked, spelling)

    def __str__(self) -> str:
        return self.spelled()


class UsageError(LandscapeError):
    """A command-line flag or configuration value is malformed."""

    exit_status = ExitStatus.USAGE


SHOWN_CHARS = 200  # a value longer than this is shown by its start and its length
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, SHOWN_CHARS, SHOWN_CHARS


def shown(value, literal: bool = True) -> str:
    """``value`` for a one-line message: as Python writes it (``literal``; nested containers to four
    levels, so 20,000-deep JSON cannot exhaust the stack), cut to its first characters and its length,
    control characters escaped (a value from a file cannot end the line or move the cursor)."""
    text = printable(value if isinstance(value, str) and not literal else _REPR.repr(value))
    return text if len(text) <= SHOWN_CHARS else f"{text[: SHOWN_CHARS - 40]}… ({len(text):,} characters)"


class ConfigError(UsageError):
    """One configuration parameter has a value that cannot be used: ``field=value: expected ...``."""

    def __init__(self, field: str, value, expected: str, literal: bool = False):
        # literal: show the value as Python writes it, so that the string "10" is not mistaken for 10
        super().__init__(f"{param(field)}={shown(value, literal)}: expected {expected}")
        self.field, self.value, self.expected = field, value, expected


class InputError(LandscapeError):
    """A file, model, data set or plug-in exists but cannot be used (or does not exist)."""

    exit_status = ExitStatus.INPUT


class MismatchError(LandscapeError):
    """An existing result file was produced by a different computation."""

    exit_status = ExitStatus.MISMATCH


class EvaluationError(LandscapeError):
    """The user's model or loss raised while evaluating a grid point."""

    exit_status = ExitStatus.EVALUATION


class Diverged(LandscapeError):
    """The training loss became NaN or infinite; the run stopped with its last finite checkpoint."""

    exit_status = ExitStatus.DIVERGED
    collective = True  # every rank sees the agreed loss and raises it at once: rank 0 alone prints it


class Stopped(LandscapeError):
    """Every rank stopped at a signal after saving the round in progress; rerunning resumes."""

    exit_status = ExitStatus.STOPPED
    collective = True  # raised by every rank at once: rank 0 alone prints it


class RanksLost(LandscapeError):
    """Ranks did not reach a collective call although the job was told to stop (Slurm sends SIGTERM to
    the ranks left when it ends a job for a lost node): rank 0, which waits for them, names them and
    their hosts, and leaves instead of hanging (its abort ends the other ranks)."""

    exit_status = ExitStatus.LOST

    def __init__(self, message: str = "", named: str = ""):
        super().__init__(message)
        self.named = named  # the missing ranks and their hosts: "rank 1 on node2"
        self.computed = 0  # points the rounds before saved (the surface's scheduler sets it)


class CollectiveFailure(LandscapeError):
    """A failure that every MPI rank knows about (agreed through ``comm.agree``).

    Carries the original error's exit status and its marked message, and the rank that raised it, so
    that rank 0 alone prints it and no rank is left waiting.  Made as the kind of error the original
    was (``CollectiveFailure(...)`` of a usage error is also a ``UsageError``), so a caller catches it
    by kind on every rank.
    """

    collective = True

    def __new__(cls, message: str = "", exit_status: int = ExitStatus.INTERNAL, rank: int = 0, detail: str = ""):
        kind = _COLLECTIVE.get(int(exit_status), cls) if cls is CollectiveFailure else cls
        return super().__new__(kind)

    def __init__(self, message: str, exit_status: int, rank: int, detail: str = ""):
        super().__init__(message)
        self.exit_status = ExitStatus(exit_status)
        self.rank = rank
        self.detail = detail  # formatted traceback of the original error


_COLLECTIVE = {
    int(kind.exit_status): type(f"Collective{kind.__name__}", (CollectiveFailure, kind), {"__module__": __name__})
    for kind in (UsageError, InputError, MismatchError, EvaluationError, Diverged)
}


def describe(error: BaseException) -> str:
    """One line: the message for our errors, ``Type: message`` for anything else."""
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    if isinstance(error, LandscapeError):
        return first
    return f"{type(error).__name__}: {first}".rstrip(": ")
