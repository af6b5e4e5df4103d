"""The report's figures drawn from each network's own files in ``<out>/runs/<run>/``: the random 1-D and
2-D surfaces, the 1-D surface along the top Hessian eigenvector beside the random one, and the Hessian's
spectral densities.

One network stands for each batch size (``representatives``): the lowest seed of a recipe (the first
recipe for the surfaces; each recipe its own panel for the densities).  The rescaling control's runs are
no arm of the study and are left out.  Colours are one per batch size (``plotting.palette``), the same as
in the scorecard's figures.  A figure whose files are missing (a report measured before they were made)
is left out, not drawn empty.
"""

from __future__ import annotations

import math
import os

from ...io.surface_file import read
from ...report.measures import HESSIAN_1D
from .. import hessian_1d, spectrum
from ..levels import Style2D
from ..oned import Style1D, write_1d
from ..twod import write_2d
from .by_batch import RESCALED

RANDOM_1D, RANDOM_2D = "surface_1d.h5", "surface_2d.h5"


def studied(results: list[dict]) -> list[dict]:
    """The results of the study's arms (the rescaling control's left out)."""
    return [r for r in results if not r.get("rescaled") and r["run"]["recipe"] != RESCALED]


def representatives(results: list[dict], recipe: str | None = None) -> dict[int, dict]:
    """Batch size -> the result of the lowest seed of ``recipe`` (default: the first recipe), by batch."""
    mine = studied(results)
    recipe = recipe if recipe is not None else (mine[0]["run"]["recipe"] if mine else None)
    chosen = {}
    for result in sorted(mine, key=lambda r: (r["run"]["batch_size"], r["run"]["seed"])):
        if result["run"]["recipe"] == recipe:
            chosen.setdefault(result["run"]["batch_size"], result)
    return chosen


def label(result: dict, results: list[dict]) -> str:
    run = result["run"]
    several = len({r["run"]["recipe"] for r in studied(results)}) > 1
    return f"batch {run['batch_size']}, seed {run['seed']}" + (f" ({run['recipe']})" if several else "")


def folder(out: str, result: dict) -> str:
    return os.path.join(out, "runs", result["run"]["name"])


def write_surfaces(results, out: str, stem: str, colours: dict, formats, dpi: int, look=None) -> list[str]:
    """``<stem>_1d`` (loss and error along a random direction) and ``<stem>_train_loss_2dcontour[f]``."""
    shown = representatives(results)
    present = {
        b: r
        for b, r in shown.items()
        if all(os.path.isfile(os.path.join(folder(out, r), f)) for f in (RANDOM_1D, RANDOM_2D))
    }
    if not present:
        return []
    labels = [label(r, results) for r in present.values()]
    one = [read(os.path.join(folder(out, r), RANDOM_1D)) for r in present.values()]
    two = [read(os.path.join(folder(out, r), RANDOM_2D)) for r in present.values()]
    recipe = next(iter(present.values()))["run"]["recipe"]
    title = f"(a) {recipe}, final weights, the lowest seed of each batch size: along a random direction"
    style = Style1D(error=True, title=title)
    paths = write_1d(one, stem, labels, formats, dpi, style, look, colours=[colours[b] for b in present])[0]
    labels = [f"({letter}) {text}, final weights" for letter, text in zip("abcdefgh", labels)]
    # One set of levels for every panel, spaced by factors (log, the default) where the loss spans
    # decades: basins of 0.001 and of 1 both show, whatever the loss and the network.
    paths += write_2d(two, stem, "train_loss", ("contour", "contourf"), labels, formats, dpi, Style2D(), look=look)[0]
    return paths


def write_hessian_1d(results, out: str, stem: str, colours: dict, formats, dpi: int, look=None) -> list[str]:
    """``<stem>.<fmt>``: the random and the top-eigenvector 1-D curves side by side; nothing without them."""
    pairs = hessian_pairs(results, out)
    if not pairs:
        return []
    return hessian_1d.write(
        [random for _, random, _ in pairs],
        [along for _, _, along in pairs],
        stem,
        [f"{label(result, results)}, final weights" for result, _, _ in pairs],
        [colours[result["run"]["batch_size"]] for result, _, _ in pairs],
        [hessian_detail(result).get("eigenvalue", math.nan) for result, _, _ in pairs],
        str(hessian_detail(pairs[0][0]).get("scale", "unit")),
        formats,
        dpi,
        look,
    )


def hessian_detail(result: dict) -> dict:
    """``details.hessian_1d`` of a result: file, eigenvalue, scale (empty when not measured)."""
    return (result.get("details") or {}).get("hessian_1d") or {}


def hessian_pairs(results, out: str) -> list[tuple]:
    """(result, random surface, eigenvector surface) per batch size (``representatives``) where both
    files exist."""
    found = []
    for result in representatives(results).values():
        names = (RANDOM_1D, hessian_detail(result).get("file", HESSIAN_1D))
        paths = [os.path.join(folder(out, result), name) for name in names]
        if all(os.path.isfile(p) for p in paths):
            found.append((result, read(paths[0]), read(paths[1])))
    return found


def densities(results) -> dict[str, dict[str, object]]:
    """Recipe -> {label -> ``Density``}: the lowest seed of each batch size that has one, by batch."""
    panels = {}
    for recipe in dict.fromkeys(r["run"]["recipe"] for r in studied(results)):
        for result in representatives(results, recipe).values():
            record = (result.get("details") or {}).get("density")
            if record:
                run = result["run"]
                panels.setdefault(recipe, {})[f"batch {run['batch_size']}, seed {run['seed']}"] = spectrum.from_record(
                    record
                )
    return panels


def write_density(results, stem: str, colours: dict, formats, dpi: int, look=None) -> list[str]:
    """``<stem>.<fmt>``: one panel per recipe, one curve per batch size; nothing when no run has a density."""
    panels = densities(results)
    if not panels:
        return []
    shown = sorted(
        (r["run"]["batch_size"], r["run"]["seed"])
        for recipe in panels
        for r in representatives(results, recipe).values()
    )
    by_label = {f"batch {b}, seed {seed}": colours[b] for b, seed in shown}  # the legend by batch size
    return spectrum.write_panels(panels, stem, by_label, formats, dpi, look)


__all__ = ["representatives", "write_surfaces", "write_hessian_1d", "write_density", "densities", "hessian_pairs"]
