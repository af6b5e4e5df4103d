"""A surface as one self-contained web page that turns in 3-D (``landscape export --html``), drawn
with ``plotly``: its JavaScript is inlined, so the file opens anywhere with no network.

The page shows every quantity of the file (and the error, 100 − accuracy, where there is an
accuracy), one at a time from a selector; a log-scale toggle; contours projected on the floor;
hover read-outs of α, β and every quantity at the point; two or more files side by side, each
quantity on one colour scale across them.  Points not computed are gaps, not zeros.

A surface file may come from anyone, and its attributes (``loss_name``), quantity names and file
names reach the page: plotly reads every label as a subset of HTML, so each is HTML-escaped (``_text``),
and the page's own script embeds JSON with ``<``, ``>`` and ``&`` escaped (``_js``), so no string can
close the ``<script>`` block (plotly escapes its own JSON the same way).
"""

from __future__ import annotations

import html
import json

import numpy as np

from ..errors import InputError, UsageError
from ..io.atomic import write_file
from ..io.paraview import quantities
from . import default_label, quantity_label

CMAP = "Viridis"


# JSON escapes that keep a string's value and make it inert inside <script>: no "</script>", no
# "<!--", no line separator that older JavaScript parsers take for the end of a string
_IN_SCRIPT = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _js(value) -> str:
    """``value`` as a JavaScript literal that is safe inside a ``<script>`` block.  ``{plot_id}`` is
    escaped too: plotly replaces it in the page's script with the plot's id."""
    return json.dumps(value).translate(_IN_SCRIPT).replace("{plot_id}", "\\u007bplot_id}")


def _text(value) -> str:
    """A string shown by plotly (a title, a label, a hover line), which reads it as a subset of HTML:
    escaped, so that it shows as written and holds no tag."""
    return html.escape(str(value), quote=False)


def _quantities(surface) -> dict[str, np.ndarray]:

    return {k: v for k, v in quantities(surface).items() if not k.endswith("_se")}


def _label(name: str, attrs: dict) -> str:
    """The words for a quantity, escaped for plotly (the file's ``loss_name`` is among them)."""
    if name.endswith("_err"):
        return f"{'training' if name.startswith('train') else 'test'} error (%)"
    return _text(quantity_label(name, attrs))


def _log(values: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, np.log10(np.where(values > 0, values, 1.0)), np.nan)


def build(
    surfaces,
    labels: list[str] | None = None,
    title: str | None = None,
    first: str = "train_loss",
    log: bool = False,
    zmax: float | None = None,
):
    """The plotly figure of ``surfaces`` (2-D, read with ``io.surface_file.read``) and the page's script.
    ``first`` is the quantity shown first, on the log10 scale with ``log``; with ``zmax`` the points
    where it is above ``zmax`` are gaps in every quantity (as ``export --vtk`` hides them)."""
    import plotly.graph_objects as go  # plotly: heavy, loaded only for the 3-D page
    from plotly.subplots import make_subplots

    for s in surfaces:
        if s.ndim != 2:
            raise UsageError(f"{s.path} is a 1-D surface: the 3-D page needs 2-D surfaces (plot1d draws 1-D files)")
    labels = [_text(a) for a in labels or ([default_label(s.path) for s in surfaces] if len(surfaces) > 1 else [""])]
    per = [_quantities(s) for s in surfaces]
    names = [q for q in per[0] if all(q in p for p in per)]
    if not names:
        raise InputError("the surfaces share no quantity to show")
    shown = first if first in names else names[0]
    for s, values in zip(surfaces, per):
        if log and np.any(values[shown][np.isfinite(values[shown])] <= 0):
            raise UsageError(f"log: {shown} has values <= 0 in {s.path}; a log height needs positive values")
        if zmax is not None:
            with np.errstate(invalid="ignore"):
                above = values[shown] > zmax
            values.update({q: np.where(above, np.nan, v) for q, v in values.items()})
    scale_shown = "log" if log else "lin"
    fig = make_subplots(
        rows=1,
        cols=len(surfaces),
        specs=[[{"type": "scene"}] * len(surfaces)],
        subplot_titles=labels if len(surfaces) > 1 else None,
        horizontal_spacing=0.02,
    )
    linear, logged, visible_by_name, ranges = [], [], {q: [] for q in names}, {}
    for col, (s, values) in enumerate(zip(surfaces, per), start=1):
        readout = np.stack([values[q] for q in names], axis=-1)  # (nx, ny, quantities): every value on hover
        lines = "".join(f"<br>{_text(q)} %{{customdata[{i}]:.5g}}" for i, q in enumerate(names))
        for q in names:
            together = np.concatenate([p[q][np.isfinite(p[q])] for p in per])
            positive = together[together > 0]
            scale = {
                "lin": (float(together.min()), float(together.max())) if together.size else (0.0, 1.0),
                "log": (float(np.log10(positive.min())), float(np.log10(positive.max())))
                if positive.size
                else (0.0, 1.0),
            }
            ranges[q] = scale
            z = values[q].T  # plotly: z[j][i] is (x[i], y[j])
            fig.add_trace(
                go.Surface(
                    x=s.x,
                    y=s.y,
                    z=_log(z) if log else z,
                    customdata=np.transpose(readout, (1, 0, 2)),
                    name=f"{labels[col - 1]} {_text(q)}".strip(),
                    visible=q == shown,
                    colorscale=CMAP,
                    cmin=scale[scale_shown][0],
                    cmax=scale[scale_shown][1],
                    showscale=col == len(surfaces),
                    colorbar={"title": {"text": f"{'log₁₀ ' if log else ''}{_label(q, s.attrs)}"}, "len": 0.75},
                    contours={"z": {"show": True, "usecolormap": True, "project": {"z": True}}},
                    hovertemplate=f"α %{{x:.4g}}<br>β %{{y:.4g}}{lines}<extra>{labels[col - 1]}</extra>",
                ),
                row=1,
                col=col,
            )
            linear.append((z, *scale["lin"], _label(q, s.attrs)))
            logged.append((_log(z), *scale["log"], f"log₁₀ {_label(q, s.attrs)}"))
            for name in names:
                visible_by_name[name].append(q == name)
    units = surfaces[0].attrs
    selector = [
        {"label": _label(q, units), "method": "update", "args": [{"visible": visible_by_name[q]}]} for q in names
    ]

    def restyle(values):
        return [
            {
                "z": [v[0] for v in values],
                "cmin": [v[1] for v in values],
                "cmax": [v[2] for v in values],
                "colorbar.title.text": [v[3] for v in values],
            }
        ]

    toggle = [
        {"label": "linear", "method": "restyle", "args": restyle(linear)},
        {"label": "log10", "method": "restyle", "args": restyle(logged)},
    ]
    fig.update_layout(
        title={
            "text": _text(title) if title else "loss landscape: drag to turn, scroll to zoom, hover for values",
            "y": 0.98,
            "x": 0.5,
            "xanchor": "center",
        },
        updatemenus=[
            {
                "buttons": selector,
                "direction": "down",
                "x": 0.0,
                "xanchor": "left",
                "y": 1.06,
                "yanchor": "bottom",
                "active": names.index(shown),
                "showactive": True,
            },
            {
                "buttons": toggle,
                "active": 1 if log else 0,
                "type": "buttons",
                "direction": "right",
                "x": 0.3,
                "xanchor": "left",
                "y": 1.06,
                "yanchor": "bottom",
                "showactive": True,
            },
        ],
        margin={"l": 0, "r": 0, "t": 110, "b": 0},
        height=620,
        width=600 * len(surfaces),
    )
    scenes = [f"scene{'' if k == 1 else k}" for k in range(1, len(surfaces) + 1)]
    for scene in scenes:  # one z range for every panel: the same height means the same loss
        fig.update_layout(
            **{
                scene: {
                    "xaxis_title": "α",
                    "yaxis_title": "β",
                    "zaxis_title": "",
                    "aspectmode": "cube",
                    "zaxis": {"range": list(ranges[shown][scale_shown])},
                }
            }
        )
    labels_of = {b["label"]: q for b, q in zip(selector, names)}
    return fig, _script(labels_of, ranges, scenes, shown, scale_shown)


def _script(labels_of: dict, ranges: dict, scenes: list[str], shown: str, scale: str = "lin") -> str:
    """The page's glue: the selector and the toggle each set their half of the state, and every panel's
    z axis follows the quantity and scale shown (plotly's menus alone cannot combine two choices)."""

    return (
        "var gd = document.getElementById('{plot_id}');"
        f"var labels = {_js(labels_of)}, ranges = {_js(ranges)}, scenes = {_js(scenes)};"
        f"var state = {{q: {_js(shown)}, scale: {_js(scale)}}};"
        "gd.on('plotly_buttonclicked', function (e) {"
        "  var label = e.button.label;"
        "  if (label in labels) { state.q = labels[label]; } else { state.scale = label === 'log10' ? 'log' : 'lin'; }"
        "  var update = {};"
        "  scenes.forEach(function (s) { update[s + '.zaxis.range'] = ranges[state.q][state.scale]; });"
        "  Plotly.relayout(gd, update);"
        "});"
    )


def save(page, path: str) -> str:
    """Write ``page`` (``build``'s figure and script) to ``path``, plotly's JavaScript inlined: no network
    is needed to open it.  Written whole under a temporary name and renamed (``io.atomic``): a symbolic
    link at ``path`` is replaced, never written through."""
    fig, script = page
    text = fig.to_html(include_plotlyjs=True, full_html=True, config={"displaylogo": False}, post_script=script)
    write_file(path, text.encode("utf-8"))
    return path


__all__ = ["build", "save"]
