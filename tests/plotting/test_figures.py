"""The figures ``landscape surface --plot`` draws from the surface file alone: a 1-D file's curve, a 2-D
file's three maps, each named after the file, drawn with the scale and levels asked for (the figures'
own looks: tests/plotting/test_oned.py, tests/plotting/test_twod.py)."""

import numpy as np
import pytest

from landscape.plotting import figures

from synthetic_study import X, surface


@pytest.fixture
def drawn(monkeypatch):
    """The matplotlib figures ``draw_surface_figures`` wrote, kept as they were drawn."""
    kept = []

    def keeping(write):
        def wrapper(*args, **kwargs):
            paths, made = write(*args, **kwargs)
            kept.extend(made if isinstance(made, list) else [made])
            return paths, made

        return wrapper

    monkeypatch.setattr(figures, "write_1d", keeping(figures.write_1d))
    monkeypatch.setattr(figures, "write_2d", keeping(figures.write_2d))
    return kept


def test_a_1d_file_gives_one_curve_named_after_it_on_the_scale_asked_for(tmp_path, drawn):
    path = surface(str(tmp_path / "line.h5"), lambda a: 0.001 + 40 * a**2)  # 0.001 to 40: decades
    assert figures.draw_surface_figures(path, log=True, formats=("png", "pdf"), dpi=40) == [
        str(tmp_path / "line_1d.png"),
        str(tmp_path / "line_1d.pdf"),
    ]
    assert (tmp_path / "line_1d.png").stat().st_size > 0 and (tmp_path / "line_1d.pdf").stat().st_size > 0
    (fig,) = drawn
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    curve = next(line for line in ax.lines if len(line.get_xdata()) == len(X))
    assert np.array_equal(curve.get_xdata(), X) and np.allclose(curve.get_ydata(), 0.001 + 40 * X**2)
    figures.draw_surface_figures(path, log=False, dpi=40)
    assert drawn[1].axes[0].get_yscale() == "linear"


def test_a_2d_file_gives_its_three_maps_with_the_levels_asked_for(tmp_path, drawn):
    path = surface(str(tmp_path / "plane.h5"), lambda a, b: 1 + a**2 + b**2, y=X)
    paths = figures.draw_surface_figures(path, vmin=1.0, vmax=2.0, vlevel=0.25, dpi=40)
    assert paths == [
        str(tmp_path / f"plane_train_loss_{kind}.png") for kind in ("2dcontour", "2dcontourf", "3dsurface")
    ]
    assert all((tmp_path / p).stat().st_size > 0 for p in paths)
    levels = [list(c.levels) for c in drawn[0].axes[0].collections]
    assert [1.0, 1.25, 1.5, 1.75, 2.0] in levels  # the reference code's arange(vmin, vmax, vlevel)
    assert [2.0, np.inf] in levels and "grey: above 2" in drawn[0].texts[0].get_text()  # the rest: one grey
    assert drawn[2].axes[0].name == "3d"
