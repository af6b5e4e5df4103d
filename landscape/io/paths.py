"""What kind of thing a path names, in one line: every file this toolkit reads is checked here first.

A FIFO would block an open forever, a directory or a device gives confusing
errors deep inside h5py or torch, and a dangling symbolic link looks like a file
that both exists and does not.  Each gets a message that says what was found.
"""

from __future__ import annotations

import os
import stat

from ..errors import ConfigError, InputError, param


def kind(path: str) -> str:
    """``missing``, ``dangling link``, ``file``, ``directory``, ``FIFO``, ``device``, ``socket`` or ``special file``."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "dangling link" if os.path.islink(path) else "missing"
    except OSError:
        return "missing"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def readable_file(path, what: str) -> str:
    """``path`` as a string, after checking it is a regular file this process may read."""
    path = os.fspath(path)
    found = kind(path)
    if found == "missing":
        raise InputError(f"{what} {path} does not exist")
    if found == "dangling link":
        raise InputError(f"{what} {path} is a symbolic link to {os.readlink(path)}, which does not exist")
    if found != "file":
        raise InputError(f"{what} {path} is a {found}, not a regular file")
    if not os.access(path, os.R_OK):
        raise InputError(f"{what} {path} cannot be read (permission denied)")
    return path


TEXT_LIMIT = 256 * 2**20  # a log, a manifest, a record or a study file larger than this is not one of ours


def read_text(path, what: str, encoding: str = "utf-8", limit: int = TEXT_LIMIT) -> str:
    """The text of ``path``: a regular file (never a FIFO, a device or a folder, wherever a link leads,
    so reading never blocks), of at most ``limit`` bytes, in ``encoding``; else one line naming it."""
    path = readable_file(path, what)
    size = os.path.getsize(path)
    if size > limit:
        raise InputError(f"{what} {path} holds {size:,} bytes: expected at most {limit:,} (it is not one of ours)")
    try:
        with open(path, encoding=encoding, newline="") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path} is not a text file ({encoding}: {exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be read ({exc.strerror})") from None


def output_path(path, what: str, field: str, in_place: bool = False) -> None:
    """A path a job may create or update: a regular file or nothing, in an existing, writable folder.
    A file the job updates ``in_place`` (a surface it resumes) must not be a symbolic link: the writes
    would land in whatever file the link names (a file replaced whole is renamed over the link instead)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(
            f"{param(field)}={path}: folder {folder} does not exist; create it or choose another {param(field)}"
        )
    found = kind(path)
    if found == "dangling link":
        raise InputError(
            f"{param(field)}={path} is a symbolic link to {os.readlink(path)}, which does not exist; "
            f"expected a file or no file",
        )
    if in_place and found == "file" and os.path.islink(path):
        raise InputError(
            f"{param(field)}={path} is a symbolic link to {os.readlink(path)}; a {what} is updated in place, "
            f"never through a link: give the file's own path as {param(field)}",
        )
    if found not in ("missing", "file"):
        raise InputError(f"{param(field)}={path} is a {found}; expected a {what} or no file")
    if found == "missing" and not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{param(field)}={path}: folder {folder} is not writable; choose another {param(field)}")
    if len(os.path.basename(path)) > 200:
        raise InputError(
            f"{param(field)}={path}: the file name is {len(os.path.basename(path))} characters long; "
            "expected at most 200 (file systems allow 255 with the suffixes this toolkit adds)",
        )


def config_path(value, field: str) -> str | None:
    """A path given as a setting: ``None`` (not given), or a non-empty ``str``/``os.PathLike``, as ``str``."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ConfigError(field, value, f"a path (str or os.PathLike), not {type(value).__name__}")
    path = os.fspath(value)
    if not isinstance(path, str) or not path:
        raise ConfigError(field, "''", "a path; an empty value is none")
    return path


def cache_folder(environ=os.environ) -> str:
    """The user's cache folder for landscape: ``$LANDSCAPE_CACHE``, else ``~/.cache/landscape`` (the
    generated MNIST-1D samples, the settings ``auto`` measured)."""
    return environ.get("LANDSCAPE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "landscape")
