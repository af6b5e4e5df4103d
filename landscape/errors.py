"""Typed errors of the library and the exit code each one maps to.

The library raises these; exactly one place (``landscape.cli.boundary``) turns
them into a one-line message and a process exit code.  Every message names the
offending value and what was expected.

Exit codes (documented in README.md):
    0  success
    1  internal error (a bug: rerun with --traceback and report it)
    2  usage: a flag or value is malformed
    3  input: a file, model, data set or plug-in cannot be used
    4  mismatch: an existing surface or direction file was made differently
    5  evaluation: the model or loss raised an error at a grid point
  130  interrupted (Ctrl-C)
"""


class LandscapeError(Exception):
    """Base class for every error a user can cause and fix."""

    exit_code = 1


class UsageError(LandscapeError):
    """A command-line flag or configuration value is malformed."""

    exit_code = 2


class InputError(LandscapeError):
    """A file, model, data set or plug-in exists but cannot be used (or does not exist)."""

    exit_code = 3


class MismatchError(LandscapeError):
    """An existing result file was produced by a different computation."""

    exit_code = 4


class EvaluationError(LandscapeError):
    """The user's model or loss raised while evaluating a grid point."""

    exit_code = 5


class CollectiveFailure(LandscapeError):
    """A failure that every MPI rank knows about (agreed through ``comm.agree``).

    Carries the original error's exit code and one-line message, and the rank
    that raised it, so that rank 0 alone prints it and no rank is left waiting.
    """

    def __init__(self, message: str, exit_code: int, rank: int, detail: str = ""):
        super().__init__(message)
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
