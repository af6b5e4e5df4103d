"""Whether the networks a scorecard compares are at a minimum: "at a minimum" means a training error of
at most ``MINIMUM_ERROR`` % at every point compared (a network at 6 % training error is still descending,
and its sharpness is not that of a minimum), and a training run that met its stop rule rather than
spending its budget first (``train.targets``)."""

from __future__ import annotations

from .matching import MATCHED, has_matched

MINIMUM_ERROR = 1.0  # a compared network with a training error above this (%) is not at a minimum


def not_at_minimum(card) -> list[tuple[str, str]]:
    """The compared networks of a scorecard that are not at a minimum (``away``)."""
    return away(card.runs)


def away(scored: list[dict]) -> list[tuple[str, str]]:
    """The compared networks among ``scored`` (a scorecard's runs) that are not at a minimum, with why: a
    training error above ``MINIMUM_ERROR`` at the weights an arm compares (its matched ones, and its final
    ones), or a training run that spent its budget before its stop rule (``train.targets``).  One entry
    per run: the verdict's caution, the tables' flags and the findings count the same networks."""
    out = []
    compared = [r for r in scored if not r.get("control")]
    for arm in dict.fromkeys(r["recipe"] for r in compared):
        runs = [r for r in compared if r["recipe"] == arm]
        points = [("final weights", "train_error")]
        if has_matched(runs):
            points.insert(0, ("matched loss", f"train_error{MATCHED}"))
        for r in runs:
            why = [
                f"train error {r['values'][key]:.2f} % at its {where}"
                for where, key in points
                if r["values"].get(key, 0.0) > MINIMUM_ERROR
            ]
            found = r.get("minimum") or {}
            if found.get("rule") and not found.get("reached"):
                why.append(f"its training ended before its rule ({found['rule']})")
            if why:
                out.append((r["name"], "; ".join(why)))
    return out


__all__ = ["MINIMUM_ERROR", "not_at_minimum", "away"]
