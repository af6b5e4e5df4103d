"""How a figure looks where it goes: ``--style default|paper|talk``.

- ``paper``: widths for a journal page — one column (3.4 in) for a single panel, two columns (7.0 in)
  for several — fonts of 8 pt to match a paper's 9-10 pt text once printed, thin lines, 300 dpi, and
  the colour-blind-safe Okabe-Ito cycle for curves (the maps are viridis in every style, which is
  safe already).
- ``talk``: twice the paper's widths and 14 pt fonts, thick lines: legible from the back of a room.
- ``default``: the figures as the commands always drew them.

Every style embeds PDF fonts as TrueType (Type 42, which journals' checks accept where Type 3 fails)
and keeps SVG text as text.  A drawing function is called inside ``use(style)`` (fonts and lines are
fixed when the artists are made); ``fit`` then sets the figure's width, keeping its proportions.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace

from cycler import cycler
from matplotlib import rc_context

from ..errors import InputError, UsageError

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
EMBED = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"}


@dataclass(frozen=True)
class Look:
    name: str
    one: float | None = None  # inches: a figure of one panel; None: as drawn
    two: float | None = None  # inches: a figure of several panels
    font: float | None = None  # points
    line: float | None = None  # points
    dpi: int | None = None
    safe_colours: bool = False
    mathtext: bool = False  # $...$ in a title or label typeset as math (--mathtext); else every text is plain

    def rc(self) -> dict:
        out = dict(EMBED)
        if self.font:
            out.update(
                {
                    "font.size": self.font,
                    "axes.titlesize": self.font + 1,
                    "axes.labelsize": self.font,
                    "xtick.labelsize": self.font - 1,
                    "ytick.labelsize": self.font - 1,
                    "legend.fontsize": self.font - 1,
                    "figure.titlesize": self.font + 1,
                }
            )
        if self.line:
            out.update(
                {"lines.linewidth": self.line, "axes.linewidth": 0.6 * self.line, "lines.markersize": 3 * self.line}
            )
        if self.safe_colours:
            out["axes.prop_cycle"] = cycler(color=list(OKABE_ITO))
        return out


LOOKS = {
    "default": Look("default"),
    "paper": Look("paper", one=3.4, two=7.0, font=8, line=1.0, dpi=300, safe_colours=True),
    "talk": Look("talk", one=6.8, two=13.0, font=14, line=2.2, dpi=150, safe_colours=True),
}


def look(name: str) -> Look:
    if name not in LOOKS:
        raise UsageError(f"--style {name}: expected one of {', '.join(LOOKS)}")
    return LOOKS[name]


@contextmanager
def use(style: Look | str = "default", mathtext: bool = False):
    """matplotlib's settings for ``style`` while figures are drawn and saved; ``mathtext``: the user asked
    for ``$...$`` to be typeset (``--mathtext``)."""
    chosen = look(style) if isinstance(style, str) else style
    chosen = replace(chosen, mathtext=bool(mathtext))
    with rc_context(chosen.rc()):
        yield chosen


def plain_text(fig) -> None:
    """Every text of ``fig`` drawn as it reads: a ``$`` in a file name, a recipe, a quantity or a flag is a
    dollar sign, not the start of matplotlib's mathtext (which would typeset ``$x$`` as math and fail on
    ``$\\undefined$``).  Tick labels and offset texts are left to their formatters, whose own mathtext
    writes 10⁻³ on a log axis."""
    from matplotlib.text import Text

    formatted = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis, getattr(ax, "zaxis", None)):
            if axis is not None:
                formatted.update(map(id, axis.get_ticklabels(which="both")))
                formatted.add(id(axis.get_offset_text()))
    for text in fig.findobj(Text):
        if id(text) not in formatted:
            text.set_parse_math(False)


def invalid_mathtext(exc: ValueError) -> InputError:
    """The one line for mathtext the user asked for (``--mathtext``) that matplotlib cannot parse."""
    reason = " ".join(str(exc).split())
    return InputError(f"--mathtext: a title or label is not valid mathtext ({reason}); correct it or drop --mathtext")


def fit(fig, style: Look, panels: int = 1) -> None:
    """Set ``fig``'s width to the style's one- or two-column width, keeping its proportions."""
    width = style.one if panels <= 1 else style.two
    if width:
        w, h = fig.get_size_inches()
        fig.set_size_inches(width, h * width / w)


__all__ = ["Look", "LOOKS", "look", "use", "fit", "plain_text", "invalid_mathtext", "OKABE_ITO"]
