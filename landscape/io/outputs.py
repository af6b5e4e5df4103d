"""An output never replaces an input, nor a file of another kind.

Before a command computes anything, each path it will write is checked (``replaceable``):

- a path that is one of the command's inputs (the same file by device and inode, so symbolic and hard
  links are seen through) is refused whatever the flags: the input is read while the output is written;
- an existing file whose first bytes say it is something this toolkit keeps (a checkpoint, an HDF5
  file, a training log, a sweep's manifest, a run record: ``what``) is refused unless the user passes
  ``--force``: ``landscape curvature --out cb/final.pt`` would put JSON over the run's last weights.

A file of no such kind (an older JSON result, a CSV table, a figure) is replaced as before: rerunning a
command over its own outputs is the common case.  Figures are checked where every figure is written
(``plotting.save``), without ``force``: no figure is ever meant to go over a checkpoint or a surface.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterable

from ..errors import InputError, param

# The first columns of a sweep's manifest.csv (``train.sweep.COLUMNS``) and of a run's log.csv
# (``io.run_files.write_log``): tests/io/test_outputs.py holds them to the writers.
MANIFEST_HEADER = "run,recipe,batch_size,seed,epochs,steps,done,"
LOG_HEADER = "epoch,step,"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
HDF5_OFFSETS = (0, 512, 1024, 2048, 4096)  # the superblock follows a user block of 512·2ᵏ bytes
JSON_READ_LIMIT = 64 * 2**20  # a larger JSON file is not opened to see what it is


def what(path: str) -> str | None:
    """What an existing regular file holds, among the kinds this toolkit keeps: ``checkpoint``, ``HDF5
    file``, ``training log``, ``manifest``, ``run record``; None for anything else (or no file)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HDF5_OFFSETS[-1] + len(HDF5_MAGIC))
    except OSError:
        return None
    if any(head[at : at + len(HDF5_MAGIC)] == HDF5_MAGIC for at in HDF5_OFFSETS):
        return "HDF5 file"
    if head.startswith(b"PK\x03\x04"):  # torch.save's zip archive: a data.pkl inside
        return "checkpoint" if _torch_archive(path) else None
    if len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= 5:  # a pickle: torch's legacy format
        return "checkpoint"
    first = head.split(b"\n", 1)[0].lstrip(b"\xef\xbb\xbf").strip()
    if first.startswith(LOG_HEADER.encode()):
        return "training log"
    if first.startswith(MANIFEST_HEADER.encode()):
        return "manifest"
    if head.lstrip()[:1] == b"{":
        return _json_kind(path)
    return None


def _torch_archive(path: str) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name == "data.pkl" or name.endswith("/data.pkl") for name in archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def _json_kind(path: str) -> str | None:
    """A sweep's manifest.json (``settings`` and a list of ``runs``) or a run's run.json (``identity`` and
    ``done``)."""
    try:
        if os.path.getsize(path) > JSON_READ_LIMIT:
            return None
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    if set(record) == {"settings", "runs"} and isinstance(record["runs"], list):
        return "manifest"
    if "identity" in record and "done" in record:
        return "run record"
    return None


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one existing file (links resolved: the same device and inode)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def replaceable(path, field: str, inputs: dict[str, Iterable | str | None] | None = None, force: bool = False) -> None:
    """Refuse writing ``path`` (the value of flag ``field``) over one of ``inputs`` (flag name → path or
    paths) or, without ``force``, over a file of a kind this toolkit keeps; see the module's docstring."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return
    for name, given in (inputs or {}).items():
        for source in [given] if isinstance(given, (str, os.PathLike)) else list(given or ()):
            if source is not None and same_file(path, os.fspath(source)):
                shown = "" if os.path.abspath(source) == os.path.abspath(path) else f" ({os.fspath(source)})"
                raise InputError(
                    f"{param(field)}: {path} is this command's input {param(name)}{shown}: expected another path "
                    "(an output never replaces an input)"
                )
    found = what(path)
    if found is not None and not force:
        raise InputError(
            f"{param(field)}: {path} is an existing {found}; expected a new path or a file this command wrote "
            f"({param('force')} replaces it)"
        )


def figure_replaceable(path: str) -> None:
    """A figure is never written over a file of a kind this toolkit keeps (there is no ``--force`` for it)."""
    found = what(path)
    if found is not None:
        raise InputError(
            f"figure {path}: an existing {found} is there; expected a figure or no file (choose another name)"
        )
