"""plot_1d / plot_2d and the drawing functions behind them, on synthetic surface files.

The 2-D grid is deliberately non-square (21 × 13, with different x and y ranges)
and the function asymmetric, so a transposed picture cannot pass.
"""

from __future__ import annotations

import subprocess
import sys

import h5py
import numpy as np
import pytest

from landscape.cli import plot_1d, plot_2d
from landscape.io import surface_file
from landscape.io.surface_file import read as read_surface
from landscape.plotting import oned, twod
from landscape.plotting.levels import Style2D
from landscape.workflows.plots import Plot1DParams, Plot2DParams

from conftest import landscape

X2 = np.linspace(-1.0, 1.0, 21)
Y2 = np.linspace(-0.6, 0.6, 13)
X1 = np.linspace(-1.0, 1.0, 31)
IDENTITY = {"xnorm": "filter", "ynorm": "filter", "loss_name": "crossentropy"}
PNG, PDF = b"\x89PNG\r\n\x1a\n", b"%PDF"


def f(a, b):
    """Asymmetric in a <-> b and in a -> -a: 3a + b^2 - 0.5ab + 4."""
    return 3.0 * a + b**2 - 0.5 * a * b + 4.0


def make_surface(path, x, y, funcs: dict, done=None) -> str:
    """Write a surface file whose quantity ``q`` at point (a[, b]) is ``funcs[q](a[, b])``.

    ``done``: flat indices of the computed points (default all).
    """
    names = list(funcs)
    surface_file.create(str(path), x, y, {name: {"long_name": name, "units": ""} for name in names}, IDENTITY)
    points = [(a,) for a in x] if y is None else [(a, b) for a in x for b in y]  # [i, j] order
    flat = np.arange(len(points)) if done is None else np.sort(np.asarray(done))
    values = np.array([[funcs[q](*points[k]) for q in names] for k in flat]).reshape(len(flat), len(names))
    if len(flat):
        with h5py.File(path, "r+") as h:
            surface_file.write_values(h, flat, values, names)
            surface_file.mark_done(h, flat)
    return str(path)


def surface_2d(tmp_path, name="s2.h5", func=f, **kw) -> str:
    return make_surface(
        tmp_path / name, X2, Y2, {"train_loss": func, "train_acc": lambda a, b: 100 - 10 * abs(a)}, **kw
    )


def surface_1d(tmp_path, name="s1.h5", x=X1, test=True, **kw) -> str:
    funcs = {"train_loss": lambda a: 0.1 + a**2, "train_acc": lambda a: 100 - 30 * a**2}
    if test:
        funcs.update(test_loss=lambda a: 0.3 + a**2, test_acc=lambda a: 90 - 30 * a**2)
    return make_surface(tmp_path / name, x, None, funcs, **kw)


def head(path, n=8) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def run(command, argv, capsys):
    code = landscape(command, *argv)
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- orientation


def test_plot_arrays_put_x_on_the_horizontal_axis(tmp_path):
    s = read_surface(surface_2d(tmp_path))
    X, Y, Z = twod.plot_arrays(s, "train_loss")
    assert X.shape == Y.shape == Z.shape == (len(Y2), len(X2))  # rows along y, columns along x
    for i, j in [(0, 0), (20, 0), (3, 11), (17, 5)]:
        assert X[j, i] == X2[i] and Y[j, i] == Y2[j]
        assert Z[j, i] == pytest.approx(f(X2[i], Y2[j]))


def test_drawn_axes_span_x_horizontally_and_y_vertically(tmp_path):
    s = read_surface(surface_2d(tmp_path))
    for kind in ("contour", "contourf"):
        ax = twod.draw_2d([s], kind).axes[0]
        assert ax.get_xlim() == pytest.approx((-1.0, 1.0)) and ax.get_ylim() == pytest.approx((-0.6, 0.6))
        assert "α" in ax.get_xlabel() and "filter-normalized" in ax.get_xlabel() and "β" in ax.get_ylabel()


def test_3d_surface_is_drawn_and_clipped_at_vmax(tmp_path):
    spike = lambda a, b: f(a, b) + (1e4 if a == X2[-1] and b == Y2[-1] else 0.0)
    s = read_surface(surface_2d(tmp_path, func=spike))
    fig = twod.draw_2d([s], "surface", style=Style2D(vmax=6.0))
    ax = fig.axes[0]
    assert ax.name == "3d"
    faces = sum(len(c.get_facecolor()) for c in ax.collections)
    assert faces >= (len(X2) - 1) * (len(Y2) - 1)  # one coloured quad per grid cell: not blank
    assert ax.get_zlim()[1] == pytest.approx(6.0, abs=0.51)  # the spike does not set the scale


# --------------------------------------------------------------------------- files written


def test_plot_2d_writes_png_and_pdf_for_each_kind(tmp_path, capsys):
    path = surface_2d(tmp_path)
    code, out, err = run("plot2d", [path, "--format", "png", "pdf", "--dpi", 40], capsys)
    assert code == 0, err
    written = out.split()
    stem = str(tmp_path / "s2_train_loss")
    assert written == [f"{stem}_{k}.{e}" for k in ("2dcontour", "2dcontourf", "3dsurface") for e in ("png", "pdf")]
    for p in written:
        assert head(p).startswith(PNG if p.endswith(".png") else PDF)


def test_plot_1d_overlays_files_with_different_grids(tmp_path, capsys):
    a = surface_1d(tmp_path, "a.h5")
    b = surface_1d(tmp_path, "b.h5", x=np.linspace(-0.5, 1.5, 11), test=False)
    out_prefix = tmp_path / "fig"
    code, out, err = run(
        "plot1d", [a, b, "--labels", "A", "B", "--out", out_prefix, "--format", "pdf", "--error", "--log"], capsys
    )
    assert code == 0, err
    assert out.split() == [f"{out_prefix}_1d.pdf"]
    assert head(f"{out_prefix}_1d.pdf", 4) == PDF
    # what that figure holds: both grids on one α axis, log loss, error = 100 - accuracy
    fig = oned.draw_1d([read_surface(a), read_surface(b)], ["A", "B"], oned.Style1D(error=True, log=True))
    ax_loss, ax_acc = fig.axes
    assert ax_loss.get_yscale() == "log" and ax_loss.get_xlim() == pytest.approx((-1.0, 1.5))
    assert sorted(len(line.get_xdata()) for line in ax_loss.lines if np.size(line.get_xdata()) > 2) == [11, 31, 31]
    assert np.allclose(ax_acc.lines[0].get_ydata(), 100 - read_surface(a).values["train_acc"])


def test_1d_figure_has_one_colour_per_file_and_dashed_test_curves(tmp_path):
    surfaces = [read_surface(surface_1d(tmp_path, n)) for n in ("a.h5", "b.h5")]
    fig = oned.draw_1d(surfaces, ["A", "B"])
    ax_loss, ax_acc = fig.axes
    assert {line.get_color() for line in ax_loss.lines if np.size(line.get_xdata()) > 2} == {"C0", "C1"}
    assert sorted(line.get_linestyle() for line in ax_acc.lines) == ["-", "-", "--", "--"]
    assert ax_acc.get_ylabel() == "accuracy (%)"


def test_regression_surface_without_accuracy_has_no_right_axis(tmp_path):
    path = make_surface(tmp_path / "r.h5", X1, None, {"train_loss": lambda a: a**2})
    fig = oned.draw_1d([read_surface(path)])
    assert len(fig.axes) == 1


def test_multi_file_panels_share_levels_and_one_colour_bar(tmp_path, capsys):
    a = surface_2d(tmp_path, "a.h5")
    b = surface_2d(tmp_path, "b.h5", func=lambda x, y: 2 * f(x, y))
    fig = twod.draw_2d([read_surface(p) for p in (a, b)], "contourf", labels=["first", "second"])
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 2 and len(fig.axes) == 3  # two panels, one colour bar
    assert [ax.get_title() for ax in panels] == ["first", "second"]
    sets = [ax.collections[0] for ax in panels]
    assert np.array_equal(sets[0].levels, sets[1].levels)
    assert (sets[0].norm.vmin, sets[0].norm.vmax) == (sets[1].norm.vmin, sets[1].norm.vmax)
    code, out, err = run("plot2d", [a, b, "--out", tmp_path / "ab", "--kind", "surface", "--dpi", 40], capsys)
    assert code == 0 and out.split() == [str(tmp_path / "ab_train_loss_3dsurface.png")]


def test_partly_computed_surface_is_drawn_with_a_warning(tmp_path, capsys):
    path = surface_2d(tmp_path, done=np.arange(0, 21 * 13, 2))
    code, out, err = run("plot2d", [path, "--kind", "contourf", "--dpi", 40], capsys)
    assert code == 0
    assert err.strip() == f"landscape plot2d: warning: {path}: 137 of 273 points computed; the others are left blank"
    path = surface_1d(tmp_path, done=[0, 1, 2, 10, 20])
    code, out, err = run("plot1d", [path, "--dpi", 40], capsys)
    assert code == 0 and "5 of 31 points computed" in err


def test_err_quantity_is_100_minus_accuracy(tmp_path):
    s = read_surface(surface_2d(tmp_path))
    assert twod.quantity(s, "train_err") == pytest.approx(100 - s.values["train_acc"])


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "main, argv, code, words",
    [
        ("plot1d", ["{2d}"], 3, "is a 2-D surface"),
        ("plot2d", ["{1d}"], 3, "is a 1-D surface"),
        ("plot1d", ["{1d}", "{1d}", "--labels", "only one"], 2, "got 1 labels for 2 files"),
        ("plot2d", ["{2d}", "--labels", "a", "b"], 2, "got 2 labels for 1 files"),
        ("plot2d", ["{2d}", "--vmin", "5", "--vmax", "5"], 2, "--vmin 5 must be smaller than --vmax 5"),
        ("plot2d", ["{2d}", "--vlevel", "0"], 2, "--vlevel 0: expected a positive step"),
        ("plot2d", ["{2d}", "--vlevel", "1e-6"], 2, "contour levels"),
        ("plot2d", ["{2d}", "--log", "--vmin", "0"], 2, "with --log: expected a positive value"),
        ("plot2d", ["{2d}", "--surf_name", "test_loss"], 3, "expected one of train_acc, train_loss, train_err"),
        ("plot2d", ["{empty2d}"], 3, "no computed points"),
        ("plot1d", ["{empty1d}"], 3, "no computed points"),
        ("plot1d", ["{notest}", "--split", "test"], 3, "has no test values"),
        ("plot1d", ["{1d}", "--xmin", "1", "--xmax", "-1"], 2, "--xmin 1 must be smaller than --xmax -1"),
        ("plot1d", ["{1d}", "--acc_min", "90", "--acc_max", "80"], 2, "--acc_min 90 must be smaller than --acc_max 80"),
        ("plot1d", ["{1d}", "--acc_min", "100"], 2, "--acc_min 100: expected less than 100"),
        ("plot1d", ["{1d}", "--dpi", "0"], 2, "--dpi=0"),
        ("plot1d", ["{1d}", "--out", "{missing}/fig"], 3, "does not exist"),
        ("plot2d", ["{missing}/x.h5"], 3, "does not exist"),
        ("plot2d", ["{2d}", "--format", "jpg"], 2, "invalid choice: 'jpg'"),
        ("plot1d", ["{1d}", "--split", "val"], 2, "invalid choice: 'val'"),
        ("plot1d", ["{1d}", "--log", "--linear"], 2, "not allowed with argument --log"),
        ("plot2d", ["{2d}", "--linear", "--log"], 2, "not allowed with argument --linear"),
    ],
)
def test_bad_input_gives_one_line_and_an_exit_code(tmp_path, capsys, main, argv, code, words):
    files = {
        "1d": surface_1d(tmp_path),
        "2d": surface_2d(tmp_path),
        "notest": surface_1d(tmp_path, "notest.h5", test=False),
        "empty1d": surface_1d(tmp_path, "e1.h5", done=[]),
        "empty2d": surface_2d(tmp_path, "e2.h5", done=[]),
        "missing": str(tmp_path / "missing"),
    }
    got, out, err = run(main, [a.format(**files) for a in argv], capsys)
    lines = err.strip().splitlines()
    assert got == code and len(lines) == 1, err
    assert lines[0].startswith(f"landscape {main}: error: ") and words in lines[0]


@pytest.mark.parametrize("command", ["plot1d", "plot2d"])
def test_the_scale_is_auto_unless_log_or_linear_is_given(command):
    parser = (plot_1d if command == "plot1d" else plot_2d).build_parser()
    assert (Plot1DParams if command == "plot1d" else Plot2DParams).__dataclass_fields__["log"].default == "auto"
    assert "log" not in vars(parser.parse_args(["s.h5"]))  # not given: the default, auto
    assert vars(parser.parse_args(["s.h5", "--log"]))["log"] is True
    assert vars(parser.parse_args(["s.h5", "--linear"]))["log"] is False


def test_a_decade_spanning_loss_is_drawn_on_a_log_axis_unless_linear_is_asked(tmp_path, capsys):
    deep = make_surface(tmp_path / "deep.h5", X1, None, {"train_loss": lambda a: 0.002 + 40 * a**2})
    assert run("plot1d", [deep, "--linear", "--format", "svg", "--out", str(tmp_path / "lin")], capsys)[0] == 0
    assert run("plot1d", [deep, "--format", "svg", "--out", str(tmp_path / "auto")], capsys)[0] == 0
    assert "log scale" in (tmp_path / "auto_1d.svg").read_text()  # the loss axis says so
    assert "log scale" not in (tmp_path / "lin_1d.svg").read_text()


def test_help_has_examples(capsys):
    for main in ("plot1d", "plot2d"):
        code, out, _ = run(main, ["--help"], capsys)
        assert code == 0 and "examples:" in out and "--labels" in out


def test_runs_as_a_module(tmp_path):
    path = surface_1d(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "landscape", "plot_1d", path, "--dpi", "40"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(tmp_path / "s1_1d.png")]


def test_a_file_with_coordinates_only_is_an_input_error(tmp_path, capsys):
    with h5py.File(tmp_path / "c.h5", "w") as f:
        f["xcoordinates"] = X1
    for command in ("plot1d", "plot2d"):
        code, out, err = run(command, [tmp_path / "c.h5"], capsys)
        assert code == 3 and len(err.strip().splitlines()) == 1, err
        assert "holds coordinates but no quantities" in err
