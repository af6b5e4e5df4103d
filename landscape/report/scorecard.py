"""A scorecard: every measure of every run, their mean ± standard deviation per recipe and batch size,
their rank correlation with batch size and with the generalization gap, and the verdict in words.

The verdict weighs the sharpness measures (``Measure.sharpness``): a measure *separates the batch
sizes* when Kendall's τ between it and the batch size, over all runs, has a permutation p-value
below ``alpha``; it *tracks the gap* when the same holds against the gap (test error minus train
error).  A measure that does neither is named as such, with its numbers: "no" is an answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .measures import MEASURES
from .stats import Correlation, correlation, mean_sd

AGAINST = ("batch_size", "gap")


@dataclass(frozen=True)
class Group:
    recipe: str
    batch_size: int
    seeds: list[int]
    stats: dict[str, tuple[float, float, int]]  # measure -> (mean, sd, n)


@dataclass(frozen=True)
class Scorecard:
    runs: list[dict]  # name, recipe, batch_size, seed, values, errors
    groups: list[Group]
    correlations: dict[str, dict[str, Correlation]]  # measure -> {"batch_size": ..., "gap": ...}
    alpha: float
    verdict: str
    settings: dict = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # runs of the manifest not finished, so not measured

    def record(self) -> dict:
        return {
            "runs": self.runs,
            "groups": [
                {
                    "recipe": g.recipe,
                    "batch_size": g.batch_size,
                    "seeds": g.seeds,
                    **{f"{k}_{part}": v for k, s in g.stats.items() for part, v in zip(("mean", "sd", "n"), s)},
                }
                for g in self.groups
            ],
            "correlations": {k: {a: c.record() for a, c in v.items()} for k, v in self.correlations.items()},
            "alpha": self.alpha,
            "verdict": self.verdict,
            "settings": self.settings,
            "left_out": self.left_out,
        }


def build(
    results: list[dict],
    alpha: float = 0.05,
    permutations: int = 10000,
    seed: int = 0,
    settings: dict | None = None,
    left_out: list[str] | None = None,
) -> Scorecard:
    """The scorecard of ``results`` (``measure_run``'s dicts, one per run)."""
    runs = [
        {
            "name": r["run"]["name"],
            "recipe": r["run"]["recipe"],
            "batch_size": r["run"]["batch_size"],
            "seed": r["run"]["seed"],
            "values": r["values"],
            "errors": r.get("errors", {}),
        }
        for r in results
    ]
    groups = []
    for key in dict.fromkeys((r["recipe"], r["batch_size"]) for r in runs):
        members = [r for r in runs if (r["recipe"], r["batch_size"]) == key]
        groups.append(
            Group(
                key[0],
                key[1],
                [r["seed"] for r in members],
                {m.key: mean_sd([r["values"][m.key] for r in members]) for m in MEASURES},
            )
        )
    correlations = {}
    for m in MEASURES:
        y = [r["values"][m.key] for r in runs]
        correlations[m.key] = {
            "batch_size": correlation([r["batch_size"] for r in runs], y, permutations, seed),
            "gap": correlation([r["values"]["gap"] for r in runs], y, permutations, seed),
        }
    card = Scorecard(runs, groups, correlations, alpha, "", settings or {}, list(left_out or []))
    return Scorecard(
        runs, groups, correlations, alpha, verdict(card, permutations, seed), settings or {}, list(left_out or [])
    )


def _numbers(c: Correlation) -> str:
    return f"τ = {c.tau:+.2f}, p = {c.p_value:.2g}"


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def smallest_p(batch_sizes: list[int], permutations: int = 10000, seed: int = 0) -> float:
    """The p-value of a measure in perfect order with the batch sizes: no measure can do better."""
    x = np.asarray(batch_sizes)
    return correlation(x, np.argsort(np.argsort(x, kind="stable")), permutations, seed).p_value


def verdict(card: Scorecard, permutations: int = 10000, seed: int = 0) -> str:
    """Which sharpness measures separate the batch sizes and which track the gap, with τ and p."""
    batches = sorted({r["batch_size"] for r in card.runs})
    if len(batches) < 2:
        return (
            f"All {len(card.runs)} runs have batch size {batches[0]}: there is no batch size to compare "
            "(the table gives each measure's spread over seeds)."
        )
    measures = [m for m in MEASURES if m.sharpness]
    a = card.alpha
    sentences = []
    best = smallest_p([r["batch_size"] for r in card.runs], permutations, seed)
    too_few = best >= a
    if too_few:
        sentences.append(
            f"The smallest p-value any order of {len(card.runs)} runs can reach is {best:.2g}, not below "
            f"{a:g}: more seeds or batch sizes are needed before any trend with batch size can be shown."
        )
    recipes = sorted({r["recipe"] for r in card.runs})
    if len(recipes) > 1:
        sentences.append(f"τ pools the runs of all {len(recipes)} recipes ({', '.join(recipes)}).")
    away = [r["name"] for r in card.runs if r["values"].get("train_error", 0) > 1.0]
    if away:
        sentences.append(
            f"Caution: {len(away)} of {len(card.runs)} runs have a training error above 1 % "
            f"({', '.join(away[:4])}{', …' if len(away) > 4 else ''}): they are not at a minimum, and "
            "sharpness there is not that of a minimum."
        )
    err = card.correlations["test_error"]["batch_size"]
    if all(math.isnan(r["values"].get("test_error", math.nan)) for r in card.runs):
        sentences.append("The data set has no test set: there is no test error and no gap to compare.")
    elif not math.isnan(err.tau):
        if err.p_value < a:
            sentences.append(f"Test error {'rises' if err.tau > 0 else 'falls'} with batch size ({_numbers(err)}).")
        elif too_few:
            sentences.append(
                f"Test error {'rises' if err.tau > 0 else 'falls' if err.tau < 0 else 'stays'} with "
                f"batch size in these runs ({_numbers(err)}), which so few runs cannot confirm."
            )
        else:
            sentences.append(f"Test error does not change with batch size at p < {a:g} ({_numbers(err)}).")

    def named(pairs) -> str:
        return _listed([f"{m.label} ({_numbers(c)})" for m, c in pairs])

    def ranked(against: str) -> tuple[list, list]:
        """The measures with a τ against ``against``: those with p < alpha, and the others."""
        scored = [(m, card.correlations[m.key][against]) for m in measures]
        scored = [(m, c) for m, c in scored if not math.isnan(c.tau)]
        return [(m, c) for m, c in scored if c.p_value < a], [(m, c) for m, c in scored if c.p_value >= a]

    yes, no = ranked("batch_size")
    if not (yes or no):
        sentences.append("No sharpness measure can be ranked against the batch sizes (too few runs with values).")
    elif yes:
        up, down = [(m, c) for m, c in yes if c.tau > 0], [(m, c) for m, c in yes if c.tau < 0]
        parts = ([f"larger at large batch: {named(up)}"] if up else []) + (
            [f"smaller at large batch: {named(down)}"] if down else []
        )
        sentences.append(
            f"Measures that separate the batch sizes (Kendall τ with batch size, permutation "
            f"p < {a:g}) — {'; '.join(parts)}."
        )
    else:
        sentences.append(f"No sharpness measure separates the batch sizes at p < {a:g}.")
    if no:
        sentences.append(f"Not separating them: {named(no)}.")

    yes, no = ranked("gap")
    if yes:
        sentences.append(
            f"Tracking the generalization gap across runs: {named(yes)}"
            + (f"; not tracking it: {named(no)}." if no else ".")
        )
    elif no:
        sentences.append(f"No sharpness measure tracks the generalization gap at p < {a:g}: {named(no)}.")
    return " ".join(sentences)


__all__ = ["Group", "Scorecard", "build", "verdict", "AGAINST"]
