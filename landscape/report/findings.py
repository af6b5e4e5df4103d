"""The study's findings in words, every number taken from its record (``<name>.json``), each sentence naming
the figure or table that shows it.

``findings(record)`` turns the scorecard's record, with the study's own section (``study``: the arms, the
mechanism's table), into Markdown bullets: what was compared where; each endpoint per arm with its paired
difference, 95 % t-interval, Holm-adjusted p and whether it survives leaving out any one seed; the
endpoints at the final weights (exploratory); the mechanism's plateaus against 2(1 + β)/η; the rescaling
control; the exploratory measures that survive Holm's adjustment over the exploratory family, worded so.
The study writes it beside the scorecard (``<name>_findings.md``) and the manual includes that file, so
the page cannot say what the record does not.
"""

from __future__ import annotations

import math

from ..losses import LOSS_WORDS
from .catalogue import BY_KEY
from .mechanism import AT_LIMIT
from .minimum import MINIMUM_ERROR, away
from .rescaling import percent
from .stats import ANY, TREND


def _name(key: str) -> str:
    return BY_KEY[key].label.replace(" %", "").replace(" (points)", "")


def _number(v: float) -> str:
    return f"{v:.3g}" if math.isfinite(v) else "n/a"


def _test(record: dict, arm: str, key: str, method: str = TREND, basis: str | None = None) -> dict | None:
    for t in record["tests"]:
        if (t["arm"], t["measure"], t["method"]) == (arm, key, method) and basis in (None, t["basis"]):
            return t
    return None


def _finite(t: dict | None, field: str) -> bool:
    return t is not None and t.get(field) is not None and math.isfinite(t[field])


def _endpoint(record: dict, arm: str, key: str) -> str | None:
    t, f = _test(record, arm, key), _test(record, arm, key, ANY)
    if t is None or not _finite(t, "tau"):
        return None
    alpha = record["alpha"]
    where = " at matched loss" if t["basis"] == "matched_loss" else " at the final weights"
    interval = (
        f"batch {t['large']} − batch {t['small']}: {t['difference']:+.3g} [{_number(t['ci_low'])}, "
        f"{_number(t['ci_high'])}] (95 % paired t-interval over {t['pairs']} seeds)"
    )
    holm = t.get("p_holm")
    if _finite(t, "p_holm") and holm < alpha:
        move = "rises" if t["tau"] > 0 else "falls"
        said = f"{_name(key)}{where} {move} with batch size: τ = {t['tau']:+.2f}, Holm p = {holm:.2g}; {interval}"
        stable = t.get("stable")
    elif f is not None and _finite(f, "p_holm") and f["p_holm"] < alpha:
        said = (
            f"{_name(key)}{where} differs among batch sizes, not monotonically (Friedman Holm p = "
            f"{f['p_holm']:.2g}; τ = {t['tau']:+.2f}); {interval}"
        )
        stable = f.get("stable")
    else:
        said = (
            f"{_name(key)}{where}: no difference shown (τ = {t['tau']:+.2f}, Holm p = {_number(holm)}; "
            f"{interval}; smallest difference detectable at 80 % power: {_number(t['mde'])})"
        )
        stable = t.get("stable")
    if stable is not None:
        said += "; robust to leaving out any one seed" if stable else "; NOT robust to leaving out one seed"
    return said


def _compared(record: dict, arm: str) -> str:
    level = (record["settings"].get("matched") or {}).get(arm) or {}
    if level.get("level") is not None:
        return f"compared at matched training loss {level['level']:g}, {level.get('note', '')}"
    return "compared at the final weights"


def _mechanism(study: dict) -> list[str]:
    table = (study.get("mechanism") or {}).get("table") or []
    if not table:
        return []
    groups: dict[str, list[dict]] = {}
    for p in table:
        name = "full-batch gradient descent" if p["run"].startswith("gd_") else f"SGD at batch {p['batch_size']}"
        groups.setdefault(name, []).append(p)
    lines = []
    for name, runs in sorted(groups.items(), key=lambda item: not item[0].startswith("full")):  # GD first
        fractions = [p["fraction"] for p in runs if p.get("fraction") is not None]
        rates = ", ".join(f"{r:g}" for r in sorted({p["lr"] for p in runs}))
        loss = LOSS_WORDS.get(runs[0]["loss_name"], runs[0]["loss_name"])
        if not fractions:
            continue
        at = all(abs(x - 1) <= AT_LIMIT for x in fractions)
        below = all(x < 1 - AT_LIMIT for x in fractions)
        verdict = (
            "the rate caps the sharpness: λmax rises to its stability limit and stays there"
            if at
            else "λmax stays below its stability limit"
            if below
            else "λmax is not at one place against its limit"
        )
        lines.append(
            f"**Mechanism, {name}** (η = {rates}, {len(runs)} runs, {loss}): {verdict} — the "
            f"plateau of λmax is {min(fractions):.0%}–{max(fractions):.0%} of 2(1 + β)/η (`study_mechanism`, "
            f"panel c; `study_mechanism.csv`)."
        )
    return lines


def _exploratory(record: dict) -> list[str]:
    alpha, out = record["alpha"], []
    for t in record["tests"]:
        if t["endpoint"] or t["against"] != "batch_size" or not _finite(t, "p_holm") or t["p_holm"] >= alpha:
            continue
        if not BY_KEY[t["measure"]].sharpness or t["method"] != TREND or t["basis"] == "final":
            continue  # the sharpness measures' trends at the compared networks (the final rows have their bullet)
        where = " at matched loss" if t["basis"] == "matched_loss" else ""
        move = "rises" if t["tau"] > 0 else "falls"
        out.append(f"{t['arm']}: {_name(t['measure'])}{where} {move} (τ = {t['tau']:+.2f}, Holm p = {t['p_holm']:.2g})")
    return out


def findings(record: dict, name: str = "study") -> str:
    """Markdown bullets of the study's findings from its record (``<name>.json``)."""
    study = record.get("study") or {}
    arms = list(dict.fromkeys(r["recipe"] for r in record["runs"] if not r.get("control")))
    compared = [r for r in record["runs"] if not r.get("control")]
    lines = [
        f"- **Design.** {len(compared)} networks ({study.get('model', '')} on {study.get('data_set', '')}), "
        f"{len(arms)} arms ({', '.join(arms)}), batch sizes {', '.join(map(str, study.get('batch_sizes', [])))}, "
        f"{len(study.get('seeds', []))} seeds each; "
        + "; ".join(f"{arm} {_compared(record, arm)}" for arm in arms)
        + f" (`{name}.md`)."
    ]
    missed = away(record["runs"])
    lines.append(
        f"- **At a minimum.** {len(compared) - len(missed)} of {len(compared)} compared networks have a training "
        f"error of at most {MINIMUM_ERROR:g} % at every point compared and met their stop rule"
        + (f"; not: {'; '.join(f'{n}: {why}' for n, why in missed[:4])}" if missed else "")
        + f" (`{name}_runs.csv`, train_error; the flags of `{name}.md`)."
    )
    for arm in arms:
        said = [s for key in record["endpoints"] if (s := _endpoint(record, arm, key))]
        if said:
            lines.append(f"- **{arm}, endpoints** (`{name}_measures`, `{name}_tests.csv`): " + "; ".join(said) + ".")
        rows = [
            (key, t)
            for key in record["endpoints"]
            if (t := _test(record, arm, key, basis="final")) is not None
            and t.get("basis") == "final"
            and _test(record, arm, key)["basis"] == "matched_loss"
        ]
        if rows:
            first = rows[0][1]
            lines.append(
                f"- **{arm}, at the final weights** (exploratory; batch {first['large']} − batch {first['small']}): "
                + "; ".join(
                    f"{_name(key)} {t['difference']:+.3g} [{_number(t['ci_low'])}, {_number(t['ci_high'])}], "
                    f"τ = {t['tau']:+.2f}"
                    for key, t in rows
                )
                + f" (`{name}_tests.csv`, basis final)."
            )
    lines += [f"- {line}" for line in _mechanism(study)]
    control = record.get("rescaling_control") or []
    changed = [c for c in control if c.get("changed")]
    kept = [c for c in control if c.get("changed") is False and BY_KEY[c["measure"]].sharpness]
    if control:
        alphas = ", ".join(f"{a:g}" for a in control[0]["alpha"])
        lines.append(
            f"- **Rescaling control** (α = {alphas}, {control[0]['pairs']} networks, the same functions): changed "
            + ", ".join(f"{_name(c['measure'])} (up to {percent(c['largest_change'])})" for c in changed)
            + "; unchanged: "
            + ", ".join(_name(c["measure"]) for c in kept)
            + f" (`{name}.md`, rescaling control)."
        )
    exploratory = _exploratory(record)
    if exploratory:
        lines.append(
            "- **Exploratory** (the other sharpness measures; Holm-adjusted over the exploratory tests; "
            f"`{name}.md`): " + "; ".join(exploratory) + "."
        )
    return "\n".join(lines) + "\n"


__all__ = ["findings"]
