"""Making a file appear whole or not at all, and cleaning up after makers that were killed.

A file is written under ``<path>.partial-<host>-<pid>``, synced, and moved into place when complete
(``write_with``: run records, checkpoints, figures, exports, and the HDF5 files of ``make_hdf5``):
renamed over the older version, or, for a file that must be new, linked, which fails if ``path``
appeared meanwhile, so an existing file is never replaced.  A maker killed before that leaves its partial
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
        if not pid.isdigit() or (host and host != HOST) or int(pid) == os.getpid() or pid_alive(int(pid)):
            continue  # landscape 0.1 wrote ".partial-<pid>": host "" is this host
        try:
            os.remove(candidate)
            removed.append(candidate)
        except FileNotFoundError:
            pass
    return removed


def remove_stale_partials_in(folder: str) -> list[str]:
    """``remove_stale_partials`` for every file in ``folder`` that has a partial file beside it."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    made = sorted({name.split(MARK, 1)[0] for name in names if MARK in name})
    return [gone for name in made for gone in remove_stale_partials(os.path.join(folder, name))]


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


def write_with(path: str, what: str, write, replace: bool = True) -> None:
    """``write(handle)`` into a new partial file of ``path``, synced, then renamed into place: a reader or a
    kill -9 sees the old file whole or the new one whole.  ``replace``: an older ``path`` is replaced (a
    link there too, never written through); otherwise a file that appeared meanwhile is left as it is
    (``publish``).  Whatever breaks the write removes this process's partial file; a write the system
    refuses (a full disk) is an input error naming ``path`` and the reason (``write_error``)."""
    remove_stale_partials(path)
    tmp = partial_path(path)
    try:
        with create_partial(tmp) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            publish(tmp, path, what)
    except OSError as exc:
        raise write_error(what, path, exc) from None
    finally:
        discard(tmp)
    fsync_directory(path)


def write_file(path: str, data: bytes, what: str = "") -> None:
    """``data`` into ``path`` through ``write_with``, over an older ``path``."""
    write_with(path, what, lambda handle: handle.write(data))


def refusal(exc: BaseException) -> str | None:
    """Why the system refused a write (``No space left on device``), from an ``OSError`` or from an h5py
    error that wraps one (its message carries ``errno = 28``); None for anything else (a bug)."""
    found = re.search(r"errno = (\d+)", str(exc))
    if found and isinstance(exc, (OSError, ValueError, RuntimeError, KeyError)):
        return os.strerror(int(found.group(1)))
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
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
    """Close ``file`` after ``exc`` broke off the work on it, its datasets first: the finished frames of
    ``exc``'s traceback, which still hold the datasets the failed code had open, are cleared before the
    file closes (the running frames cannot be: code that writes keeps its datasets in a function of its
    own).  HDF5 closing a file whose datasets are still open, after a failed write, leaves them dangling,
    and h5py crashes (a segmentation fault) when it frees them.  A failing close is the first failure
    again: it is not raised a second time."""
    traceback.clear_frames(exc.__traceback__)
    try:
        file.close()
    except Exception:  # noqa: BLE001 - the first error is the one raised
        pass


def make_hdf5(path: str, what: str, fill) -> None:
    """Make the HDF5 file ``path`` whole or not at all: ``fill(f)`` builds it in memory (HDF5's core
    driver), and its image is written under a partial name, synced, and linked into place (never over a
    file that appeared meanwhile).

    HDF5 itself never writes to the disk here: a write it could not do would leave it with datasets it
    cannot close, and it crashes (a segmentation fault) when it frees them at exit.  A write the system
    refuses (a full disk) is an input error naming ``path``, and no partial file of this process is left.
    The file is held in memory twice while it is written."""
    f = h5py.File(partial_path(path), "w", driver="core", backing_store=False)  # nothing is made at that name
    try:
        fill(f)
        f.flush()
        image = f.id.get_file_image()
    finally:
        f.close()
    write_with(path, what, lambda handle: handle.write(image), replace=False)


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
