"""The scorecard from made-up measurements whose answer is known: groups, test records, verdict words,
tables."""

import csv
import io
import math

import numpy as np
import pytest

from landscape.errors import ConfigError
from landscape.report import tables
from landscape.report.catalogue import MEASURES
from landscape.report.minimum import not_at_minimum
from landscape.report.scorecard import DEFAULT_ENDPOINTS, build, endpoints_of
from landscape.report.stats import holm

BATCHES, SEEDS = (16, 64, 256, 1024), (0, 1, 2)
RECORD = {"arm", "measure", "against", "tau", "p_value", "p_holm", "ci_low", "ci_high", "mde", "runs", "method"}


def results(rising=("lambda_max", "trace"), falling=(), seed=0, batches=BATCHES, seeds=SEEDS):
    """One run per batch size and seed: ``rising`` measures grow with the batch, ``falling`` shrink, the
    rest are noise; every run at about the same training loss."""
    rng = np.random.default_rng(seed)
    out = []
    for b in batches:
        for s in seeds:
            level = math.log2(b)
            values = {m.key: float(rng.standard_normal()) for m in MEASURES}
            values.update(train_loss=0.01 * (1 + 0.05 * s), train_error=0.0, test_error=1.0 + level / 4 + 0.01 * s)
            values["gap"] = values["test_error"] - values["train_error"]
            for key in rising:
                values[key] = level + 0.1 * rng.standard_normal()
            for key in falling:
                values[key] = -level + 0.1 * rng.standard_normal()
            out.append(
                {
                    "run": {"name": f"sgd_b{b}_s{s}", "recipe": "sgd", "batch_size": b, "seed": s},
                    "values": values,
                    "errors": {"trace": 0.5},
                    "details": {"lambda_max": {"residuals": [2e-4], "converged": b != 1024}},
                }
            )
    return out


def test_groups_hold_mean_and_sd_over_seeds():
    card = build(results())
    assert [(g.recipe, g.batch_size, g.seeds) for g in card.groups] == [("sgd", b, [0, 1, 2]) for b in BATCHES]
    g = card.groups[-1]
    assert g.stats["test_error"] == (pytest.approx(1.0 + 10 / 4 + 0.01), pytest.approx(0.01), 3)


def test_the_record_holds_endpoints_flat_tests_and_every_value_of_every_run():
    card = build(results())
    record = card.record()
    assert record["endpoints"] == list(DEFAULT_ENDPOINTS) == ["test_error", "lambda_max", "adaptive_sharpness"]
    assert "trace" in record["exploratory"] and "lambda_max" not in record["exploratory"]
    tests = record["tests"]
    assert all(RECORD <= set(t) for t in tests)
    methods = {(t["measure"], t["against"], t["method"]) for t in tests}
    assert ("lambda_max", "batch_size", "kendall_within_seeds") in methods
    assert ("lambda_max", "batch_size", "friedman_within_seeds") in methods  # 4 batch sizes: a peak can be seen
    assert ("lambda_max", "gap_within_batch", "kendall_within_batch") in methods
    assert ("test_error", "gap_within_batch", "kendall_within_batch") not in methods  # a tautology: not tested
    run = record["runs"][0]
    assert set(run["values"]) >= {m.key for m in MEASURES}
    assert run["lambda_max_residual"] == 2e-4 and run["lambda_max_converged"] is True


def test_holm_adjusts_the_endpoints_and_the_exploratory_tests_each_as_a_family():
    card = build(results())
    family = [t for t in card.tests if t.endpoint and t.against == "batch_size"]
    assert len(family) == 6 and family == card.confirmatory()  # 3 endpoints x (τ, Friedman)
    assert [t.p_holm for t in family] == pytest.approx(holm([t.p_value for t in family]))
    exploratory = [t for t in card.tests if t not in family]
    assert [t.p_holm for t in exploratory] == pytest.approx(holm([t.p_value for t in exploratory]), nan_ok=True)
    assert all(t.p_holm >= t.p_value for t in exploratory if math.isfinite(t.p_value))


def test_an_endpoint_that_survives_holm_is_stated_with_its_interval():
    card = build(results(rising=("lambda_max", "trace"), falling=("surface_rise",)))
    v = card.verdict
    lam = card.test("sgd", "lambda_max")
    assert lam.p_holm < 0.05 and lam.ci_low < lam.difference < lam.ci_high and lam.ci_low > 0
    assert "Endpoints (Holm-adjusted over 6 tests, alpha 0.05):" in v
    assert "test error rises with batch size (τ = +" in v
    assert "λmax rises with batch size (τ = +" in v and "batch 1024 − batch 16: +" in v and "95 % t-interval [" in v
    assert "adaptive sharpness: no evidence of a difference at this power (" in v and "smallest detectable: " in v
    assert "Exploratory (Holm-adjusted over " in v and "exploratory tests): trace rises with batch size" in v
    assert "2-D rise falls with batch size" in v
    assert "does not change" not in v and "separates" not in v


def test_no_evidence_is_worded_with_the_smallest_detectable_difference():
    v = build(results(rising=())).verdict
    assert "λmax: no evidence of a difference at this power (τ = " in v
    assert "smallest detectable: " in v and "at 80 % power with 3 seeds" in v
    assert "no evidence of a difference at this power for trace (τ = " in v
    assert "No sharpness measure tracks the generalization gap among runs of the same batch size" in v


def test_a_peak_at_a_middle_batch_size_is_found_by_friedman():
    runs = results(rising=())
    for r in runs:
        bump = {16: 0.0, 64: 3.0, 256: 2.9, 1024: 0.1}[r["run"]["batch_size"]]
        r["values"]["lambda_max"] = bump + 0.01 * r["run"]["seed"]
    card = build(runs)
    assert card.test("sgd", "lambda_max").p_value > 0.5
    assert card.test("sgd", "lambda_max", "friedman_within_seeds").p_holm < 0.05
    assert "λmax differs among batch sizes, not monotonically (Friedman p = " in card.verdict
    assert "highest at batch 64" in card.verdict


def test_the_peak_is_named_on_the_values_the_test_used_at_matched_loss():
    runs = results(rising=())
    for r in runs:
        b, seed = r["run"]["batch_size"], r["run"]["seed"]
        r["values"]["train_loss"] = 0.003 if b == 16 else 0.15  # a loss mismatch: matched values are tested
        r["values"]["lambda_max"] = {16: 0.0, 64: 0.1, 256: 0.2, 1024: 9.0}[b] + 0.01 * seed  # as trained: 1024
        r["values"]["lambda_max_matched"] = {16: 0.0, 64: 3.0, 256: 2.9, 1024: 0.1}[b] + 0.01 * seed
    card = build(runs)
    assert card.test("sgd", "lambda_max", "friedman_within_seeds").basis == "matched_loss"
    assert "λmax (at matched loss) differs among batch sizes, not monotonically" in card.verdict
    assert "highest at batch 64" in card.verdict and "highest at batch 1024" not in card.verdict


def test_tracking_the_gap_is_judged_within_a_batch_size():
    runs = results(rising=("trace",))  # trace rises with batch size, as the gap does: across batch sizes only
    for r in runs:
        r["values"]["lambda_max"] = 5.0 * r["values"]["gap"] + 0.001 * r["run"]["seed"] ** 2  # seed by seed too
    card = build(runs)
    assert card.test("sgd", "trace", "kendall_within_batch").p_value > 0.05
    within = card.test("sgd", "lambda_max", "kendall_within_batch")
    assert within.tau == pytest.approx(1.0) and within.p_value == pytest.approx(2 / 6**4)
    assert "Tracking the generalization gap among runs of the same batch size (exploratory): λmax" in card.verdict


def test_an_arm_measured_at_matched_loss_is_tested_there_and_its_endpoints_at_the_final_weights_too():
    runs = results(rising=("trace", "lambda_max"))
    for r in runs:
        b = r["run"]["batch_size"]
        for key, value in list(r["values"].items()):
            r["values"][f"{key}_matched"] = value
        r["values"]["trace_matched"] = -math.log2(b) + 0.01 * r["run"]["seed"]  # reversed at matched loss
        r["values"]["lambda_max_matched"] = -math.log2(b) + 0.01 * r["run"]["seed"]
    settings = {"matched": {"sgd": {"level": 0.01, "note": "the lowest level every run crossed"}}}
    card = build(runs, settings=settings)
    assert "Compared at matched training loss 0.01 (the lowest level every run crossed)" in card.verdict
    trace = card.test("sgd", "trace")
    assert trace.basis == "matched_loss" and trace.tau < 0 and not trace.endpoint
    lam, final = card.test("sgd", "lambda_max"), card.test("sgd", "lambda_max", basis="final")
    assert lam.basis == "matched_loss" and lam.tau < 0 and lam.endpoint and lam in card.confirmatory()
    assert final.tau > 0 and not final.endpoint and final not in card.confirmatory()  # exploratory at final
    assert "λmax (at matched loss) falls with batch size" in card.verdict
    assert "trace_matched" in card.record()["runs"][0]["values"]
    assert "trace_matched" in tables.runs_csv(card).splitlines()[0]


def test_one_batch_size_has_nothing_to_compare():
    one = [r for r in results() if r["run"]["batch_size"] == 64]
    assert "no batch size to compare" in build(one).verdict


def test_too_few_runs_for_any_p_below_alpha_is_said():
    few = results(batches=(16, 1024), seeds=(0, 1))
    v = build(few).verdict
    assert "The smallest p-value that permuting each seed's values among its batch sizes can reach here is 0.5" in v
    assert "1 after Holm's adjustment over 3 endpoint tests" in v  # 2 batch sizes: no Friedman test
    # no order of 4 runs reaches alpha: no measure gets a "smallest detectable" size it could never reach
    assert "smallest detectable" not in v and "no difference of any size could be shown" in v


def test_several_arms_are_tested_apart_and_holm_spans_them():
    runs = results()
    for r in results(seed=1):
        r["run"] = {**r["run"], "recipe": "adam", "name": r["run"]["name"].replace("sgd", "adam")}
        runs.append(r)
    card = build(runs)
    assert {t.arm for t in card.tests} == {"sgd", "adam"}
    assert sum(math.isfinite(t.p_holm) for t in card.confirmatory()) == 12
    assert "Each of the 2 arms (sgd, adam) is tested on its own." in card.verdict and "adam: Endpoints" in card.verdict


def test_endpoints_are_declared_and_checked():
    assert endpoints_of("trace, lambda_max") == ("trace", "lambda_max")
    assert endpoints_of(["trace", "gap,trace"]) == ("trace", "gap")
    with pytest.raises(ConfigError, match=r"endpoints=sharpness: expected measure keys from train_loss, "):
        endpoints_of("trace,sharpness")
    with pytest.raises(ConfigError, match="endpoints"):
        endpoints_of("")
    card = build(results(), endpoints=("trace",))
    assert card.record()["endpoints"] == ["trace"] and card.test("sgd", "trace").endpoint
    assert not card.test("sgd", "lambda_max").endpoint and card.test("sgd", "lambda_max") not in card.confirmatory()


def test_tables_carry_every_number():
    card = build(results())
    rows = list(csv.DictReader(io.StringIO(tables.groups_csv(card))))
    assert [int(r["batch_size"]) for r in rows] == list(BATCHES)
    assert float(rows[0]["lambda_max_mean"]) == pytest.approx(card.groups[0].stats["lambda_max"][0], rel=1e-5)
    runs = list(csv.DictReader(io.StringIO(tables.runs_csv(card))))
    assert len(runs) == 12 and float(runs[0]["trace_stderr"]) == 0.5
    assert float(runs[0]["lambda_max_residual"]) == 2e-4 and runs[-1]["lambda_max_converged"] == "False"
    tests = list(csv.DictReader(io.StringIO(tables.tests_csv(card))))
    assert len(tests) == len(card.tests) and RECORD <= set(tests[0])

    md = tables.markdown(card, description="12 runs.")
    table = [line for line in md.splitlines() if line.startswith("| sgd |")]
    assert len(table) == 4 and all(line.count("|") == len(MEASURES) + 4 for line in table)
    assert " ± " in table[0] and "**Verdict.**" in md and "| λmax | endpoint | **+" in md  # survives Holm: bold
    assert "| trace | exploratory | +" in md
    assert "| Lanczos residual | converged |" in md and "| sgd_b1024_s0 | sgd | 1024 | 0 |" in md and "**no** |" in md

    tex = tables.latex(card)
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == 2
    body = [line for line in tex.splitlines() if line.startswith("sgd &")]
    assert len(body) == 4 and all(line.count("&") == len(MEASURES) + 2 for line in body)
    assert r"\pm" in body[0] and r"$\mathbf{+" in tex and "e-0" not in tex  # 1e-05 as 1\times10^{-5}
    assert "τ" not in tex.split("\\caption")[-1] and "<" not in tex.split("\\caption")[-1].replace("$<$", "")
    assert tables.tex_number(3.6e-05) == r"3.6\times10^{-5}" and tables.tex_number(math.nan) == "--"


def test_left_out_runs_and_runs_away_from_a_minimum_are_said():
    runs = results()
    runs[0]["values"]["train_error"] = 18.0
    card = build(runs, left_out=["sgd_b2048_s0"])
    assert (
        "Caution: 1 of 12 compared networks are not at a minimum (sgd_b16_s0; the flags table says why)" in card.verdict
    )
    assert not_at_minimum(card) == [("sgd_b16_s0", "train error 18.00 % at its final weights")]
    runs[1]["run"]["minimum"] = {"rule": "train loss <= 0.01", "reached": False}
    unreached = build(runs)
    assert not_at_minimum(unreached)[1] == ("sgd_b16_s1", "its training ended before its rule (train loss <= 0.01)")
    assert "Left out (not finished): sgd_b2048_s0." in tables.markdown(card)
    assert "% Left out (not finished): sgd_b2048_s0" in tables.latex(card)
    assert card.record()["left_out"] == ["sgd_b2048_s0"]


def test_searches_that_flagged_their_values_are_named_in_the_verdict_endpoints_first():
    runs = results()
    unconverged = {"notes": ["not converged: the rise grew 3.0% over the last fifth of the search"]}
    runs[0]["details"]["m_sharpness"] = unconverged  # at the final weights
    runs[5]["matched_flags"] = {"adaptive_sharpness": ["no rise above the loss's rounding (1e-07) was found"]}
    card = build(runs)
    assert card.runs[0]["flagged"] == ["m_sharpness"] and card.runs[5]["flagged"] == ["adaptive_sharpness"]
    assert card.record()["runs"][1]["flagged"] == []
    assert (
        "Flagged searches (not converged, or no rise found: those values are lower bounds of the worst case): "
        "adaptive sharpness (an endpoint) in 1 of 12 runs (sgd_b64_s2); m-sharpness in 1 of 12 runs (sgd_b16_s0)."
    ) in card.verdict
    assert "Flagged" not in build(results()).verdict


def test_missing_values_are_dashes():
    assert tables.plus_minus(math.nan, math.nan) == "–" and tables.plus_minus(1.0, math.nan) == "1"
    assert tables.plus_minus(0.12345, 0.0123) == "0.123 ± 0.012"
    assert tables.plus_minus(2.25, 0.0017) == "2.2500 ± 0.0017"  # the mean to the spread's precision
    assert tables.plus_minus(13.0, 3.5) == "13.0 ± 3.5" and tables.plus_minus(2.0, 0.0) == "2 ± 0"
