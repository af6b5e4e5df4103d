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
from .look import EMBED, fit, plain_text

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


def log_ticks(axis) -> None:
    """Ticks at 1, 2 and 5 times powers of ten, written plainly, on a log-scaled axis; on an x-axis that
    spans more than 2.5 decades at the powers of ten only (at 1 and 5, 0.01 and 0.005 still ran into each
    other in a two-column figure).  Call it after the data are drawn: the span is the axis's view at the
    call."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    subs = (1.0, 2.0, 5.0)
    if axis.axis_name == "x":
        low, high = sorted(axis.axes.get_xlim())
        if low > 0 and math.log10(high / low) > 2.5:
            subs = (1.0,)
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
                    reason = " ".join(str(exc).split())
                    raise InputError(
                        f"--mathtext: a title or label is not valid mathtext ({reason}); correct it or drop --mathtext"
                    ) from None

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
