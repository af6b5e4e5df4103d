"""The scorecard as tables: CSV (every number, for scripts), Markdown (for a README) and LaTeX
(``booktabs``, for a paper).  Means and standard deviations are shown to three significant digits;
a missing value is an en dash."""

from __future__ import annotations

import csv
import io
import math
import textwrap
from dataclasses import fields

from .catalogue import BY_KEY, MEASURES, definition
from .scorecard import Scorecard, Test
from .stats import ANY, GAP, TREND

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


def _extra_keys(card: Scorecard) -> list[str]:
    """Values a run holds beyond ``MEASURES`` (e.g. ``<measure>_matched``), in order of appearance."""
    known = {m.key for m in MEASURES}
    return [k for k in dict.fromkeys(k for r in card.runs for k in r["values"]) if k not in known]


def runs_csv(card: Scorecard) -> str:
    extra = _extra_keys(card)
    header = (
        ["run", "recipe", "batch_size", "seed"]
        + [m.key for m in MEASURES]
        + extra
        + ["trace_stderr", "average_rise_stderr", "lambda_max_residual", "lambda_max_converged"]
    )
    rows = [
        [r["name"], r["recipe"], r["batch_size"], r["seed"]]
        + [r["values"].get(k, math.nan) for k in [m.key for m in MEASURES] + extra]
        + [r["errors"].get("trace", math.nan), r["errors"].get("average_rise", math.nan)]
        + [r["lambda_max_residual"], "" if r["lambda_max_converged"] is None else r["lambda_max_converged"]]
        for r in card.runs
    ]
    return _csv(header, rows)


def tests_csv(card: Scorecard) -> str:
    """One row per test record, the columns of ``Test``."""
    header = [f.name for f in fields(Test)]
    return _csv(header, [[getattr(t, k) for k in header] for t in card.tests])


HEADER = ["role", "τ", "p", "p Holm", "Friedman p", "Δ [95 % CI]", "MDE", "τ gap", "p"]
RUNS_HEADER = ["run", "recipe", "batch", "seed", "train loss", "λmax", "Lanczos residual", "converged"]


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _explained(card: Scorecard) -> str:
    family = sum(math.isfinite(t.p_holm) for t in card.confirmatory())
    return (
        "τ: Kendall's τ-b with batch size over the arm's runs, p by permutation of each seed's values among "
        f"its batch sizes (two-sided); p Holm: adjusted over the {family} endpoint tests (τ and Friedman of "
        f"{', '.join(card.endpoints)}), the other rows are exploratory and unadjusted; Friedman: any "
        "difference among batch sizes, seeds as blocks; Δ: largest − smallest batch, mean over seeds with "
        "its 95 % paired bootstrap interval; MDE: the smallest Δ detectable at 80 % power with these seeds "
        "(paired t); τ gap: with the gap over pairs of runs at the same batch size. "
        f"Bold: an endpoint with p Holm < {card.alpha:g}."
    )


def _test_cells(card: Scorecard, arm: str, key: str, latex: bool = False) -> list[str] | None:
    """A measure's row of the tests table: role, τ, p, p Holm, Friedman p, Δ [CI], MDE, τ gap, p gap."""
    t = card.test(arm, key, TREND)
    if t is None:
        return None
    f, g = card.test(arm, key, ANY), card.test(arm, key, GAP)
    num = (lambda v, d=3: f"${tex_number(v, d)}$" if math.isfinite(v) else "--") if latex else number

    def strong(text: str, on: bool) -> str:
        if not on or text in (DASH, "--"):
            return text
        return rf"$\mathbf{{{text.strip('$')}}}$" if latex else f"**{text}**"

    holds = t.endpoint and t.p_holm < card.alpha
    tau = DASH if math.isnan(t.tau) else (f"${t.tau:+.2f}$" if latex else f"{t.tau:+.2f}")
    friedman = DASH if f is None else num(f.p_value, 2)
    delta = DASH if math.isnan(t.difference) else f"{num(t.difference)} [{num(t.ci_low)}, {num(t.ci_high)}]"
    role = ("endpoint" if t.endpoint else "exploratory") + (" (matched loss)" if t.basis == "matched_loss" else "")
    gap = [DASH, DASH] if g is None or math.isnan(g.tau) else [f"{g.tau:+.2f}", num(g.p_value, 2)]
    if latex:
        gap = [f"${gap[0]}$" if gap[0] != DASH else "--", gap[1]]
    cells = [
        role,
        strong(tau, holds),
        num(t.p_value, 2),
        num(t.p_holm, 2),
        strong(friedman, f is not None and t.endpoint and f.p_holm < card.alpha),
        delta,
        num(t.mde),
        *gap,
    ]
    return [c.replace(DASH, "--") for c in cells] if latex else cells


def _runs_rows(card: Scorecard) -> list[list[str]]:
    """Run, recipe, batch, seed, train loss, λmax, its Lanczos residual and whether Lanczos converged."""
    return [
        [
            r["name"],
            r["recipe"],
            str(r["batch_size"]),
            str(r["seed"]),
            number(r["values"].get("train_loss", math.nan)),
            number(r["values"].get("lambda_max", math.nan), 4),
            number(r["lambda_max_residual"], 2),
            {True: "yes", False: "**no**", None: DASH}[r["lambda_max_converged"]],
        ]
        for r in card.runs
    ]


def markdown(card: Scorecard, title: str = "Scorecard", description: str = "", flags=()) -> str:
    """The scorecard as Markdown; ``flags``: (network, where, what, why) rows of the flags table — networks
    not at a minimum, searches that flagged their values, matched losses off their level."""
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
    lines += ["", _explained(card), ""]
    for arm in card.arms():
        if len(card.arms()) > 1:
            lines += [f"Arm {arm}:", ""]
        lines.append(_md_row(["measure", *HEADER]))
        lines.append(_md_row(["---", "---"] + ["---:"] * (len(HEADER) - 1)))
        for m in MEASURES:
            cells = _test_cells(card, arm, m.key)
            if cells is not None:
                lines.append(_md_row([m.label, *cells]))
        lines.append("")
    lines += [
        "Every measure's definition (f: the mean training loss, w: the weights) and whether a function-preserving "
        "rescaling of a ReLU network's units (Dinh et al. 2017) leaves it unchanged: yes (unit by unit), "
        "layer-wise (a whole layer times α, the next divided by α) or no.",
        "",
        _md_row(["measure", "definition", "citation", "invariant under rescaling"]),
        _md_row(["---"] * 4),
    ]
    lines += [_md_row([m.label, *definition(m.key), m.invariant]) for m in MEASURES]
    if card.rescaling:
        lines += [
            "",
            "Rescaling control: each measure's largest relative change between a network and its rescaled copy "
            "(the same function, other weights; `landscape rescale`), against its flag.",
            "",
            _md_row(["measure", "flag", "pairs", "largest change", "changed"]),
            _md_row(["---", "---", "---:", "---:", "---"]),
        ]
        lines += [
            _md_row(
                [
                    BY_KEY[r["measure"]].label,
                    r["flag"],
                    str(r["pairs"]),
                    number(r["largest_change"]),
                    {True: "**yes**", False: "no", None: "–"}[r["changed"]],
                ]
            )
            for r in card.rescaling
        ]
    lines += ["", "Each run's λmax with its Lanczos residual |Hv − λv| / |λ| and whether Lanczos converged.", ""]
    lines.append(_md_row(RUNS_HEADER))
    lines.append(_md_row(["---"] * 4 + ["---:"] * 3 + ["---"]))
    lines += [_md_row(row) for row in _runs_rows(card)]
    if card.left_out:
        lines += ["", f"Left out (not finished): {', '.join(card.left_out)}."]
    if flags:
        lines += ["", "Flags: each network or value a statement below must be read with.", ""]
        lines += [_md_row(["network", "at", "what", "why"]), _md_row(["---"] * 4)]
        lines += [_md_row(list(row)) for row in flags]
    else:
        lines += ["", "Flags: none (every compared network at a minimum, every search converged)."]
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
    caption = _tex(_explained(card))
    for plain, tex in (("τ", r"$\tau$"), ("Δ", r"$\Delta$"), ("−", "$-$"), ("<", "$<$"), ("|", "$|$")):
        caption = caption.replace(plain, tex)
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
        r"\begin{table*}[t]",
        r"\centering",
        r"\resizebox{\textwidth}{!}{%",
        r"\begin{tabular}{ll" + "r" * (len(HEADER) - 1) + "}",
        r"\toprule",
        r"measure & role & $\tau$ & $p$ & $p_{\mathrm{Holm}}$ & Friedman $p$ & $\Delta$ [95\,\% CI] & MDE & "
        r"$\tau_{\mathrm{gap}}$ & $p$ \\",
        r"\midrule",
    ]
    for arm in card.arms():
        if len(card.arms()) > 1:
            out.append(rf"\multicolumn{{{len(HEADER) + 1}}}{{l}}{{\emph{{{_tex(arm)}}}}} \\")
        for m in MEASURES:
            cells = _test_cells(card, arm, m.key, latex=True)
            if cells is not None:
                out.append(" & ".join([m.latex, *cells]) + r" \\")
    out += [
        r"\bottomrule",
        r"\end{tabular}}",
        rf"\caption{{{caption}}}",
        r"\end{table*}",
        "",
    ]
    return "\n".join(out)


__all__ = ["groups_csv", "runs_csv", "tests_csv", "markdown", "latex", "number", "plus_minus"]
