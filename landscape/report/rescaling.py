"""The rescaling control: which measures see the parametrization rather than the function.

A run whose checkpoint was made by ``landscape rescale`` (a layer's units times α, the next layer's
weights on them divided by α: the same function, Dinh et al. 2017) is paired with the run it came from
(by the SHA-256 of that checkpoint).  For every measure, the largest relative change over the pairs,
|v(rescaled) − v(original)| / |v(original)|, says whether the measure changed: beyond ``CHANGED`` it
measured the weights, not the function.  The measures' flags (``Measure.invariant``) say what should
happen; this says what did, on the study's own networks.
"""

from __future__ import annotations

import math

import torch

from .catalogue import BY_KEY, MEASURES

CHANGED = 1e-3  # a relative change above this is a change (float32 rounding and searches stay below)


def origin_of(checkpoint: str) -> dict | None:
    """The ``rescaled`` record of a checkpoint made by ``landscape rescale`` (None for any other)."""
    try:
        stored = torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - a checkpoint that cannot be read this way was not made by rescale
        return None
    found = stored.get("rescaled") if isinstance(stored, dict) else None
    return found if isinstance(found, dict) else None


def control(results: list[dict]) -> list[dict]:
    """Per measure: the pairs compared, the largest relative change, whether it changed, and its flag."""
    by_sha = {r.get("checkpoint_sha256"): r for r in results}
    # a run's matched weights, measured in its folder, are the originals of their rescaled copies too
    by_sha.update({m["checkpoint_sha256"]: m for r in results if (m := r.get("matched_values"))})
    pairs = [
        (by_sha[r["rescaled"]["from_sha256"]], r)
        for r in results
        if r.get("rescaled") and r["rescaled"].get("from_sha256") in by_sha
    ]
    if not pairs:
        return []
    out = []
    for m in MEASURES:
        changes, by_alpha = [], {}
        for original, scaled in pairs:
            a, b = original["values"].get(m.key, math.nan), scaled["values"].get(m.key, math.nan)
            if math.isfinite(a) and math.isfinite(b):
                change = abs(b - a) / max(abs(a), 1e-300) if a != b else 0.0
                changes.append(change)
                alpha = f"{float(scaled['rescaled']['alpha']):g}"
                by_alpha[alpha] = max(by_alpha.get(alpha, 0.0), change)
        largest = max(changes) if changes else math.nan
        out.append(
            {
                "measure": m.key,
                "flag": m.invariant,
                "pairs": len(changes),
                "alpha": sorted({float(s["rescaled"]["alpha"]) for _, s in pairs}),
                "largest_change": largest,
                "by_alpha": by_alpha,  # the largest change at each α
                "changed": bool(largest > CHANGED) if changes else None,
            }
        )
    return out


def percent(share: float) -> str:
    """A relative change in %: three significant digits, whole numbers from 100 % on (1,240 %, not 1.24e+03)."""
    return f"{100 * share:,.0f} %" if 100 * share >= 100 else f"{100 * share:.3g} %"


def sentence(records: list[dict]) -> str:
    """The control in words, for the verdict."""
    if not records:
        return ""
    changed = [r for r in records if r["changed"]]
    kept = [r for r in records if r["changed"] is False]
    pairs = max(r["pairs"] for r in records)
    alphas = ", ".join(f"{a:g}" for a in records[0]["alpha"])

    def named(rs) -> str:
        return ", ".join(f"{BY_KEY[r['measure']].label} ({percent(r['largest_change'])})" for r in rs) or "none"

    return (
        f"Rescaling control ({pairs} network{'s' * (pairs != 1)} rescaled by α = {alphas}, the same functions): "
        f"changed by more than {100 * CHANGED:g} %, so not reparametrization-invariant: {named(changed)}; "
        f"unchanged: {', '.join(BY_KEY[r['measure']].label for r in kept) or 'none'}."
    )


__all__ = ["control", "sentence", "percent", "origin_of", "CHANGED"]
