"""One colour per batch size, one marker per seed, one line and fill style per recipe: the same in every
figure of a report, so a reader who learnt "orange is batch 1024" on one figure reads the next at a glance.

Batch size is ordered, so its colours are too: evenly spaced steps of plasma (perceptually uniform and
ordered in lightness, hence legible to colour-blind readers and in greyscale), dark blue for the smallest
batch to orange for the largest.  Plasma's pale yellow end is left out: it vanishes on white.  The steps
are spaced by rank, not by the batch's value, so that 16, 32 and 1024 are three distinct colours.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps

BATCH_CMAP = colormaps["plasma"]
DARKEST, LIGHTEST = 0.0, 0.82  # the part of the map used: its yellow end is invisible on white
SEED_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p")
RECIPE_LINES = ("-", "--", ":", "-.")
RECIPE_FILLS = ("full", "none", "left", "bottom", "right", "top")  # markers: filled, hollow, half ...
FILL_WORDS = ("filled", "hollow", "left half", "bottom half", "right half", "top half")  # ... in words
NEUTRAL = "0.25"  # lines that join values of several batch sizes (a seed's, a recipe's means)


def batch_colours(batches) -> dict[int, tuple]:
    """Each of ``batches`` (any order, repeats allowed) -> its RGBA colour, the smallest darkest."""
    ordered = sorted({int(b) for b in batches})
    steps = np.linspace(DARKEST, LIGHTEST, len(ordered)) if len(ordered) > 1 else [DARKEST]
    return {b: tuple(float(c) for c in BATCH_CMAP(s)) for b, s in zip(ordered, steps)}


def seed_markers(seeds) -> dict[int, str]:
    """Each of ``seeds`` -> its marker, in increasing order of the seeds (cycling after ten)."""
    return {s: SEED_MARKERS[k % len(SEED_MARKERS)] for k, s in enumerate(sorted(set(seeds)))}


def recipe_styles(recipes) -> dict[str, tuple[str, str, str]]:
    """Each recipe, in the order given -> (line style, marker fill style, that fill in words)."""
    order = list(dict.fromkeys(recipes))
    fills = len(RECIPE_FILLS)
    return {
        r: (RECIPE_LINES[k % len(RECIPE_LINES)], RECIPE_FILLS[k % fills], FILL_WORDS[k % fills])
        for k, r in enumerate(order)
    }


__all__ = ["batch_colours", "seed_markers", "recipe_styles", "NEUTRAL", "SEED_MARKERS"]
