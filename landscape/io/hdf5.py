"""Opening an existing HDF5 file, which may come from someone else: checked to be a regular file before it
is opened, and to hold nothing that reaches outside it before anything in it is read or written.

HDF5 lets a file lead elsewhere: an external link names an object in another file, a dataset with
external storage keeps its bytes in other files (any path, a FIFO or a device included), and a virtual
dataset maps other files' datasets.  Reading such a dataset reads the other file (an export would copy
its bytes into a page; a FIFO blocks forever), and writing it (a resumed surface's run records, its
values) writes the other file.  No file this toolkit or the reference code writes uses any of them, and
soft links neither, so a file with one is refused with one line before any dataset is touched.
"""

from __future__ import annotations

import contextlib

import h5py

from ..errors import InputError, LandscapeError, describe
from . import atomic
from .paths import readable_file


def open_error(path: str, exc: BaseException, what: str, mode: str = "r") -> InputError:
    """The one-line reason an existing file could not be opened."""
    text = str(exc)
    if isinstance(exc, PermissionError) or "errno = 13" in text:
        purpose = "reading" if mode == "r" else "writing"
        return InputError(f"{what} {path} cannot be opened for {purpose} (permission denied); it is left as it is")
    if "unable to lock file" in text:
        if "errno = 38" in text or "not implemented" in text.lower():
            return InputError(
                f"{what} {path}: this file system does not support HDF5 file locks; set "
                "HDF5_USE_FILE_LOCKING=FALSE (landscape keeps a lock of its own beside the file)"
            )
        return InputError(f"{what} {path} is open in another process (HDF5 file lock); wait for it to end")
    if "truncated file" in text:
        return InputError(
            f"{what} {path} is damaged: shorter than its own header says (truncated; "
            "a copy cut short?); it is left as it is"
        )
    return InputError(
        f"{what} {path} exists but is not a readable HDF5 file ({describe(exc)}); "
        "choose another file name or move it away (it is left untouched)"
    )


def outside_reference(f: h5py.File) -> str | None:
    """What in ``f`` reaches outside the file (``"dataset /runs keeps its data in external files (victim.h5)"``),
    or None.  Every object reachable by hard links is visited once (``visititems``), and every link of every
    group is looked at without being followed."""
    groups = [("/", f)]
    datasets = []

    def sort(name, obj):
        (groups if isinstance(obj, h5py.Group) else datasets).append(("/" + name, obj))

    f.visititems(sort)
    for where, group in groups:
        for name in group:
            link = group.get(name, getlink=True)
            path = where.rstrip("/") + "/" + name
            if isinstance(link, h5py.ExternalLink):
                return f"{path} is an external link to {link.filename}:{link.path}"
            if isinstance(link, h5py.SoftLink):
                return f"{path} is a soft link to {link.path}"
    for where, dataset in datasets:
        plist = dataset.id.get_create_plist()
        if plist.get_layout() == h5py.h5d.VIRTUAL:
            sources = sorted({plist.get_virtual_filename(i) for i in range(plist.get_virtual_count())})
            return f"dataset {where} is virtual (it maps datasets of {', '.join(sources)})"
        if plist.get_external_count():
            files = sorted(
                {plist.get_external(i)[0].decode(errors="replace") for i in range(plist.get_external_count())}
            )
            return f"dataset {where} keeps its data in external files ({', '.join(files)})"
    return None


def check_contained(f: h5py.File, path: str, what: str) -> None:
    """Refuse ``f`` (opened from ``path``) if anything in it reaches outside it (``outside_reference``)."""
    found = outside_reference(f)
    if found:
        raise InputError(
            f"{what} {path} is refused: {found}; landscape reads only self-contained HDF5 files "
            "(nothing in it is read or written; h5repack can copy the data in)"
        )


@contextlib.contextmanager
def reading(path: str, what: str, mode: str = "r"):
    """Open an existing file, checked (a regular file; self-contained, ``check_contained``); any failure
    while reading it is an input error naming the file, and so is a write the system refuses (mode
    ``r+``: a full disk).  On failure the file is closed after the datasets the failed code still holds
    (``atomic.abandon``).

    A read (mode ``r``) takes no HDF5 file lock, so a surface can be looked at while its job writes it
    (the job holds the file open for writing, and HDF5's lock would refuse every reader).  That is safe
    because of how the file is written: its structure is made whole before the job opens it and never
    changes afterwards (``surface_file.create``: storage allocated early; run records are raw data in
    fixed slots), and a point is marked done only after its values and checksum are on disk
    (``io.writer``).  So a reader that takes the done mask first sees, for every point marked done, the
    final values; points not yet marked read as not computed (``surface_file.read``)."""
    path = readable_file(path, what)
    try:
        f = h5py.File(path, mode, locking=False) if mode == "r" else h5py.File(path, mode)
    except (OSError, ValueError) as exc:
        raise open_error(path, exc, what, mode) from None
    try:
        check_contained(f, path, what)
        yield f
    except BaseException as exc:
        atomic.abandon(f, exc)
        if isinstance(exc, LandscapeError) or not isinstance(exc, Exception):
            raise
        raise _failed(path, what, mode, exc) from None
    try:
        f.close()
    except Exception as exc:  # noqa: BLE001 - the last of the writes (r+) may be refused at the close
        raise _failed(path, what, mode, exc) from None


def _failed(path: str, what: str, mode: str, exc: Exception) -> InputError:
    """A refused write (mode ``r+``), or else a file that cannot be read: one line naming the file."""
    if mode != "r" and atomic.refusal(exc) is not None:
        return atomic.write_error(what, path, exc)
    return InputError(f"{what} {path} is damaged and cannot be read ({describe(exc)}); it is left as it is")


__all__ = ["reading", "open_error", "check_contained", "outside_reference"]
