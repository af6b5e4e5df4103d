"""One colour per batch size, ordered from dark to light, the same whatever order the sizes come in."""

from __future__ import annotations

from matplotlib.colors import rgb_to_hsv

from landscape.plotting.palette import SEED_MARKERS, batch_colours, recipe_styles, seed_markers


def test_each_batch_size_has_its_own_colour_darkest_for_the_smallest():
    colours = batch_colours([1024, 16, 128, 16])
    assert list(colours) == [16, 128, 1024]
    assert len(set(colours.values())) == 3
    brightness = [rgb_to_hsv(colours[b][:3])[2] for b in (16, 128, 1024)]
    assert brightness == sorted(brightness)  # dark for small batches, light for large
    assert batch_colours([128, 1024, 16]) == colours  # the same mapping from any listing of the study


def test_seeds_get_markers_in_order_and_recipes_line_and_fill_styles():
    assert seed_markers([2, 0, 1, 0]) == {0: SEED_MARKERS[0], 1: SEED_MARKERS[1], 2: SEED_MARKERS[2]}
    styles = recipe_styles(["naive", "linear", "naive"])
    assert list(styles) == ["naive", "linear"]
    assert styles["naive"] == ("-", "full", "filled") and styles["linear"] == ("--", "none", "hollow")
