"""A scorecard: every measure of every run, their mean ± standard deviation per arm (recipe) and batch
size, one flat record per statistical test, and the verdict in words (``verdict``).

Each arm is tested on its own (its runs share a recipe), on the values of its compared networks: at the
arm's matched training loss where its runs were measured there (``matching``; ``basis="matched_loss"``),
else at their final weights (``basis="final"``).  For each measure of an arm:

- ``against="batch_size"``, ``method="kendall_within_seeds"``: Kendall's τ-b with batch size, p-value by
  permutation within seeds (``stats.trend``);
- ``against="batch_size"``, ``method="friedman_within_seeds"``: any difference among batch sizes,
  monotone or not (``stats.friedman``; with 3 batch sizes or more);
- ``against="gap_within_batch"``, ``method="kendall_within_batch"``: τ with the generalization gap over
  pairs of runs at the same batch size (``stats.within``), for the sharpness measures: a measure that
  "tracks the gap" only across batch sizes may be the batch size measured twice;
- on the batch-size records, the mean difference largest − smallest batch paired by seed, its 95 %
  paired t-interval and the minimum detectable difference at 80 % power (``effects``).

Where an arm was compared at matched loss, each endpoint's τ at the final weights is added as an
exploratory test (``basis="final"``).

The *endpoints* are declared before looking (by default test error, λmax and adaptive sharpness): their
batch-size tests, over every arm, form the family of Holm's adjustment; every other test is exploratory,
Holm-adjusted over the exploratory family (``p_holm`` of either family).  Each endpoint test is also
recomputed leaving out one seed at a time (``stable``: every such test reaches the same conclusion, with
the test's own Holm factor; ``loo_changed``: the seeds whose removal changes it).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..errors import ConfigError
from . import effects, rescaling, stats
from .catalogue import BY_KEY, MEASURES, definition
from .matching import has_matched, values_of
from .measures import flags
from .stats import ANY, GAP, TREND, mean_sd
from .verdict import verdict

DEFAULT_ENDPOINTS = ("test_error", "lambda_max", "adaptive_sharpness")


def endpoints_of(value) -> tuple[str, ...]:
    """The declared endpoints from a comma-separated string or a list of them (each may hold commas),
    checked against the measures' keys."""
    given = [value] if isinstance(value, str) else list(value or ())
    keys = [k.strip() for item in given for k in str(item).split(",") if k.strip()]
    if not keys:
        raise ConfigError("endpoints", value, f"one or more of {', '.join(BY_KEY)}, comma-separated")
    for key in keys:
        if key not in BY_KEY:
            raise ConfigError("endpoints", key, f"measure keys from {', '.join(BY_KEY)}, comma-separated")
    return tuple(dict.fromkeys(keys))


@dataclass(frozen=True)
class Test:
    """One test, flat: what was tested against what, how, and its numbers (NaN: not computed)."""

    arm: str
    measure: str
    against: str  # batch_size or gap_within_batch
    method: str  # TREND, ANY or GAP
    tau: float  # Kendall's τ (NaN for Friedman)
    statistic: float  # τ, or Friedman's χ²
    p_value: float  # by permutation within blocks (seeds; batch sizes for GAP)
    p_holm: float  # Holm-adjusted over the endpoints' batch-size tests; NaN for exploratory tests
    endpoint: bool
    difference: float  # mean over seeds of value(largest batch) - value(smallest batch)
    ci_low: float  # ... its 95 % paired bootstrap interval
    ci_high: float
    mde: float  # ... the smallest such difference detectable at 80 % power with these seeds
    pairs: int  # seeds with both the largest and the smallest batch
    small: int | None  # the smallest and largest batch size of the arm
    large: int | None
    runs: int  # runs in the test
    permutations: int
    exact: bool
    basis: str  # "final" or "matched_loss" (the measure's _matched values)
    stable: bool | None = None  # an endpoint test: the same conclusion leaving out any one seed
    loo_changed: tuple[int, ...] = ()  # ... the seeds whose removal changes it

    def record(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Group:
    recipe: str
    batch_size: int
    seeds: list[int]
    stats: dict[str, tuple[float, float, int]]  # measure -> (mean, sd, n)


@dataclass(frozen=True)
class Scorecard:
    runs: list[dict]  # name, recipe, batch_size, seed, values, errors, lambda_max_residual, lambda_max_converged
    groups: list[Group]
    tests: list[Test]
    endpoints: tuple[str, ...]
    alpha: float
    verdict: str
    settings: dict = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # runs of the manifest not finished, so not measured
    permutations: int = 10000
    seed: int = 0
    rescaling: list[dict] = field(default_factory=list)  # the rescaling control (report.rescaling), if any

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
            "measures": [
                {
                    "key": m.key,
                    "label": m.label,
                    "definition": definition(m.key)[0],
                    "citation": definition(m.key)[1],
                    "invariant_under_rescaling": m.invariant,
                    "sharpness": m.sharpness,
                }
                for m in MEASURES
            ],
            "endpoints": list(self.endpoints),
            "exploratory": [m.key for m in MEASURES if m.key not in self.endpoints],
            "tests": [t.record() for t in self.tests],
            "alpha": self.alpha,
            "verdict": self.verdict,
            "settings": self.settings,
            "left_out": self.left_out,
            "rescaling_control": self.rescaling,
        }

    def arms(self) -> list[str]:
        """The recipes compared across batch sizes (the rescaling control's runs are not an arm)."""
        return list(dict.fromkeys(r["recipe"] for r in self.runs if not r.get("control")))

    def test(self, arm: str, measure: str, method: str = TREND, basis: str | None = None) -> Test | None:
        """The test of ``measure`` in ``arm`` by ``method``: at the arm's compared networks (the first), or
        at ``basis`` (``final``: an endpoint's exploratory row where the arm is compared at matched loss)."""
        return next(
            (
                t
                for t in self.tests
                if (t.arm, t.measure, t.method) == (arm, measure, method) and basis in (None, t.basis)
            ),
            None,
        )

    def confirmatory(self) -> list[Test]:
        """The endpoints' batch-size tests: the family of Holm's adjustment."""
        return [t for t in self.tests if t.endpoint and t.against == "batch_size"]


def _run(result: dict) -> dict:
    eigen = (result.get("details") or {}).get("lambda_max") or {}
    residuals = eigen.get("residuals") or [math.nan]
    return {
        "name": result["run"]["name"],
        "recipe": result["run"]["recipe"],
        "batch_size": result["run"]["batch_size"],
        "seed": result["run"]["seed"],
        "values": dict(result["values"]),
        "errors": result.get("errors", {}),
        "lambda_max_residual": float(residuals[0]),
        "lambda_max_converged": eigen.get("converged"),  # None: not recorded
        "control": bool(result.get("rescaled")),  # a rescaled copy of another run (report.rescaling)
        "matched": result.get("matched"),  # where the run was also measured at the common loss (report.matching)
        "minimum": (result["run"].get("minimum") or None),  # its training's stop rule (train.targets)
        "checkpoint": result["run"].get("checkpoint"),  # its folder holds its training's log
        "path": result.get("path") or [],  # λmax and adaptive sharpness at the levels it kept weights at
        # the measures whose search flagged its value (unconverged, no rise) at the final weights or matched loss
        "flagged": sorted(set(flags(result)) | set(result.get("matched_flags") or {})),
    }


def _tests(arm: str, runs: list[dict], endpoints, alpha: float, family: int, samples: int, seed: int) -> list[Test]:
    batch = [r["batch_size"] for r in runs]
    seeds = [r["seed"] for r in runs]
    matched = has_matched(runs)
    gap, _ = values_of(runs, "gap", matched)
    out = []
    for m in MEASURES:
        y, basis = values_of(runs, m.key, matched)
        endpoint = m.key in endpoints
        d, small, large = effects.paired_differences(batch, y, seeds)
        interval = effects.t_interval(d)
        sd = float(np.std(d, ddof=1)) if len(d) > 1 else math.nan
        level = alpha / family if endpoint and family else alpha
        shared = dict(
            arm=arm,
            measure=m.key,
            p_holm=math.nan,
            endpoint=endpoint,
            difference=float(d.mean()) if len(d) else math.nan,
            ci_low=interval.low,
            ci_high=interval.high,
            mde=effects.detectable(sd, len(d), level),
            pairs=len(d),
            small=small,
            large=large,
            basis=basis,
        )
        t = stats.trend(batch, y, seeds, samples, seed)
        out.append(Test(**shared, against="batch_size", method=TREND, tau=t.statistic, **_numbers(t)))
        yf, _ = values_of(runs, m.key, False)
        if endpoint and matched and not np.allclose(yf, y, equal_nan=True):  # at the final weights too (equal
            # steps, ...), where they are not the matched ones (a run stopped at its level holds them twice)
            df, _, _ = effects.paired_differences(batch, yf, seeds)
            ci = effects.t_interval(df)
            sdf = float(np.std(df, ddof=1)) if len(df) > 1 else math.nan
            tf = stats.trend(batch, yf, seeds, samples, seed)
            final = {**shared, "endpoint": False, "basis": "final", "difference": ci.mean, "ci_low": ci.low,
                     "ci_high": ci.high, "mde": effects.detectable(sdf, len(df), alpha), "pairs": len(df)}  # fmt: skip
            out.append(Test(**final, against="batch_size", method=TREND, tau=tf.statistic, **_numbers(tf)))
        if len(set(batch)) >= 3:
            f = stats.friedman(batch, y, seeds, samples, seed)
            out.append(Test(**shared, against="batch_size", method=ANY, tau=math.nan, **_numbers(f)))
        if m.sharpness:
            g = stats.within(gap, y, batch, samples, seed)
            no_effect = dict(difference=math.nan, ci_low=math.nan, ci_high=math.nan, mde=math.nan, pairs=0)
            out.append(
                Test(
                    **{**shared, **no_effect, "endpoint": False},
                    against="gap_within_batch",
                    method=GAP,
                    tau=g.statistic,
                    **_numbers(g),
                )
            )
    return out


def _holm_factors(p_values) -> list[float]:
    """Each p-value's factor in Holm's adjustment: m - rank (rank 0 for the smallest); NaN for none."""
    p = np.asarray(p_values, dtype=float)
    out = [math.nan] * len(p)
    tested = np.flatnonzero(np.isfinite(p))
    for rank, index in enumerate(tested[np.argsort(p[tested], kind="stable")]):
        out[index] = float(len(tested) - rank)
    return out


def shown(t: Test, p_holm: float, alpha: float) -> int:
    """A test's conclusion: +1 or -1 (a difference shown, with τ's sign; +1 for Friedman), 0 none."""
    if not p_holm < alpha:
        return 0
    return 1 if t.method == ANY or t.tau > 0 else -1


def _stability(t: Test, runs: list[dict], alpha: float, factor: float, samples: int, seed: int) -> Test:
    """``t`` recomputed leaving out each seed in turn, its p-value times ``factor`` (its Holm factor in
    the full family): stable when every one reaches ``t``'s conclusion."""
    if not math.isfinite(t.p_value) or not math.isfinite(factor):
        return t
    seeds = sorted({r["seed"] for r in runs})
    changed = []
    for left in seeds:
        kept = [r for r in runs if r["seed"] != left]
        y, _ = values_of(kept, t.measure, t.basis == "matched_loss")
        b, s = [r["batch_size"] for r in kept], [r["seed"] for r in kept]
        p = stats.trend(b, y, s, samples, seed) if t.method == TREND else stats.friedman(b, y, s, samples, seed)
        loo = replace(t, tau=p.statistic if t.method == TREND else t.tau)
        if shown(loo, min(1.0, factor * p.p_value), alpha) != shown(t, t.p_holm, alpha):
            changed.append(left)
    return replace(t, stable=not changed, loo_changed=tuple(changed))


def _numbers(p: stats.Permutation) -> dict:
    return dict(statistic=p.statistic, p_value=p.p_value, runs=p.runs, permutations=p.permutations, exact=p.exact)


def family_size(runs: list[dict], endpoints) -> int:
    """How many tests Holm adjusts over, as planned: in every arm, each endpoint's τ, and its Friedman
    test where the arm has 3 batch sizes or more (a test without a p-value, for want of values, drops
    out of the adjustment itself)."""
    arms = dict.fromkeys(r["recipe"] for r in runs)
    batches = {arm: len({r["batch_size"] for r in runs if r["recipe"] == arm}) for arm in arms}
    return sum(len(endpoints) * (2 if batches[arm] >= 3 else 1) for arm in arms)


def build(
    results: list[dict],
    alpha: float = 0.05,
    permutations: int = 10000,
    seed: int = 0,
    settings: dict | None = None,
    left_out: list[str] | None = None,
    endpoints=DEFAULT_ENDPOINTS,
) -> Scorecard:
    """The scorecard of ``results`` (``measure_run``'s dicts, one per run)."""
    endpoints = endpoints_of(endpoints)
    runs = [_run(r) for r in results]
    groups = []
    for key in dict.fromkeys((r["recipe"], r["batch_size"]) for r in runs):
        members = [r for r in runs if (r["recipe"], r["batch_size"]) == key]
        groups.append(
            Group(
                key[0],
                key[1],
                [r["seed"] for r in members],
                {m.key: mean_sd([r["values"].get(m.key, math.nan) for r in members]) for m in MEASURES},
            )
        )
    compared = [r for r in runs if not r["control"]]
    family = family_size(compared, endpoints)
    tests = []
    for arm in dict.fromkeys(r["recipe"] for r in compared):
        tests += _tests(arm, [r for r in compared if r["recipe"] == arm], endpoints, alpha, family, permutations, seed)
    confirmatory = [i for i, t in enumerate(tests) if t.endpoint and t.against == "batch_size"]
    exploratory = [i for i in range(len(tests)) if i not in set(confirmatory)]
    for family_of in (confirmatory, exploratory):
        for i, p in zip(family_of, stats.holm([tests[i].p_value for i in family_of])):
            tests[i] = replace(tests[i], p_holm=p)
    factors = _holm_factors([tests[i].p_value for i in confirmatory])
    for i, factor in zip(confirmatory, factors):
        tests[i] = _stability(tests[i], [r for r in compared if r["recipe"] == tests[i].arm], alpha, factor,
                              permutations, seed)  # fmt: skip
    card = Scorecard(
        runs,
        groups,
        tests,
        endpoints,
        alpha,
        "",
        settings or {},
        list(left_out or []),
        permutations,
        seed,
        rescaling.control(results),
    )
    return replace(card, verdict=verdict(card))


__all__ = [
    "Group",
    "Scorecard",
    "Test",
    "build",
    "endpoints_of",
    "family_size",
    "DEFAULT_ENDPOINTS",
    "shown",
]
