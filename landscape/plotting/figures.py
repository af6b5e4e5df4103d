"""The figures ``plot_surface --plot`` draws at the end of a job, from the surface file alone."""

from __future__ import annotations

import os

from ..io.surface_file import read
from .levels import Style2D
from .oned import Style1D, write_1d
from .twod import write_2d


def draw_surface_figures(
    path: str, vmin=None, vmax=None, vlevel=None, log=False, formats=("png",), dpi: int = 150
) -> list[str]:
    surface = read(path)
    out = os.path.splitext(path)[0]
    if surface.ndim == 1:
        return write_1d([surface], out, formats=formats, dpi=dpi, style=Style1D(log=log))[0]
    return write_2d([surface], out, style=Style2D(vmin, vmax, vlevel, log), formats=formats, dpi=dpi)[0]
