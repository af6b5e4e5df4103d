"""The scorecard's tables, on a made-up study: numbers to three significant digits and a dash where missing,
LaTeX's ± in math mode, every digit in the CSV, the Markdown's flags, settings and rescaling control, and
LaTeX that escapes an arm's name (the tables' shape and ``plus_minus``: tests/report/test_scorecard.py)."""

import csv
import io
import math

from landscape.report import tables
from landscape.report.catalogue import MEASURES
from landscape.report.scorecard import build

from synthetic_study import card, results


def test_numbers_have_three_significant_digits_and_a_dash_where_missing():
    assert tables.number(0.012345) == "0.0123" and tables.number(1234.5) == "1.23e+03"
    assert tables.number(2.0) == "2" and tables.number(3.14159, 4) == "3.142"
    assert tables.number(None) == tables.number(math.nan) == tables.number(-math.inf) == "–"


def test_latex_mean_and_spread_are_in_math_mode_to_the_spread_s_second_digit():
    assert tables.tex_plus_minus(0.12345, 0.0123) == r"$0.123\pm0.012$"
    assert tables.tex_plus_minus(13.0, 3.5) == r"$13.0\pm3.5$"
    assert tables.tex_plus_minus(3.6e-5, 0.0) == r"$3.6\times10^{-5}\pm0$"  # no spread: significant digits
    assert tables.tex_plus_minus(2.5, math.nan) == "$2.5$" and tables.tex_plus_minus(math.nan, 1.0) == "--"


def test_the_runs_csv_keeps_every_digit_of_every_value():
    scored = card(results())
    rows = list(csv.DictReader(io.StringIO(tables.runs_csv(scored))))
    assert [r["run"] for r in rows] == [r["name"] for r in scored.runs]
    for row, run in zip(rows, scored.runs):
        for m in MEASURES:
            assert float(row[m.key]) == run["values"][m.key], (run["name"], m.key)  # repr: read back exactly


def test_markdown_lists_the_flags_the_settings_and_the_rescaling_control():
    found = results(control=True)
    flagged = build(found, permutations=200, settings={"grid_1d": "-1:1:5", "seed": 3})
    rows = [("naive_b16_s0", "final weights", "m-sharpness", "not converged")]
    md = tables.markdown(flagged, title="Study", flags=rows)
    assert md.startswith("# Study\n")
    assert (
        "| network | at | what | why |" in md and "| naive_b16_s0 | final weights | m-sharpness | not converged |" in md
    )
    assert "Flags: none" not in md and "Settings: grid_1d = -1:1:5, seed = 3" in md
    assert "Rescaling control: each measure's largest relative change" in md
    assert "| λmax | no | 1 | 49 | **yes** |" in md  # the copy's values are 50 x the original's
    plain = tables.markdown(card(results()))
    assert "Flags: none (every compared network at a minimum, every search converged)." in plain
    assert "Rescaling control" not in plain and "Settings:" not in plain


def test_latex_escapes_an_arm_s_name_and_heads_each_arm_s_tests():
    tex = tables.latex(card(results(recipes=("lr_0.1%", "adam"))))
    body = [line for line in tex.splitlines() if not line.startswith("%")]
    assert sum(line.startswith(r"lr\_0.1\% & ") for line in body) == 3  # one row per batch size
    assert r"\multicolumn{10}{l}{\emph{lr\_0.1\%}} \\" in body and r"\multicolumn{10}{l}{\emph{adam}} \\" in body
    assert not any("lr_0.1" in line for line in body)  # the bare name would break the table
