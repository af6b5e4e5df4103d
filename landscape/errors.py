"""Typed errors of the library and the exit code each one maps to.

The library raises these; exactly one place (``landscape.cli.boundary``) turns
them into a one-line message and a process exit code.  Every message names the
offending value and what was expected.

Messages name configuration *parameters* (``batch_size=0: expected ...``), and
an error records which parameters it names (``fields``).  A front end spells
them its own way: the command line turns ``batch_size`` into ``--batch_size``
with ``respelled``; the Python API keeps the parameter names.

Exit codes (documented in README.md):
    0  success
    1  internal error (a bug: rerun with --traceback and report it)
    2  usage: a flag or value is malformed
    3  input: a file, model, data set or plug-in cannot be used
    4  mismatch: an existing surface or direction file was made differently
    5  evaluation: the model or loss raised an error at a grid point
  130  interrupted (Ctrl-C)
  143  stopped by SIGTERM or SIGUSR1 after the round in progress was saved
"""

from __future__ import annotations

import re


class LandscapeError(Exception):
    """Base class for every error a user can cause and fix."""

    exit_code = 1

    def __init__(self, message: str = "", *, fields: tuple[str, ...] = ()):
        super().__init__(message)
        self.fields = tuple(fields)

    def respelled(self, spell: dict[str, str]) -> LandscapeError:
        """A copy whose message names each parameter of ``fields`` as ``spell`` says (e.g. as a flag).

        ``name=`` is always respelled; a bare name only where it cannot be an ordinary word
        (it has an underscore, or is one of ``BARE``), so "a positive number of threads"
        stays as it is while "give another surf_file" becomes "give another --surf_file".
        """
        message = str(self)
        for field in self.fields:
            if field in spell:
                after = r"(?![\w/]|\.\w)" if ("_" in field or field in BARE) else "(?==)"
                message = re.sub(rf"(?<![\w\-./]){re.escape(field)}{after}", spell[field], message)
        other = type(self).__new__(type(self))  # no __init__: subclasses take other arguments
        other.__dict__.update(self.__dict__)
        other.args = (message,)
        return other


# Parameters without an underscore that messages may name bare (not only as ``name=value``).
BARE = frozenset({"xnorm", "ynorm", "xignore", "yignore", "force", "seed", "out"})


class UsageError(LandscapeError):
    """A command-line flag or configuration value is malformed."""

    exit_code = 2


class ConfigError(UsageError):
    """One configuration parameter has a value that cannot be used: ``field=value: expected ...``."""

    def __init__(self, field: str, value, expected: str, literal: bool = False):
        # literal: show the value as Python writes it, so that the string "10" is not mistaken for 10
        shown = value if isinstance(value, str) and not literal else repr(value)
        super().__init__(f"{field}={shown}: expected {expected}", fields=(field,))
        self.field, self.value, self.expected = field, value, expected


class InputError(LandscapeError):
    """A file, model, data set or plug-in exists but cannot be used (or does not exist)."""

    exit_code = 3


class MismatchError(LandscapeError):
    """An existing result file was produced by a different computation."""

    exit_code = 4


class EvaluationError(LandscapeError):
    """The user's model or loss raised while evaluating a grid point."""

    exit_code = 5


class Stopped(LandscapeError):
    """Every rank stopped at a signal after saving the round in progress; rerunning resumes."""

    exit_code = 143
    collective = True  # raised by every rank at once: rank 0 alone prints it


class CollectiveFailure(LandscapeError):
    """A failure that every MPI rank knows about (agreed through ``comm.agree``).

    Carries the original error's exit code and one-line message, and the rank
    that raised it, so that rank 0 alone prints it and no rank is left waiting.
    """

    collective = True

    def __init__(self, message: str, exit_code: int, rank: int, detail: str = "", fields: tuple[str, ...] = ()):
        super().__init__(message, fields=fields)
        self.exit_code = exit_code
        self.rank = rank
        self.detail = detail  # formatted traceback of the original error


def describe(error: BaseException) -> str:
    """One line: the message for our errors, ``Type: message`` for anything else."""
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    if isinstance(error, LandscapeError):
        return first
    return f"{type(error).__name__}: {first}".rstrip(": ")
