"""Making a file appear whole or not at all, and cleaning up after makers that were killed.

A new file is written under ``<path>.partial-<host>-<pid>`` and linked into place
when complete; linking fails if ``path`` appeared meanwhile, so an existing
file is never replaced.  A maker killed before the link leaves its partial
file behind; the next maker of the same path removes those whose process is
gone (on this host: another host's processes cannot be checked).

A partial file's name is predictable, so it is always created afresh (``O_EXCL``), which never
follows a symbolic link planted at that name: whatever is there is unlinked first (a link itself,
never what it points to).  Renaming into place replaces a link at ``path``, not its target.

A write the system refuses (a full disk, a quota, an I/O error) removes this process's partial file and
is an input error naming the file and the reason (``write_error``), whatever library wrapped it.
"""

from __future__ import annotations

import glob
import os
import re
import socket
import traceback

import h5py

from ..errors import InputError

HOST = socket.gethostname()
MARK = ".partial-"


def partial_path(path: str) -> str:
    return f"{path}{MARK}{HOST}-{os.getpid()}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _make_room(tmp: str) -> None:
    """Unlink what is at ``tmp`` (a leftover of a dead process with this pid, or a planted link)."""
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def create_partial(tmp: str):
    """A new file at ``tmp``, open for binary writing: created here, never a file reached through a link."""
    _make_room(tmp)
    return os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666), "wb")


def remove_stale_partials(path: str) -> list[str]:
    """Remove ``<path>.partial-*`` files of dead processes on this host; return what was removed."""
    removed = []
    for candidate in glob.glob(glob.escape(path) + MARK + "*"):
        owner = candidate[len(path) + len(MARK) :]
        host, _, pid = owner.rpartition("-")
        pid = pid.split(".", 1)[0]  # a writer that must end the name with its extension puts it after the pid
        if not pid.isdigit() or (host and host != HOST) or int(pid) == os.getpid() or pid_alive(int(pid)):
            continue  # landscape 0.1 wrote ".partial-<pid>": host "" is this host
        try:
            os.remove(candidate)
            removed.append(candidate)
        except FileNotFoundError:
            pass
    return removed


def new_hdf5(tmp: str, what: str, path: str):
    """An HDF5 file opened for writing at ``tmp``; a file system's refusal is an input error naming ``path``."""

    try:
        _make_room(tmp)
        return h5py.File(tmp, "x")  # O_EXCL: a link planted at tmp meanwhile is refused, not followed
    except OSError as exc:
        reason = getattr(exc, "strerror", None) or str(exc).split("(")[-1].rstrip(")")
        raise InputError(f"{what} {path} cannot be created ({reason})") from None


def publish(tmp: str, path: str, what: str) -> None:
    """Move the finished ``tmp`` to ``path``, never replacing a file that appeared meanwhile."""
    try:
        os.link(tmp, path)  # fails if path exists: no window between a check and a rename
    except FileExistsError:
        raise InputError(f"{what} {path} appeared while this one was being written; it is left as it is") from None
    except OSError:  # a file system without hard links
        if os.path.exists(path):
            raise InputError(f"{what} {path} appeared while this one was being written; it is left as it is") from None
        os.replace(tmp, path)
        return
    os.remove(tmp)


def write_file(path: str, data: bytes) -> None:
    """``data`` into ``path`` through a temporary name, synced, then renamed: a reader or a kill -9
    sees the old file whole or the new one whole."""
    remove_stale_partials(path)
    tmp = partial_path(path)
    try:
        with create_partial(tmp) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        discard(tmp)
        raise write_error("", path, exc) from None


def refusal(exc: BaseException) -> str | None:
    """Why the system refused a write (``No space left on device``), from an ``OSError`` or from an h5py
    error that wraps one (its message carries ``errno = 28``); None for anything else (a bug)."""
    if isinstance(exc, OSError) and exc.errno:
        return exc.strerror or os.strerror(exc.errno)
    found = re.search(r"errno = (\d+)", str(exc))
    if found and isinstance(exc, (OSError, ValueError, RuntimeError, KeyError)):
        return os.strerror(int(found.group(1)))
    return None


def write_error(what: str, path: str, exc: BaseException) -> BaseException:
    """The one-line input error for a refused write to ``path`` (``exc`` itself when it is no refusal)."""
    reason = refusal(exc)
    if reason is None:
        return exc
    return InputError(f"{what} {path} cannot be written ({reason})".lstrip())


def discard(tmp: str) -> None:
    """Remove this process's partial file ``tmp``, if it is there."""
    try:
        os.remove(tmp)
    except FileNotFoundError:
        pass


def abandon(file: h5py.File, exc: BaseException) -> None:
    """Close ``file`` after ``exc`` broke off the writing, its datasets first.

    The frames of ``exc``'s traceback still hold the datasets the writer had open.  HDF5 closing a file
    whose write failed while datasets of it are open leaves them dangling, and h5py crashes (a
    segmentation fault) when it frees them later; so the finished frames are cleared first (the running
    ones cannot be: a writer keeps its datasets in a function of its own).  Errors of the close itself
    are the same failure again and are not raised twice."""
    traceback.clear_frames(exc.__traceback__)
    try:
        file.close()
    except Exception:  # noqa: BLE001 - the write already failed; that error is the one raised
        pass


def make_hdf5(path: str, what: str, fill) -> None:
    """Make the HDF5 file ``path`` whole or not at all: ``fill(f)`` writes a new file under a partial name,
    which is linked into place when complete and closed (never over a file that appeared meanwhile).
    Whatever fails, no partial file of this process is left; a refused write is an input error naming
    ``path`` (``write_error``).  ``fill`` keeps its datasets in its own frame (``abandon``)."""
    remove_stale_partials(path)
    tmp = partial_path(path)
    try:
        f = new_hdf5(tmp, what, path)
        try:
            fill(f)
        except BaseException as exc:
            abandon(f, exc)
            raise
        f.close()
        publish(tmp, path, what)
        fsync_directory(path)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a refused write becomes one line; anything else is raised as it is
        error = write_error(what, path, exc)
        if error is exc:
            raise
        raise error from None
    finally:
        discard(tmp)


def fsync_directory(path: str) -> None:
    """Make a new directory entry durable (a node that goes down keeps the published file)."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
