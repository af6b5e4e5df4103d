"""``landscape export`` as a function: surface files for other tools, VTK XML for ParaView (``vtk``) and
one self-contained 3-D web page (``html``).

``out`` is a path without extension, or a folder (one that exists, or any path ending in ``/``): the
files then go into it, each named after its input (``s.h5`` -> ``folder/s.vts``), never a nameless
``folder/.vts``.  Every file is written under a temporary name and renamed into place, so a symbolic
link planted at an output's name is replaced, never written through.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..errors import ConfigError, InputError, UsageError, param
from ..io.outputs import replaceable
from ..io.paraview import quantities, write_vtk
from ..io.paths import output_path
from ..io.surface_file import read
from ..plotting import interactive
from .command import Result
from .params import REQUIRED, Params, option


@dataclass(frozen=True)
class ExportParams(Params):
    """``landscape export``'s parameters."""

    COMMAND = "export"
    DESCRIPTION = "Export surface files: --vtk for ParaView, --html for a 3-D web page."
    surf_files: tuple[str, ...] = option(
        REQUIRED, "surface files (landscape's or the reference code's)", positional=True, metavar="SURF_FILE"
    )
    vtk: bool = option(False, "VTK XML: .vts (2-D structured grid) or .vtu (1-D polyline)")
    html: bool = option(False, "one self-contained 3-D web page of all the files")
    labels: tuple[str, ...] | None = option(None, "--html: one panel title per file (default: names)", metavar="LABEL")
    title: str | None = option(None, "--html: the page's title")
    z: str = option("train_loss", "the quantity that gives the height; with --html, the one shown first")
    log: bool = option(False, "height = log10 of the quantity (--html: the page opens on log10)")
    zmax: float | None = option(
        None,
        "hide points above this value, in the quantity's own units also with --log (diverged points would dwarf "
        "the rest); --html: gaps in every quantity where --z is above it",
    )
    out: str | None = option(
        None,
        "output path without extension (--vtk: one input file only; default: the first input's path without "
        ".h5); or a folder (existing, or ending in /): each export goes into it named after its input "
        "(s.h5 -> FOLDER/s.vts; --html: the first input's name)",
        metavar="PREFIX",
    )
    force: bool = option(
        False,
        "write over an existing checkpoint, HDF5 file, training log, manifest or run record (refused otherwise; "
        "never over an input surface file)",
    )

    def __post_init__(self):
        files = (self.surf_files,) if isinstance(self.surf_files, (str, os.PathLike)) else tuple(self.surf_files or ())
        if not files:
            raise ConfigError("surf_files", self.surf_files, "one surface file or more")
        object.__setattr__(self, "surf_files", tuple(os.fspath(f) for f in files))
        if not (self.vtk or self.html):
            raise UsageError(f"nothing to export: give {param('vtk')}, {param('html')} or both")
        if self.labels is not None and len(self.labels) != len(files):
            raise UsageError(
                f"{param('labels')}: got {len(self.labels)} labels for {len(files)} files; expected one label per file"
            )
        zmax = self.zmax
        if zmax is not None and not (
            isinstance(zmax, (int, float)) and math.isfinite(zmax) and (zmax > 0 or not self.log)
        ):
            raise ConfigError(
                "zmax", zmax, "a finite number" + (", positive with log" if self.log else ""), literal=True
            )
        if self.out is not None:
            object.__setattr__(self, "out", os.fspath(self.out))


@dataclass(frozen=True)
class ExportResult(Result):
    files: list[str]


def run(params: ExportParams | dict, argv: tuple[str, ...] = ()) -> ExportResult:
    params = ExportParams.given(params)
    files = list(params.surf_files)
    out = params.out or None
    into = out is not None and (out.endswith(("/", os.sep)) or os.path.isdir(out))  # a folder: named files in it
    if params.vtk and out and not into and len(files) > 1:
        raise UsageError(
            f"{param('out')} {out}: one prefix for {len(files)} files; give one file, a folder, or no "
            f"{param('out')} (each file's export goes beside it)"
        )
    zmax = params.zmax
    stems = [os.path.splitext(path)[0] for path in files]
    if out:
        stems = [os.path.join(out, os.path.basename(stem)) for stem in stems] if into else [out] * len(files)
    for stem in stems:
        folder = os.path.dirname(os.path.abspath(stem))
        if not os.path.isdir(folder):
            raise InputError(f"{param('out')} {stem}: folder {folder} does not exist; expected an existing folder")
    surfaces = [read(path) for path in files]  # every file checked before any is written
    for surface in surfaces:
        if params.z not in quantities(surface):
            raise UsageError(
                f"{param('z')}={params.z}: {surface.path} has no such quantity; expected one of "
                f"{', '.join(quantities(surface))}"
            )
    outputs = [stem + (".vts" if f.ndim == 2 else ".vtu") for f, stem in zip(surfaces, stems)] if params.vtk else []
    twice = sorted({p for p in outputs if outputs.count(p) > 1})
    if twice:
        raise UsageError(
            f"{param('out')} {out}: two inputs would both be exported to {twice[0]}; expected inputs of "
            f"different names, or one at a time with its own {param('out')}"
        )
    for path in outputs + ([stems[0] + ".html"] if params.html else []):
        output_path(path, "file", "out")  # a folder, a device or an unwritable folder: refused before writing
        replaceable(path, "out", {"surf_files": files}, params.force)  # never over an input (io.outputs)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(
                f"{param('out')} {path}: folder {folder} is not writable; expected a folder the files can go to"
            )
    page = interactive.build(surfaces, params.labels, params.title, params.z, params.log, zmax) if params.html else None
    written, target = [], None
    try:
        if params.vtk:
            for surface, stem, path in zip(surfaces, stems, outputs):
                target = path
                written.append(write_vtk(surface, stem, params.z, params.log, zmax))
                print(written[-1])
        if page is not None:
            target = stems[0] + ".html"
            written.append(str(interactive.save(page, target)))
            print(written[-1])
    except OSError as exc:  # a folder that takes no files (/proc, a read-only mount as root, a full disk)
        reason = os.strerror(exc.errno) if exc.errno else exc.strerror  # a failed write names no file: target does
        raise InputError(
            f"{param('out')} {target or exc.filename}: cannot be written ({reason}); choose another {param('out')}"
        ) from None
    return ExportResult(written)
