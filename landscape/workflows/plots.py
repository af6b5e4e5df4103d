"""``landscape plot1d``, ``plot2d`` and ``plot-training`` as functions: figures drawn from result files
alone (surface files, sweep manifests), no model loaded.  Under an MPI launcher rank 0 draws, once."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from .. import checks
from ..errors import ConfigError, InputError, UsageError, param
from ..io.direction_file import read as read_directions
from ..io.surface_file import Surface, read
from ..parallel.comm import launcher_rank
from ..plotting import FORMATS, show
from ..plotting.levels import Style2D
from ..plotting.look import look, use
from ..plotting.oned import Style1D, write_1d
from ..plotting.training import write_training
from ..plotting.twod import KINDS, check_2d, write_2d
from ..train.sweep import read_manifest
from .command import Result, check_known

MAX_DPI = 2400  # a 6.4-inch figure is then 15,000 pixels wide; more is a typo
STYLES = ("default", "paper", "talk")
SHARED = {
    "labels": None,
    "out": None,
    "formats": ("png",),
    "dpi": None,
    "style": "default",
    "title": None,
    "mathtext": False,  # $...$ in --title and --labels typeset as math; by default every text is plain
    "show": False,
}
DEFAULTS_1D = {
    **SHARED,
    "split": "both",
    "error": False,
    "log": "auto",  # True (--log), False (--linear), or log where the losses span more than two decades
    "xmin": None,
    "xmax": None,
    "loss_min": None,
    "loss_max": None,
    "acc_min": None,
    "acc_max": None,
}
DEFAULTS_2D = {
    **SHARED,
    "surf_name": "train_loss",
    "vmin": None,
    "vmax": None,
    "vlevel": None,
    "log": "auto",  # True (--log), False (--linear), or log where the values span more than two decades
    "kinds": KINDS,
    "panels": None,
    "trajectory": None,
}
DEFAULTS_TRAINING = {
    "out": None,
    "formats": ("png", "pdf"),
    "dpi": None,
    "style": "default",
    "title": None,
    "mathtext": False,
}
REQUIRED_SURFACES = ("surf_files",)
REQUIRED_TRAINING = ("manifests",)


@dataclass(frozen=True)
class FigureResult(Result):
    files: list[str]


def _listed(value, name: str) -> list[str]:
    items = [value] if isinstance(value, (str, os.PathLike)) else list(value or [])
    if not items:
        raise ConfigError(name, value, "one file or more")
    return [str(item) for item in items]


def _checked_output(s: dict) -> None:
    formats = [s["formats"]] if isinstance(s["formats"], str) else list(s["formats"])
    if not formats or any(f not in FORMATS for f in formats):
        raise ConfigError("formats", " ".join(map(str, formats)), f"some of {', '.join(FORMATS)}")
    s["formats"] = tuple(formats)
    if s["style"] not in STYLES:
        raise ConfigError("style", s["style"], f"one of {', '.join(STYLES)}")
    if s["dpi"] is None:
        s["dpi"] = look(s["style"]).dpi or 150
    checks.whole("dpi", s["dpi"], most=MAX_DPI, expected=f"a number of dots per inch from 1 to {MAX_DPI}")


def read_inputs(s: dict, prog: str) -> tuple[list[Surface], str]:
    """The surface files, checked and read (a partly computed one drawn with a warning), and the prefix of
    the figures' names."""
    files = s["surf_files"]
    if s["labels"] is not None and len(s["labels"]) != len(files):
        raise UsageError(
            f"{param('labels')}: got {len(s['labels'])} labels for {len(files)} files; expected one label per file"
        )
    _checked_output(s)
    out = str(s["out"]) if s["out"] else output_prefix(files[0])
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise InputError(f"{param('out')} {out}: folder {folder} does not exist; expected an existing folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(
            f"{param('out')} {out}: folder {folder} is not writable; expected a folder the figures can go to"
        )
    surfaces = [read(path) for path in files]
    for surface in surfaces:
        if not surface.values:
            raise InputError(
                f"{surface.path} holds coordinates but no quantities; expected datasets such as train_loss "
                "(a surface file written by landscape surface or the reference code)"
            )
        total, done = surface.done.size, int(surface.done.sum())
        if 0 < done < total:
            print(
                f"{prog}: warning: {surface.path}: {done} of {total} points computed; the others are left blank",
                file=sys.stderr,
            )
    return surfaces, out


def output_prefix(path: str) -> str:
    stem, ext = os.path.splitext(path)
    return stem if ext == ".h5" else path


def run_1d(params: dict, argv: tuple[str, ...] = ()) -> FigureResult:
    """``landscape plot1d``: 1-D surfaces, loss on the left axis, accuracy (or error) on the right."""
    check_known(params, (*REQUIRED_SURFACES, *DEFAULTS_1D), "plot1d")
    if launcher_rank() != 0:  # a serial program started on several ranks: rank 0 draws, once
        return FigureResult([])
    s = {**DEFAULTS_1D, **params, "surf_files": _listed(params.get("surf_files"), "surf_files")}
    style = Style1D(
        split=s["split"],
        error=s["error"],
        log=s["log"],
        xlim=(s["xmin"], s["xmax"]),
        loss_lim=(s["loss_min"], s["loss_max"]),
        acc_lim=(s["acc_min"], s["acc_max"]),
        title=s["title"],
    )
    surfaces, out = read_inputs(s, "landscape plot1d")
    with use(s["style"], s["mathtext"]) as chosen:
        paths, fig = write_1d(surfaces, out, s["labels"], s["formats"], s["dpi"], style, chosen)
    for path in paths:
        print(path)
    if s["show"]:
        show([fig])
    return FigureResult([str(p) for p in paths])


def trajectories(surfaces: list[Surface], given: str) -> list:
    """Each surface's trajectory: from ``given``, else from the direction file its latest run used."""
    found = []
    for surface in surfaces:
        candidates = (
            [given]
            if given
            else [surface.run.get("dir_file", ""), os.path.splitext(surface.path)[0] + ".directions.h5"]
        )
        path = next((c for c in candidates if c and os.path.isfile(c)), None)
        if path is None:
            raise InputError(
                f"{param('trajectory')}: the direction file of {surface.path} ({candidates[0] or 'not recorded'}) "
                f"does not exist; give it: {param('trajectory')} DIR_FILE"
            )
        d = read_directions(path)
        recorded = surface.attrs.get("directions_sha256")
        if recorded and recorded != d.digest:
            raise InputError(
                f"{param('trajectory')}: direction file {path} is not the one {surface.path} was computed with (its "
                f"directions' digest {d.digest[:12]}… differs from the surface's {str(recorded)[:12]}…): "
                "a path drawn on another plane would be wrong"
            )
        if d.trajectory is None:
            raise InputError(
                f"{param('trajectory')}: direction file {path} holds no trajectory (its directions are "
                f"{d.axes[0].kind}); compute the surface with landscape surface --pca_from"
            )
        found.append(d.trajectory)
    return found


def run_2d(params: dict, argv: tuple[str, ...] = ()) -> FigureResult:
    """``landscape plot2d``: contours, filled contours and 3-D surfaces of 2-D surfaces."""
    check_known(params, (*REQUIRED_SURFACES, *DEFAULTS_2D), "plot2d")
    if launcher_rank() != 0:
        return FigureResult([])
    s = {**DEFAULTS_2D, **params, "surf_files": _listed(params.get("surf_files"), "surf_files")}
    if s["panels"] is not None:
        checks.whole("panels", s["panels"], expected="a positive number of panels per row")
    kinds = [s["kinds"]] if isinstance(s["kinds"], str) else list(dict.fromkeys(s["kinds"]))  # each once, in order
    if not kinds or any(k not in KINDS for k in kinds):
        raise ConfigError("kinds", " ".join(map(str, kinds)), f"some of {', '.join(KINDS)}")
    style = Style2D(
        vmin=s["vmin"], vmax=s["vmax"], vlevel=s["vlevel"], log=s["log"], title=s["title"], columns=s["panels"]
    )
    surfaces, out = read_inputs(s, "landscape plot2d")
    check_2d(surfaces, s["surf_name"])
    paths_ = trajectories(surfaces, s["trajectory"]) if s["trajectory"] is not None else None
    with use(s["style"], s["mathtext"]) as chosen:
        paths, figures = write_2d(
            surfaces, out, s["surf_name"], kinds, s["labels"], s["formats"], s["dpi"], style, paths_, chosen
        )
    for path in paths:
        print(path)
    if s["show"]:
        show(figures)
    return FigureResult([str(p) for p in paths])


def run_training(params: dict, argv: tuple[str, ...] = ()) -> FigureResult:
    """``landscape plot-training``: test error against batch size per recipe, and the training curves."""
    check_known(params, (*REQUIRED_TRAINING, *DEFAULTS_TRAINING), "plot-training")
    if launcher_rank() != 0:
        return FigureResult([])
    s = {**DEFAULTS_TRAINING, **params, "manifests": _listed(params.get("manifests"), "manifests")}
    _checked_output(s)
    rows = [row for path in s["manifests"] for row in read_manifest(path)]
    first = s["manifests"][0]
    out = s["out"] or os.path.join(first if os.path.isdir(first) else os.path.dirname(first) or ".", "training")
    with use(s["style"], s["mathtext"]) as chosen:
        paths = write_training(rows, str(out), s["formats"], s["dpi"], s["title"], chosen)
    for path in paths:
        print(f"wrote {path}")
    return FigureResult([str(p) for p in paths])
