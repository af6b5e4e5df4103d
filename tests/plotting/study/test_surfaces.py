"""The figures drawn from each network's files: one network per batch size (the lowest seed of the first
recipe), the random and the top-eigenvector 1-D curves, the spectral densities per recipe; a figure whose
files are missing is left out, not drawn empty."""

from __future__ import annotations

import numpy as np

from landscape.curvature.density import Density
from landscape.plotting.palette import batch_colours
from landscape.plotting.study.surfaces import (
    densities,
    representatives,
    write_density,
    write_hessian_1d,
    write_surfaces,
)

from synthetic_study import BATCHES, results, run_folders

COLOURS = batch_colours(BATCHES)


def test_one_network_per_batch_size_the_lowest_seed_of_the_first_recipe_not_the_control():
    found = results(recipes=("naive", "linear"), seeds=(2, 1), control=True)
    shown = representatives(found)
    assert {b: r["run"]["name"] for b, r in shown.items()} == {b: f"naive_b{b}_s1" for b in BATCHES}
    assert all(r["run"]["recipe"] == "linear" for r in representatives(found, "linear").values())
    rescaled_first = [found[-1], *found[:-1]]  # the control listed first is still no arm
    assert representatives(rescaled_first)[16]["run"]["recipe"] == "naive"


def test_the_random_and_the_eigenvector_curves_side_by_side(tmp_path):
    found = results()
    run_folders(str(tmp_path), found)
    paths = write_hessian_1d(found, str(tmp_path), str(tmp_path / "h"), COLOURS, ("png", "pdf"), 40)
    assert paths == [str(tmp_path / "h.png"), str(tmp_path / "h.pdf")]
    paths = write_surfaces(found, str(tmp_path), str(tmp_path / "s"), COLOURS, ("png",), 40)
    assert [p.rsplit("/", 1)[1] for p in paths] == [
        "s_1d.png",
        "s_train_loss_2dcontour.png",
        "s_train_loss_2dcontourf.png",
    ]


def test_no_eigenvector_file_no_figure(tmp_path):
    found = results()
    run_folders(str(tmp_path), found, hessian=False)
    assert write_hessian_1d(found, str(tmp_path), str(tmp_path / "h"), COLOURS, ("png",), 40) == []
    assert not (tmp_path / "h.png").exists()
    assert write_hessian_1d(found, str(tmp_path / "elsewhere"), str(tmp_path / "h"), COLOURS, ("png",), 40) == []


def record(scale: float) -> dict:
    nodes = np.array([[-0.1, 0.0, 0.3, 2.0], [-0.1, 0.01, 0.3, 2.1]]) * scale
    weights = np.full((2, 4), 0.25)
    return {**Density(nodes, weights, 4, 2, 8).record(), "dtype": "float32"}


def test_densities_one_panel_per_recipe_one_curve_per_batch_size(tmp_path):
    found = results(recipes=("naive", "linear"))
    for r in found:
        r["details"]["density"] = record(r["run"]["batch_size"] / 16)
    panels = densities(found)
    assert list(panels) == ["naive", "linear"]
    assert list(panels["naive"]) == [f"batch {b}, seed 0" for b in BATCHES]
    assert np.allclose(panels["linear"]["batch 1024, seed 0"].nodes, np.array(record(64)["nodes"]))
    paths = write_density(found, str(tmp_path / "d"), COLOURS, ("png",), 40)
    assert paths == [str(tmp_path / "d.png")] and (tmp_path / "d.png").stat().st_size > 0


def test_no_density_no_figure(tmp_path):
    assert write_density(results(), str(tmp_path / "d"), COLOURS, ("png",), 40) == []
    assert not (tmp_path / "d.png").exists()
