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
from .command import Result
from .params import REQUIRED, Params, option

MAX_DPI = 2400  # a 6.4-inch figure is then 15,000 pixels wide; more is a typo
STYLES = ("default", "paper", "talk")
LOG_SWITCHES = (
    "log scale ({what}; default: log where every value drawn is positive and they span more than two decades, "
    "else linear)"
)


def _files(value, name: str) -> tuple[str, ...]:
    items = (value,) if isinstance(value, (str, os.PathLike)) else tuple(value or ())
    if not items:
        raise ConfigError(name, value, "one file or more")
    return tuple(os.fspath(item) for item in items)


@dataclass(frozen=True, kw_only=True)
class FigureParams(Params):
    """What every figure command takes: where the figures go and how they look."""

    out: str | None = option(None, "output path prefix (default: the first file without .h5)", metavar="PREFIX")
    formats: tuple[str, ...] = option(("png",), "output format(s)", flag="--format", choices=FORMATS)
    dpi: int | None = option(None, "resolution of png output", shown="150; 300 with --style paper")
    style: str = option(
        "default",
        "paper: one- or two-column widths, 8 pt fonts, colour-blind-safe curves; talk: large",
        choices=STYLES,
    )
    title: str | None = option(None, "figure title (default: none)")
    mathtext: bool = option(
        False, "typeset $...$ in titles and labels as math (default: every text is plain, a $ is a dollar sign)"
    )

    def __post_init__(self):
        formats = (self.formats,) if isinstance(self.formats, str) else tuple(self.formats)
        if not formats or any(f not in FORMATS for f in formats):
            raise ConfigError("formats", " ".join(map(str, formats)), f"some of {', '.join(FORMATS)}")
        object.__setattr__(self, "formats", formats)
        if self.style not in STYLES:
            raise ConfigError("style", self.style, f"one of {', '.join(STYLES)}")
        if self.dpi is None:
            object.__setattr__(self, "dpi", look(self.style).dpi or 150)
        checks.whole("dpi", self.dpi, most=MAX_DPI, expected=f"a number of dots per inch from 1 to {MAX_DPI}")
        if self.out is not None:
            object.__setattr__(self, "out", os.fspath(self.out))


@dataclass(frozen=True, kw_only=True)
class SurfacePlotParams(FigureParams):
    """What plot1d and plot2d share: the surface files, their labels, and a window to show them in."""

    surf_files: tuple[str, ...] = option(
        REQUIRED, "surface file(s) written by landscape surface (or the reference code)", positional=True,
        metavar="SURF_FILE",
    )  # fmt: skip
    labels: tuple[str, ...] | None = option(None, "one label per file (default: the file names)", metavar="LABEL")
    show: bool = option(False, "also open the figures in a window")

    def __post_init__(self):
        super().__post_init__()
        files = _files(self.surf_files, "surf_files")
        object.__setattr__(self, "surf_files", files)
        if self.labels is not None and len(self.labels) != len(files):
            raise UsageError(
                f"{param('labels')}: got {len(self.labels)} labels for {len(files)} files; expected one label per file"
            )


@dataclass(frozen=True, kw_only=True)
class Plot1DParams(SurfacePlotParams):
    """``landscape plot1d``'s parameters."""

    COMMAND = "plot1d"
    DESCRIPTION = (
        "Draw 1-D loss surfaces: loss on the left axis, accuracy (or error) on the right; several files are "
        "overlaid, one colour each. Writes <out>_1d.<format>."
    )
    split: str = option(
        "both",
        "curves to draw; 'both' draws test curves (dashed) where the file has them",
        choices=("train", "test", "both"),
    )
    error: bool = option(False, "plot the error 100 - accuracy instead of the accuracy")
    log: bool | str = option(
        "auto",
        switches=(
            ("--log", True, LOG_SWITCHES.format(what="the loss axis")),
            ("--linear", False, "linear scale for the loss axis"),
        ),
    )
    xmin: float | None = option(None, "lower limit of the α axis (default: the grid's)", metavar="V")
    xmax: float | None = option(None, "upper limit of the α axis (default: the grid's)", metavar="V")
    loss_min: float | None = option(None, "lower limit of the loss axis (default: automatic)", metavar="V")
    loss_max: float | None = option(None, "upper limit of the loss axis (default: automatic)", metavar="V")
    acc_min: float | None = option(None, "lower limit of the accuracy/error axis (default: 0)", metavar="V")
    acc_max: float | None = option(None, "upper limit of the accuracy/error axis (default: 100)", metavar="V")


@dataclass(frozen=True, kw_only=True)
class Plot2DParams(SurfacePlotParams):
    """``landscape plot2d``'s parameters."""

    COMMAND = "plot2d"
    DESCRIPTION = (
        "Draw 2-D loss surfaces. Writes <out>_<surf_name>_2dcontour, _2dcontourf and _3dsurface.<format>; a cross "
        "(a star in 3-D) marks the trained model at (0, 0)."
    )
    surf_name: str = option(
        "train_loss",
        "quantity to draw: train_loss, train_acc, test_loss, test_acc, or train_err/test_err (100 - accuracy)",
    )
    vmin: float | None = option(None, "lowest contour level (default: the minimum of the data)")
    vmax: float | None = option(
        None,
        "highest contour level; larger values are clipped in the 3-D surface (default: the maximum, or the 95th "
        "percentile when a few points diverge)",
    )
    vlevel: float | None = option(
        None, "step between contour levels; with --log, in decades (default: about 20 levels)"
    )
    log: bool | str = option(
        "auto",
        switches=(
            (
                "--log",
                True,
                "log-spaced levels and a log colour scale (default: so where every value is positive and they "
                "span more than two decades, no --vlevel is given and the quantity is not an accuracy; else "
                "linear)",
            ),
            ("--linear", False, "evenly spaced levels, a linear colour scale"),
        ),
    )
    kinds: tuple[str, ...] = option(KINDS, "figures to draw (default: all three)", flag="--kind", choices=KINDS)
    panels: int | None = option(
        None,
        "several files: this many panels per row (default: all in one row); every panel shares the levels and "
        "the colour bar",
        metavar="COLUMNS",
    )
    trajectory: str | None = option(
        None,
        "draw the training path over the contours (surfaces on a pca_from plane): from this direction file, or "
        "by default the one each surface was computed with",
        nargs="?",
        const="",
        metavar="DIR_FILE",
    )

    def __post_init__(self):
        super().__post_init__()
        if self.panels is not None:
            checks.whole("panels", self.panels, expected="a positive number of panels per row")
        kinds = (self.kinds,) if isinstance(self.kinds, str) else tuple(dict.fromkeys(self.kinds))  # each once
        if not kinds or any(k not in KINDS for k in kinds):
            raise ConfigError("kinds", " ".join(map(str, kinds)), f"some of {', '.join(KINDS)}")
        object.__setattr__(self, "kinds", kinds)


@dataclass(frozen=True, kw_only=True)
class TrainingPlotParams(FigureParams):
    """``landscape plot-training``'s parameters."""

    COMMAND = "plot-training"
    DESCRIPTION = (
        "Draw, from sweep manifests, the final test error against the batch size per recipe (error bars over "
        "seeds) and the test error per epoch. Writes <out>.<format>."
    )
    manifests: tuple[str, ...] = option(REQUIRED, "manifest.json, manifest.csv, or a sweep folder", positional=True)
    formats: tuple[str, ...] = option(("png", "pdf"), "output format(s)", flag="--format", choices=FORMATS)
    out: str | None = option(None, "file name without extension (default: <first sweep folder>/training)")

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "manifests", _files(self.manifests, "manifests"))


@dataclass(frozen=True)
class FigureResult(Result):
    files: list[str]


def read_inputs(params: SurfacePlotParams, prog: str) -> tuple[list[Surface], str]:
    """The surface files, checked and read (a partly computed one drawn with a warning), and the prefix of
    the figures' names."""
    files = params.surf_files
    out = params.out or output_prefix(files[0])
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


def run_1d(params: Plot1DParams | dict, argv: tuple[str, ...] = ()) -> FigureResult:
    """``landscape plot1d``: 1-D surfaces, loss on the left axis, accuracy (or error) on the right."""
    params = Plot1DParams.given(params)
    if launcher_rank() != 0:  # a serial program started on several ranks: rank 0 draws, once
        return FigureResult([])
    style = Style1D(
        split=params.split,
        error=params.error,
        log=params.log,
        xlim=(params.xmin, params.xmax),
        loss_lim=(params.loss_min, params.loss_max),
        acc_lim=(params.acc_min, params.acc_max),
        title=params.title,
    )
    surfaces, out = read_inputs(params, "landscape plot1d")
    with use(params.style, params.mathtext) as chosen:
        paths, fig = write_1d(surfaces, out, params.labels, params.formats, params.dpi, style, chosen)
    for path in paths:
        print(path)
    if params.show:
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


def run_2d(params: Plot2DParams | dict, argv: tuple[str, ...] = ()) -> FigureResult:
    """``landscape plot2d``: contours, filled contours and 3-D surfaces of 2-D surfaces."""
    params = Plot2DParams.given(params)
    if launcher_rank() != 0:
        return FigureResult([])
    style = Style2D(
        vmin=params.vmin,
        vmax=params.vmax,
        vlevel=params.vlevel,
        log=params.log,
        title=params.title,
        columns=params.panels,
    )
    surfaces, out = read_inputs(params, "landscape plot2d")
    check_2d(surfaces, params.surf_name)
    paths_ = trajectories(surfaces, params.trajectory) if params.trajectory is not None else None
    with use(params.style, params.mathtext) as chosen:
        paths, figures = write_2d(
            surfaces, out, params.surf_name, params.kinds, params.labels, params.formats, params.dpi, style, paths_,
            chosen,
        )  # fmt: skip
    for path in paths:
        print(path)
    if params.show:
        show(figures)
    return FigureResult([str(p) for p in paths])


def run_training(params: TrainingPlotParams | dict, argv: tuple[str, ...] = ()) -> FigureResult:
    """``landscape plot-training``: test error against batch size per recipe, and the training curves."""
    params = TrainingPlotParams.given(params)
    if launcher_rank() != 0:
        return FigureResult([])
    rows = [row for path in params.manifests for row in read_manifest(path)]
    first = params.manifests[0]
    out = params.out or os.path.join(first if os.path.isdir(first) else os.path.dirname(first) or ".", "training")
    with use(params.style, params.mathtext) as chosen:
        paths = write_training(rows, str(out), params.formats, params.dpi, params.title, chosen)
    for path in paths:
        print(f"wrote {path}")
    return FigureResult([str(p) for p in paths])
