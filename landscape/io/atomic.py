"""Making a file appear whole or not at all, and cleaning up after makers that were killed.

A new file is written under ``<path>.partial-<host>-<pid>`` and linked into place
when complete; linking fails if ``path`` appeared meanwhile, so an existing
file is never replaced.  A maker killed before the link leaves its partial
file behind; the next maker of the same path removes those whose process is
gone (on this host: another host's processes cannot be checked).
"""

from __future__ import annotations

import glob
import os
import socket

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


def remove_stale_partials(path: str) -> list[str]:
    """Remove ``<path>.partial-*`` files of dead processes on this host; return what was removed."""
    removed = []
    for candidate in glob.glob(glob.escape(path) + MARK + "*"):
        owner = candidate[len(path) + len(MARK) :]
        host, _, pid = owner.rpartition("-")
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
        return h5py.File(tmp, "w")
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
    tmp = partial_path(path)
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


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
