"""The scorecard as tables: CSV (every number, for scripts), Markdown (for a README) and LaTeX
(``booktabs``, for a paper).  Means and standard deviations are shown to three significant digits;
a missing value is an en dash."""

from __future__ import annotations

import csv
import io
import math
import textwrap

from .measures import BY_KEY, MEASURES
from .scorecard import AGAINST, Scorecard

DASH = "–"


def number(v: float, digits: int = 3) -> str:
    if v is None or not math.isfinite(v):
        return DASH
    return f"{v:.{digits}g}"


def _decimals(sd: float) -> int | None:
    """Decimals that show ``sd`` to two significant digits; None when plain significant digits read better
    (a zero spread, or values too large or small for fixed decimals)."""
    if not (math.isfinite(sd) and sd > 0):
        return None
    places = 1 - math.floor(math.log10(sd))
    return max(0, places) if places <= 6 and sd < 1e4 else None


def plus_minus(mean: float, sd: float, sep: str = " ± ") -> str:
    """``mean ± sd``, the mean to the decimal place of the spread's second digit (``2.2500 ± 0.0017``,
    ``13.0 ± 3.5``); three significant digits when there is no spread."""
    if not math.isfinite(mean):
        return DASH
    places = _decimals(sd)
    if not math.isfinite(sd):
        return number(mean)
    if places is None:
        return f"{number(mean)}{sep}{number(sd, 2)}"
    return f"{mean:.{places}f}{sep}{sd:.{places}f}"


def tex_number(v: float, digits: int = 3) -> str:
    r"""``number`` for LaTeX math: ``3.6e-05`` becomes ``3.6\times10^{-5}``; a missing value ``--``."""
    text = number(v, digits)
    if text == DASH:
        return "--"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}\\times10^{{{int(exponent)}}}"
    return text


def tex_plus_minus(mean: float, sd: float) -> str:
    if not math.isfinite(mean):
        return "--"
    if not math.isfinite(sd):
        return f"${tex_number(mean)}$"
    places = _decimals(sd)
    if places is None:
        return f"${tex_number(mean)}\\pm{tex_number(sd, 2)}$"
    return f"${mean:.{places}f}\\pm{sd:.{places}f}$"


def _csv(header: list[str], rows: list[list]) -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([repr(v) if isinstance(v, float) else v for v in row])  # every digit: for scripts
    return text.getvalue()


def groups_csv(card: Scorecard) -> str:
    header = ["recipe", "batch_size", "seeds"] + [f"{m.key}_{s}" for m in MEASURES for s in ("mean", "sd")]
    rows = [
        [g.recipe, g.batch_size, len(g.seeds)] + [g.stats[m.key][i] for m in MEASURES for i in (0, 1)]
        for g in card.groups
    ]
    return _csv(header, rows)


def runs_csv(card: Scorecard) -> str:
    header = (
        ["run", "recipe", "batch_size", "seed"] + [m.key for m in MEASURES] + ["trace_stderr", "average_rise_stderr"]
    )
    rows = [
        [r["name"], r["recipe"], r["batch_size"], r["seed"]]
        + [r["values"][m.key] for m in MEASURES]
        + [r["errors"].get("trace", math.nan), r["errors"].get("average_rise", math.nan)]
        for r in card.runs
    ]
    return _csv(header, rows)


def correlations_csv(card: Scorecard) -> str:
    header = ["measure"] + [f"{part}_vs_{a}" for a in AGAINST for part in ("tau", "p", "runs")] + ["permutations"]
    rows = []
    for key, by in card.correlations.items():
        row = [key]
        for a in AGAINST:
            row += [by[a].tau, by[a].p_value, by[a].runs]
        rows.append(row + [max(c.permutations for c in by.values())])
    return _csv(header, rows)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _correlated(card: Scorecard, key: str, against: str, latex: bool = False) -> list[str]:
    c = card.correlations[key][against]
    if math.isnan(c.tau):
        return [DASH, DASH]
    p = number(c.p_value, 2)
    bold = c.p_value < card.alpha
    tau = f"{c.tau:+.2f}"
    if latex:
        return [rf"$\mathbf{{{tau}}}$" if bold else f"${tau}$", f"${tex_number(c.p_value, 2)}$"]
    return [f"**{tau}**" if bold else tau, p]


def markdown(card: Scorecard, title: str = "Scorecard", description: str = "") -> str:
    keys = [m.key for m in MEASURES]
    lines = [f"# {title}", ""]
    if description:
        lines += [description, ""]
    lines += [
        "Mean ± standard deviation over seeds. Loss and error at the trained weights (BatchNorm in eval mode); "
        "gap = test error − train error, in points.",
        "",
    ]
    lines.append(_md_row(["recipe", "batch", "seeds"] + [BY_KEY[k].label for k in keys]))
    lines.append(_md_row(["---"] * 3 + ["---:"] * len(keys)))
    for g in card.groups:
        lines.append(
            _md_row([g.recipe, str(g.batch_size), str(len(g.seeds))] + [plus_minus(*g.stats[k][:2]) for k in keys])
        )
    lines += [
        "",
        f"Kendall's τ-b over all {len(card.runs)} runs, two-sided permutation p-value; bold: p < {card.alpha:g}.",
        "",
    ]
    lines.append(_md_row(["measure", "τ with batch size", "p", "τ with gap", "p"]))
    lines.append(_md_row(["---", "---:", "---:", "---:", "---:"]))
    for m in MEASURES:
        gap = [DASH, DASH] if m.key == "gap" else _correlated(card, m.key, "gap")
        lines.append(_md_row([m.label, *_correlated(card, m.key, "batch_size"), *gap]))
    if card.left_out:
        lines += ["", f"Left out (not finished): {', '.join(card.left_out)}."]
    lines += ["", f"**Verdict.** {card.verdict}", ""]
    if card.settings:
        lines += ["Settings: " + ", ".join(f"{k} = {v}" for k, v in card.settings.items()), ""]
    return "\n".join(lines)


def _wrapped(text: str, width: int = 100) -> list[str]:

    return textwrap.wrap(text, width)


def _tex(text: str) -> str:
    return text.replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")


def latex(card: Scorecard) -> str:
    keys = [m.key for m in MEASURES]
    out = [
        r"% landscape report: needs \usepackage{booktabs} and \usepackage{graphicx}",
        *(f"% {line}" for line in _wrapped(f"Verdict: {card.verdict}")),
        *([f"% Left out (not finished): {', '.join(card.left_out)}"] if card.left_out else []),
        r"\begin{table*}[t]",
        r"\centering",
        r"\resizebox{\textwidth}{!}{%",
        r"\begin{tabular}{ll" + "r" * (1 + len(keys)) + "}",
        r"\toprule",
        " & ".join(["recipe", "batch", "seeds"] + [BY_KEY[k].latex for k in keys]) + r" \\",
        r"\midrule",
    ]
    for g in card.groups:
        cells = [_tex(g.recipe), str(g.batch_size), str(len(g.seeds))]
        cells += [tex_plus_minus(*g.stats[k][:2]) for k in keys]
        out.append(" & ".join(cells) + r" \\")
    out += [
        r"\bottomrule",
        r"\end{tabular}}",
        r"\caption{Mean $\pm$ standard deviation over seeds; gap = test $-$ train error (points).}",
        r"\end{table*}",
        "",
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{lrrrr}",
        r"\toprule",
        r"measure & $\tau$ (batch) & $p$ & $\tau$ (gap) & $p$ \\",
        r"\midrule",
    ]
    for m in MEASURES:
        gap = ["--", "--"] if m.key == "gap" else _correlated(card, m.key, "gap", True)
        cells = [m.latex, *_correlated(card, m.key, "batch_size", True), *gap]
        out.append(" & ".join(c.replace("–", "--") for c in cells) + r" \\")
    out += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{Kendall's $\tau_b$ over {len(card.runs)} runs with a two-sided permutation $p$-value; "
        rf"bold: $p < {card.alpha:g}$.}}",
        r"\end{table}",
        "",
    ]
    return "\n".join(out)


__all__ = ["groups_csv", "runs_csv", "correlations_csv", "markdown", "latex", "number", "plus_minus"]
