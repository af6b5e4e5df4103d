"""What a scorecard measures: every measure's key, label, whether it describes the minimum's shape, how a
function-preserving rescaling of a ReLU network acts on it, and its definition and citation.

The numbers themselves are made by ``report.measures`` (the surfaces of ``landscape surface`` and the
curvature suite of ``curvature.suite``); this module is the catalogue every table, figure and verdict
reads its words from.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..curvature import fisher_rao as fisher_rao_module
from ..curvature import noise_scale as noise_module
from ..curvature import relative_flatness as flatness_module
from ..curvature import sharpness as measures

SHARPNESS = {  # the scorecard's key of each sharpness measure of ``curvature.sharpness``
    "epsilon_sharpness": "epsilon",
    "adaptive_sharpness": "adaptive",
    "adaptive_l2_sharpness": "adaptive_l2",
    "adaptive_average": "adaptive_average",
    "m_sharpness": "m_sharpness",
    "average_rise": "average",
}


@dataclass(frozen=True)
class Measure:
    key: str
    label: str  # plain text and Markdown
    latex: str
    sharpness: bool  # a measure of the minimum's shape, which the verdict weighs; else an outcome of training
    invariant: str  # under a function-preserving rescaling of a ReLU network: "yes" (unit by unit),
    # "layer-wise" (layer k times α, layer k + 1 divided by α, not unit by unit) or "no"; tests/report/
    # test_measures_invariance.py rescales a network and checks every measure against its flag


MEASURES = (
    Measure("train_loss", "train loss", "train loss", False, "yes"),
    Measure("test_loss", "test loss", "test loss", False, "yes"),
    Measure("train_error", "train error %", r"train err.\ (\%)", False, "yes"),
    Measure("test_error", "test error %", r"test err.\ (\%)", False, "yes"),
    Measure("gap", "gap (points)", r"gap (pts)", False, "yes"),
    Measure("lambda_max", "λmax", r"$\lambda_{\max}$", True, "no"),
    Measure("trace", "trace", r"$\mathrm{tr}\,H$", True, "no"),
    Measure("relative_flatness", "relative flatness", r"$\kappa_{\mathrm{Tr}}$", True, "layer-wise"),
    Measure("fisher_rao", "Fisher–Rao norm", r"$\|\theta\|_{\mathrm{fr}}$", True, "yes"),
    Measure("epsilon_sharpness", "ε-sharpness", r"$\epsilon$-sharpness", True, "no"),
    Measure("adaptive_sharpness", "adaptive sharpness", "adaptive", True, "yes"),
    Measure("adaptive_l2_sharpness", "adaptive ℓ2 sharpness", r"adaptive $\ell_2$", True, "yes"),
    Measure("adaptive_average", "average adaptive", "avg.\\ adaptive", True, "yes"),
    Measure("m_sharpness", "m-sharpness", "$m$-sharpness", True, "yes"),
    Measure("average_rise", "average rise", "avg.\\ rise", True, "layer-wise"),
    Measure("surface_rise", "2-D rise", "2-D rise", True, "layer-wise"),
    Measure("noise_scale", "noise scale B", r"$B_{\mathrm{simple}}$", False, "no"),
)
BY_KEY = {m.key: m for m in MEASURES}
_DEFINED = {  # the measures not defined in their own modules
    "train_loss": ("the mean loss over the training set at the weights", ""),
    "test_loss": ("the mean loss over the test set at the weights", ""),
    "train_error": ("the share of training samples misclassified, in %", ""),
    "test_error": ("the share of test samples misclassified, in %", ""),
    "gap": ("test error − train error, in points", ""),
    "lambda_max": ("the largest eigenvalue of the Hessian of the training loss (Lanczos)", "Keskar et al. 2017"),
    "trace": ("tr H, the Hessian's trace (Hutchinson's estimator)", "Hutchinson 1990"),
    "relative_flatness": (flatness_module.DEFINITION, flatness_module.CITATION),
    "fisher_rao": (fisher_rao_module.DEFINITION, fisher_rao_module.CITATION),
    "noise_scale": (noise_module.DEFINITION, noise_module.CITATION),
    "surface_rise": (
        "the mean rise of the training loss over the 2-D filter-normalized grid's points within radius",
        "Li et al. 2018 (directions)",
    ),
}


def definition(key: str) -> tuple[str, str]:
    """(definition, citation) of the scorecard measure ``key``: every value is reported with both."""
    if key in SHARPNESS:
        return measures.DEFINITIONS[SHARPNESS[key]]
    return _DEFINED[key]


__all__ = ["Measure", "MEASURES", "BY_KEY", "SHARPNESS", "definition"]
