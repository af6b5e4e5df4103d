"""``--style paper|talk``: figure widths for a paper's columns, fonts that match, TrueType fonts in PDFs,
SVG text kept as text, colour-blind-safe curves."""

import re

import pytest

from landscape.errors import UsageError
from landscape.plotting.look import OKABE_ITO, look

from conftest import landscape


def png_size(path):
    data = open(path, "rb").read(24)
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory):
    import torch

    from landscape.io.checkpoint import save
    from landscape.models import build_model

    folder = tmp_path_factory.mktemp("look")
    torch.manual_seed(0)
    save(build_model("digits_mlp"), str(folder / "m.pt"))
    for name, grid in (("one", ["--x=-1:1:5"]), ("two", ["--x=-1:1:5", "--y=-1:1:5"])):
        assert (
            landscape(
                "surface",
                "--model",
                "digits_mlp",
                "--model_file",
                folder / "m.pt",
                *grid,
                "--train_subset",
                "60",
                "--threads",
                "1",
                "--quiet",
                "--surf_file",
                folder / f"{name}.h5",
            )
            == 0
        )
    return folder


def test_paper_figures_fit_a_column_and_two_columns(surfaces, capsys):
    f = surfaces
    assert landscape("plot1d", f / "one.h5", "--style", "paper", "--out", f / "p1", "--format", "png", "pdf") == 0
    column, _ = png_size(f / "p1_1d.png")
    assert 0.8 * 3.4 * 300 < column <= 1.05 * 3.4 * 300  # one column at 300 dpi (tight bounding box)
    assert (
        landscape("plot2d", f / "two.h5", f / "two.h5", "--style", "paper", "--kind", "contour", "--out", f / "p2") == 0
    )
    width, _ = png_size(f / "p2_train_loss_2dcontour.png")
    assert 0.8 * 7.0 * 300 < width <= 1.05 * 7.0 * 300  # two panels: two columns
    pdf = open(f / "p1_1d.pdf", "rb").read()
    assert b"/FontFile2" in pdf and b"/Type3" not in pdf  # TrueType embedded, no Type 3 fonts
    assert landscape("plot1d", f / "one.h5", "--style", "talk", "--out", f / "t1") == 0
    assert png_size(f / "t1_1d.png")[0] / 150 > 1.5 * column / 300  # a talk figure is larger (inches)
    assert landscape("plot1d", f / "one.h5", "--format", "svg", "--out", f / "s1") == 0
    svg = open(f / "s1_1d.svg").read()
    assert re.search(r"<text[^>]*>", svg)  # text stays text in SVG


def test_paper_curves_are_colour_blind_safe():
    assert [c["color"] for c in look("paper").rc()["axes.prop_cycle"]] == list(OKABE_ITO)
    assert look("paper").rc()["pdf.fonttype"] == 42 and look("default").rc()["pdf.fonttype"] == 42
    with pytest.raises(UsageError, match="--style poster: expected one of default, paper, talk"):
        look("poster")


def test_text_from_files_and_flags_is_plain_unless_mathtext_is_asked_for(tmp_path, capsys):
    """A $ in a file name, a label or a title is a dollar sign: $\\undefinedcmd$ draws as typed instead of
    failing inside matplotlib; --mathtext typesets it, and mathtext that does not parse is one line."""
    from tests.workflows.test_plots import surface_1d

    path = surface_1d(tmp_path, "cost$\\undefinedcmd$.h5")
    hostile = ["--title", "$\\undefinedcmd$ costs 5", "--out", tmp_path / "f"]
    assert landscape("plot1d", path, *hostile) == 0, capsys.readouterr().err
    assert (tmp_path / "f_1d.png").stat().st_size > 0
    assert landscape("plot1d", path, "--title", "$\\alpha_1$", "--mathtext", "--out", tmp_path / "g") == 0
    capsys.readouterr()
    assert landscape("plot1d", path, *hostile, "--mathtext") == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--mathtext: a title or label is not valid mathtext" in err


def test_plain_text_leaves_the_axis_formatters_their_mathtext():
    from matplotlib.figure import Figure

    from landscape.plotting.look import plain_text

    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([1, 10, 1000], [1e-5, 2e-5, 3e-5])
    ax.set_xscale("log")
    ax.set_title("$x$ of run $1")
    ax.set_ylabel("$\\lambda$")
    plain_text(fig)
    assert not ax.title.get_parse_math() and not ax.yaxis.label.get_parse_math()
    assert all(t.get_parse_math() for t in ax.xaxis.get_ticklabels(which="both"))
    assert ax.yaxis.get_offset_text().get_parse_math()
    fig.canvas.draw()  # the log axis's 10^k labels still typeset
    assert any("10^" in t.get_text() for t in ax.xaxis.get_ticklabels())


def test_mathtext_in_labels_and_a_plot_training_title_is_plain_text(tmp_path, capsys):
    from tests.workflows.test_plots import surface_2d

    path = surface_2d(tmp_path, "s$\\undefinedcmd$.h5")
    assert landscape("plot2d", path, "--labels", "$\\undefinedcmd$", "--out", tmp_path / "p", "--dpi", "40") == 0
    assert landscape("plot2d", path, "--labels", "$\\undefinedcmd$", "--out", tmp_path / "q", "--mathtext") == 3
    assert "--mathtext: a title or label is not valid mathtext" in capsys.readouterr().err


def test_plot_training_lays_out_a_mathtext_title_as_plain_text(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    assert landscape("sweep", "--out", sweep, "--model", "digits_mlp", "--dataset", "digits", "--epochs", "1",
                     "--batch_sizes", "256", "--threads", "1") == 0  # fmt: skip
    title = ["--title", "$\\undefinedcmd$ run", "--format", "png"]
    assert landscape("plot-training", sweep, *title, "--out", tmp_path / "t") == 0  # its layout measures text
    capsys.readouterr()
    assert landscape("plot-training", sweep, *title, "--out", tmp_path / "u", "--mathtext") == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--mathtext: a title or label is not valid mathtext" in err
