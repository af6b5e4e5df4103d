"""The scorecard's verdict in words, each word backed by a test record.

In this order: a loss mismatch between the runs compared (before anything else, because it changes
what every later sentence means); too few runs for any p-value to go below alpha; runs not at a
minimum; then per arm the declared endpoints, each either a difference that survives Holm's adjustment,
stated with its direction, its paired difference largest − smallest batch and that difference's 95 %
interval, or "no evidence of a difference at this power" with the smallest difference the seeds could
have detected; then the exploratory measures, their p-values unadjusted and labelled so; then whether
a sharpness measure tracks the generalization gap among runs of the same batch size.

A null is never stated as "does not change": with three seeds a real effect of a seed-to-seed standard
deviation is seen about a third of the time, and the minimum detectable effect says how large a
difference could hide.
"""

from __future__ import annotations

import math

import numpy as np

from . import rescaling
from .catalogue import BY_KEY, MEASURES
from .matching import values_of
from .minimum import not_at_minimum
from .stats import ANY, GAP, TREND, trend


def _name(key: str) -> str:
    """A measure's label as a word in a sentence: 'test error', not 'test error %'."""
    return BY_KEY[key].label.replace(" %", "").replace(" (points)", "")


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def smallest_p(runs: list[dict], samples: int = 10000, seed: int = 0) -> float:
    """The within-seed permutation p-value of a measure in perfect order with the batch sizes, for these
    runs' design: no measure can do better."""
    batches = sorted({r["batch_size"] for r in runs})
    seeds = sorted({r["seed"] for r in runs})
    ordered = [batches.index(r["batch_size"]) + 1e-3 * seeds.index(r["seed"]) for r in runs]
    return trend([r["batch_size"] for r in runs], ordered, [r["seed"] for r in runs], samples, seed).p_value


def _effect(t) -> str:
    if not math.isfinite(t.difference):
        return "no seed has both the smallest and the largest batch"
    interval = f", 95 % t-interval [{t.ci_low:.3g}, {t.ci_high:.3g}]" if math.isfinite(t.ci_low) else ""
    return f"batch {t.large} − batch {t.small}: {t.difference:+.3g}{interval} over {t.pairs} seed{'s' * (t.pairs != 1)}"


def _detectable(t) -> str:
    if not math.isfinite(t.mde):
        return f"smallest detectable: not estimable from {t.pairs} seed{'s' * (t.pairs != 1)} at both ends"
    return (
        f"smallest detectable: {t.mde:.3g} for batch {t.large} − batch {t.small} at 80 % power with "
        f"{t.pairs} seeds; observed {t.difference:+.3g}"
        + (f", 95 % t-interval [{t.ci_low:.3g}, {t.ci_high:.3g}]" if math.isfinite(t.ci_low) else "")
    )


def _peak(card, arm: str, key: str, basis: str) -> int | None:
    """The batch size with the highest mean of ``key`` in ``arm``, on the values its test used (``basis``:
    as trained, or at matched loss)."""
    runs = [r for r in card.runs if r["recipe"] == arm and not r.get("control")]
    values, _ = values_of(runs, key, basis == "matched_loss")
    by_batch: dict[int, list[float]] = {}
    for r, v in zip(runs, values):
        if math.isfinite(v):
            by_batch.setdefault(r["batch_size"], []).append(v)
    means = [(float(np.mean(v)), b) for b, v in by_batch.items()]
    return max(means)[1] if means else None


def _stable(t) -> str:
    """Whether an endpoint's conclusion survives leaving out any one seed (``scorecard._stability``)."""
    if t.stable is None:
        return ""
    if t.stable:
        return "; robust: the same leaving out any one seed"
    seeds = ", ".join(map(str, t.loo_changed))
    return f"; NOT robust: leaving out seed {seeds} changes it"


def _p(t, holm: bool) -> str:
    return f"p = {t.p_value:.2g}" + (f", Holm p = {t.p_holm:.2g}" if holm else "")


def _judged(
    card, arm: str, key: str, holm: bool, blocked: bool = False, explore: bool = False
) -> tuple[bool, str] | None:
    """One measure of one arm in words, from its trend and Friedman records: whether a difference was
    shown, and the words (for a null, the words after "no evidence of a difference at this power");
    None without a τ."""
    t, f = card.test(arm, key, TREND), card.test(arm, key, ANY)
    if t is None or math.isnan(t.tau):
        return None
    level = (lambda r: r.p_holm) if holm else (lambda r: r.p_value)
    name = _name(key) + (" (at matched loss)" if t.basis == "matched_loss" else "")
    friedman = f is not None and math.isfinite(f.p_value)
    if level(t) < card.alpha:
        moves = "rises" if t.tau > 0 else "falls"
        return True, f"{name} {moves} with batch size (τ = {t.tau:+.2f}, {_p(t, holm)}; {_effect(t)}{_stable(t)})"
    if friedman and level(f) < card.alpha:
        return True, (
            f"{name} differs among batch sizes, not monotonically (Friedman {_p(f, holm)}, highest at batch "
            f"{_peak(card, arm, key, f.basis)}; τ = {t.tau:+.2f}, p = {t.p_value:.2g}; {_effect(t)}{_stable(f)})"
        )
    also = f"; Friedman {_p(f, holm)}" if friedman else ""
    if blocked and (explore or not holm):  # no order of the values reaches alpha: no detectable size to promise
        return False, f"{name} (τ = {t.tau:+.2f}, p = {t.p_value:.2g}{also})"
    if blocked and not explore:  # no order of the values reaches alpha: a detectable size would be a false promise
        return False, (
            f"{name}: no difference of any size could be shown by these tests with this design "
            f"(τ = {t.tau:+.2f}, {_p(t, holm)}{also}; {_effect(t)})"
        )
    if holm and not explore:
        return (
            False,
            f"{name}: no evidence of a difference at this power "
            f"(τ = {t.tau:+.2f}, {_p(t, holm)}{also}; {_detectable(t)}{_stable(t)})",
        )
    mde = f"smallest detectable {t.mde:.3g}" if math.isfinite(t.mde) else "smallest detectable not estimable"
    return False, f"{name} (τ = {t.tau:+.2f}, {_p(t, holm)}{also}; {mde})"


def _basis(card, arm: str, prefix: str) -> str:
    """Which networks the arm's tests compare, and where its matched loss comes from."""
    level = (card.settings.get("matched") or {}).get(arm) or {}
    t = card.test(arm, card.endpoints[0]) if card.endpoints else None
    if t is not None and t.basis == "matched_loss" and level.get("level") is not None:
        return (
            f"{prefix}Compared at matched training loss {level['level']:.4g} ({level.get('note', '')}); the "
            "endpoints at the final weights are exploratory rows."
        )
    why = f" (no matched loss: {level['note']})" if level.get("note") else ""
    return f"{prefix}Compared at the final weights{why}."


def _gap(card, arm: str, prefix: str) -> str | None:
    tests = [t for t in card.tests if t.arm == arm and t.method == GAP and math.isfinite(t.tau)]
    if not tests:
        return None
    yes = [t for t in tests if t.p_value < card.alpha]
    named = _listed([f"{_name(t.measure)} (τ = {t.tau:+.2f}, p = {t.p_value:.2g})" for t in (yes or tests)])
    if yes:
        return f"{prefix}Tracking the generalization gap among runs of the same batch size (exploratory): {named}."
    return (
        f"{prefix}No sharpness measure tracks the generalization gap among runs of the same batch size at "
        f"p < {card.alpha:g} (exploratory): {named}."
    )


def _flagged_searches(card) -> str | None:
    """The sharpness searches that flagged their own values, by measure, endpoints first."""
    names: dict[str, list[str]] = {}
    for r in card.runs:
        for key in r.get("flagged", ()):
            names.setdefault(key, []).append(r["name"])
    if not names:
        return None
    parts = [
        f"{_name(key)}{' (an endpoint)' if key in card.endpoints else ''} in {len(runs)} of {len(card.runs)} runs "
        f"({', '.join(runs[:3])}{', …' if len(runs) > 3 else ''})"
        for key, runs in sorted(names.items(), key=lambda item: (item[0] not in card.endpoints, item[0]))
    ]
    return (
        "Flagged searches (not converged, or no rise found: those values are lower bounds of the worst case): "
        + "; ".join(parts)
        + "."
    )


def verdict(card) -> str:
    """The verdict of a scorecard (``scorecard.Scorecard``) from its test records."""
    batches = sorted({r["batch_size"] for r in card.runs})
    if len(batches) < 2:
        return (
            f"All {len(card.runs)} runs have batch size {batches[0]}: there is no batch size to compare "
            "(the table gives each measure's spread over seeds)."
        )
    a, arms = card.alpha, card.arms()
    confirmatory = [t for t in card.confirmatory() if math.isfinite(t.p_holm)]
    family = len(confirmatory)
    sentences = []
    best = min(smallest_p([r for r in card.runs if r["recipe"] == arm], card.permutations, card.seed) for arm in arms)
    after = f", {min(1.0, best * family):.2g} after Holm's adjustment over {family} endpoint tests" if family else ""
    blocked = best >= a
    if best >= a or (family and best * family >= a):
        sentences.append(
            f"The smallest p-value that permuting each seed's values among its batch sizes can reach here is "
            f"{best:.2g}{after}, not below {a:g}: more seeds or batch sizes are needed before an "
            f"endpoint's difference can be shown."
        )
    if len(arms) > 1:
        sentences.append(f"Each of the {len(arms)} arms ({', '.join(arms)}) is tested on its own.")
    away = not_at_minimum(card)
    if away:
        compared = len([r for r in card.runs if not r.get("control")])
        names = ", ".join(name for name, _ in away[:4]) + (", …" if len(away) > 4 else "")
        sentences.append(
            f"Caution: {len(away)} of {compared} compared networks are not at a minimum ({names}; the flags "
            "table says why): sharpness there is not that of a minimum."
        )
    searches = _flagged_searches(card)
    if searches:
        sentences.append(searches)
    no_test = all(not np.isfinite(r["values"].get("test_error", math.nan)) for r in card.runs)
    if no_test:
        sentences.append("The data set has no test set: there is no test error and no gap to compare.")
    for arm in arms:
        prefix = f"{arm}: " if len(arms) > 1 else ""
        sentences.append(_basis(card, arm, prefix))
        endpoints_blocked = blocked or bool(family and best * family >= a)
        said = [w for key in card.endpoints if (w := _judged(card, arm, key, True, endpoints_blocked))]
        if said:
            sentences.append(
                f"{prefix}Endpoints (Holm-adjusted over {family} tests, alpha {a:g}): "
                + "; ".join(text for _, text in said)
                + "."
            )
        else:
            sentences.append(f"{prefix}No endpoint can be tested against the batch sizes (too few runs with values).")
        exploratory = [
            m.key for m in MEASURES if m.key not in card.endpoints and (m.sharpness or m.key == "test_error")
        ]
        said = [w for key in exploratory if (w := _judged(card, arm, key, True, blocked, explore=True))]
        shown = [text for yes, text in said if yes]
        nulls = [text for yes, text in said if not yes]
        if nulls and blocked:  # no order reaches alpha: neither a difference nor a detectable size
            shown.append(f"no difference of any size could be shown with this design for {_listed(nulls)}")
        elif nulls:
            shown.append(f"no evidence of a difference at this power for {_listed(nulls)}")
        if shown:
            n = len([t for t in card.tests if not t.endpoint and math.isfinite(t.p_holm)])
            sentences.append(
                f"{prefix}Exploratory (Holm-adjusted over {n} exploratory tests): " + "; ".join(shown) + "."
            )
        gap = None if no_test else _gap(card, arm, prefix)
        if gap:
            sentences.append(gap)
    control = rescaling.sentence(card.rescaling)
    return " ".join(sentences + ([control] if control else []))


__all__ = ["verdict", "smallest_p"]
