"""Figures drawn from surface files alone: 1-D curves (``oned``) and 2-D maps (``twod``).

The drawing modules never import ``matplotlib.pyplot``: they build ``Figure``
objects directly, so no GUI backend is touched (clusters have no display), no
global figure registry fills up, and saving works the same everywhere.  Only
``show`` below hands finished figures to pyplot, when a user asks for ``--show``.

This module holds the few words and helpers both drawing modules share.
"""

from __future__ import annotations

import math
import os

from ..errors import InputError
from ..io.atomic import write_with
from ..io.outputs import figure_replaceable
from ..losses import LOSS_WORDS
from ..surface import quantities
from .look import EMBED, fit, invalid_mathtext, plain_text

FORMATS = ("png", "pdf", "svg")

# How a direction was normalized (the surface attribute xnorm / ynorm), in words.
NORM_WORDS = {
    "filter": "filter-normalized",
    "layer": "layer-normalized",
    "weight": "weight-normalized",
    "dfilter": "unit-norm filters",
    "dlayer": "unit-norm layers",
    "none": "not normalized",
}


def default_label(path: str) -> str:
    """A legend/panel label from a file name: ``runs/resnet56_sgd.h5`` -> ``resnet56_sgd``."""
    return os.path.splitext(os.path.basename(path))[0]


def axis_label(attrs: dict, axis: str) -> str:
    """``α``/``β`` with what the direction was, when the file says (attributes xdirection, xnorm)."""
    letter = "α" if axis == "x" else "β"
    if attrs.get(f"{axis}direction") == "target":
        other = "2" if axis == "x" else "3"
        return f"{letter} (interpolation: 0 = model, 1 = model {other})"
    kind = str(attrs.get(f"{axis}direction", ""))
    if kind.startswith("PC"):  # a trajectory's principal component: a unit vector in weight space
        return f"{kind.split(' of ')[0]} (distance in weight space)"
    norm = attrs.get(f"{axis}norm")
    if not norm:
        return letter
    words = NORM_WORDS.get(str(norm), f"{norm} normalization")
    return f"{letter} along the {axis} direction ({words})"


def quantity_label(name: str, attrs: dict | None = None) -> str:
    """Axis or colour-bar words for a quantity: ``test_acc`` -> ``test accuracy (%)``, ``loss`` -> ``loss (MSE)``."""
    try:
        q = quantities.parse(name)
    except InputError:
        return name  # a quantity of a file this toolkit did not write: its own name
    words = q.metric.label
    if q.metric.units == "loss":
        loss_name = (attrs or {}).get("loss_name")
        words += f" ({LOSS_WORDS.get(str(loss_name), loss_name)})" if loss_name else ""
    elif q.metric.units:
        words += f" ({q.metric.units})"
    data = quantities.DATA_WORDS.get(q.data, q.data)
    return f"{data} {words}" if data else words


def plain_number(v: float, _pos=None) -> str:
    """Two significant digits without an exponent for 1e-5..1e5: 0.05, 0.2, 400 (a tick formatter)."""
    return f"{float(f'{v:.2g}'):g}"


# Tick sets of a log axis, densest first, and the least distance between two of their ticks in decades.
LOG_SUBS = (
    (tuple(float(m) for m in range(1, 10)), math.log10(10 / 9)),  # a short span: 30, 40, ..., 90
    ((1.0, 2.0, 5.0), math.log10(2)),
    ((1.0, 3.0), math.log10(3)),
    ((1.0,), 1.0),
)
# In font sizes (ems): a digit's width and a point's in DejaVu Sans, the least space between two labels side
# by side, and the height a label needs on a vertical axis.
DIGIT_WIDTH, POINT_WIDTH, LABEL_GAP, LABEL_HEIGHT = 0.636, 0.318, 0.5, 1.3


def _label_width(word: str) -> float:
    return sum(POINT_WIDTH if c == "." else DIGIT_WIDTH for c in word) + LABEL_GAP


def _log_labels(low: float, high: float, subs) -> list[str]:
    lo, hi = math.floor(math.log10(low)), math.ceil(math.log10(high))
    values = [m * 10.0**k for k in range(lo, hi + 1) for m in subs]
    return [plain_number(v) for v in values if low <= v <= high]


def log_ticks(axis) -> None:
    """Ticks at 1, 2 and 5 times powers of ten, written plainly, on a log-scaled axis; at every integer
    multiple where the span is short enough for them all (30, 40, ..., 90), and where the axis is too short
    for that many labels side by side (for its span, its length, the labels' digits and their font), at 1
    and 3 times powers of ten, or at the powers of ten only.  Call it after the data are drawn:
    the span and the length are the axis's at the call."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax, name = axis.axes, axis.axis_name
    low, high = sorted(ax.get_xlim() if name == "x" else ax.get_ylim())
    box = ax.get_position()
    inches = box.width * ax.figure.get_figwidth() if name == "x" else box.height * ax.figure.get_figheight()
    labels = axis.get_ticklabels()
    size = (labels[0].get_fontsize() if labels else 10.0) / 72  # inches
    decades = math.log10(high / low) if 0 < low < high else 0.0
    subs = LOG_SUBS[-1][0]
    for candidate, gap in LOG_SUBS:
        words = _log_labels(low, high, candidate) if decades else []
        room = size * (LABEL_HEIGHT if name != "x" else max(map(_label_width, words), default=1.0))
        if decades == 0 or inches * gap / decades >= room:
            subs = candidate
            break
    axis.set_major_locator(LogLocator(subs=subs))
    axis.set_major_formatter(FuncFormatter(plain_number))
    axis.set_minor_formatter(NullFormatter())


def save(fig, stem: str, formats, dpi: int, look=None, panels: int = 1) -> list[str]:
    """Write ``fig`` as ``<stem>.<fmt>`` for each format, sized for ``look`` (``plotting.look``: one
    column for one panel, two for several), fonts embedded as TrueType; return the paths written.  Each
    file is written whole or not at all, over an older one (``io.atomic``), never over a file of a kind the
    toolkit keeps (``io.outputs``)."""
    from matplotlib import rc_context

    if look is not None:
        fit(fig, look, panels)
    mathtext = look is not None and look.mathtext
    if not mathtext:  # a $ from a file or a flag is a dollar sign (look.plain_text)
        plain_text(fig)
    for fmt in formats:  # never over a checkpoint, a surface, a log or a manifest (io.outputs)
        figure_replaceable(f"{stem}.{fmt}")
    paths = []
    for fmt in formats:
        path = f"{stem}.{fmt}"
        # bbox_inches="tight" keeps outside legends and 3-D axis labels from being cut off.
        # No creation date in a PDF: the same surface gives the same file, so committed figures
        # change only when the picture does.
        metadata = {"CreationDate": None} if fmt == "pdf" else None

        def draw(handle, fmt=fmt, metadata=metadata):
            with rc_context(EMBED):
                try:
                    fig.savefig(handle, format=fmt, dpi=dpi, bbox_inches="tight", metadata=metadata)
                except ValueError as exc:  # mathtext the user asked for that does not parse
                    if not mathtext:
                        raise
                    raise invalid_mathtext(exc) from None

        # Whole or not at all (io.atomic): a full disk is one line naming the figure, no half-written one.
        write_with(path, "figure", draw)
        paths.append(path)
    return paths


def show(figures) -> None:
    """Open finished figures in a window (``--show``); pyplot is imported only here."""
    import matplotlib.pyplot as plt  # pyplot (a window system) only when figures are shown on screen

    for fig in figures:
        plt.figure(fig)  # adopt a figure made without pyplot (matplotlib >= 3.10)
    plt.show()
