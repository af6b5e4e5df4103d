"""The verdict's sentences whose answer is known without a test: the smallest p-value a design can reach,
counted by hand; a design too small for Holm's family; no test set; flagged searches listed three at a
time; an arm compared at its final weights saying why (the tests' own sentences:
tests/report/test_scorecard.py)."""

import math

import pytest

from landscape.report.scorecard import build
from landscape.report.verdict import smallest_p

from synthetic_study import results


def design(batches, seeds):
    return [{"batch_size": b, "seed": s} for b in batches for s in seeds]


@pytest.mark.parametrize(
    "batches, seeds, orders",
    [
        ((16, 256), (0, 1), 2 * 2),  # 2! orders within each of 2 seeds
        ((16, 256), (0, 1, 2), 2**3),
        ((16, 64, 256), (0, 1), 6**2),
        ((16, 128, 1024), (0, 1, 2), 6**3),
    ],
)
def test_the_smallest_reachable_p_is_two_orders_of_all_within_seed_orders(batches, seeds, orders):
    # only the perfect order and its reverse reach the largest |τ|
    assert smallest_p(design(batches, seeds)) == pytest.approx(2 / orders)


def test_a_design_whose_best_p_fails_after_holm_says_so_before_anything_else():
    verdict = build(results(), permutations=200).verdict  # 3 batch sizes x 3 seeds, 6 endpoint tests
    assert verdict.startswith(
        "The smallest p-value that permuting each seed's values among its batch sizes can reach here is 0.0093, "
        "0.056 after Holm's adjustment over 6 endpoint tests, not below 0.05: "
    )
    assert "λmax: no difference of any size could be shown by these tests with this design" in verdict
    assert "smallest detectable: " not in verdict  # no size is promised that no order could show


def test_without_a_test_set_there_is_no_test_error_endpoint_and_no_gap_to_track():
    found = results()
    for r in found:
        r["values"]["test_error"] = r["values"]["gap"] = math.nan
    verdict = build(found, permutations=200).verdict
    assert verdict.startswith("The data set has no test set: there is no test error and no gap to compare.")
    assert "Endpoints (Holm-adjusted over 4 tests, alpha 0.05): λmax rises with batch size" in verdict
    assert "generalization gap" not in verdict and "test error" not in verdict.split("compare.", 1)[1]


def test_flagged_searches_name_three_runs_and_count_the_rest():
    found = results()
    for r in found[:5]:
        r["details"]["m_sharpness"] = {"notes": ["not converged: the rise grew 3.0% over the last fifth"]}
    assert (
        "Flagged searches (not converged, or no rise found: those values are lower bounds of the worst case): "
        "m-sharpness in 5 of 9 runs (naive_b16_s0, naive_b16_s1, naive_b16_s2, …)."
    ) in build(found, permutations=200).verdict


def test_an_arm_without_a_matched_level_is_compared_at_its_final_weights_and_says_why():
    note = "no weights kept at a training loss (naive_b16_s0...: train with --save_at_loss)"
    settings = {"matched": {"naive": {"level": None, "note": note}}}
    verdict = build(results(), permutations=200, settings=settings).verdict
    assert f"Compared at the final weights (no matched loss: {note})." in verdict
    assert "Compared at the final weights." in build(results(), permutations=200).verdict
