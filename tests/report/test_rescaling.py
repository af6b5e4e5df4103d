"""The rescaling control: a rescaled network paired with the one it came from by checkpoint SHA-256, each
measure's largest relative change, and the sentence the verdict takes."""

import math

from landscape.report.catalogue import MEASURES
from landscape.report.rescaling import CHANGED, control, sentence


def result(sha: str, values: dict, origin: str | None = None) -> dict:
    out = {"checkpoint_sha256": sha, "values": {m.key: 1.0 for m in MEASURES} | values}
    if origin:
        out["rescaled"] = {"from_sha256": origin, "alpha": 4.0}
    return out


def test_pairs_are_found_by_checksum_and_changes_are_relative():
    results = [
        result("a", {"lambda_max": 2.0}),
        result("b", {"lambda_max": 3.0}),
        result("a4", {"lambda_max": 2.0 / 16}, origin="a"),
        result("b4", {"lambda_max": 3.0 / 16, "trace": 1.0 + CHANGED / 10}, origin="b"),
        result("x4", {"lambda_max": 5.0}, origin="missing"),  # its original is not measured: no pair
    ]
    records = {r["measure"]: r for r in control(results)}
    assert records["lambda_max"]["pairs"] == 2 and records["lambda_max"]["changed"] is True
    assert math.isclose(records["lambda_max"]["largest_change"], 15 / 16)
    assert records["trace"]["changed"] is False and records["train_loss"]["largest_change"] == 0.0
    assert records["lambda_max"]["flag"] == "no" and records["adaptive_sharpness"]["flag"] == "yes"
    words = sentence(list(records.values()))
    assert "2 networks rescaled by α = 4" in words and "λmax (93.8 %)" in words


def test_no_rescaled_run_no_control():
    assert control([result("a", {})]) == [] and sentence([]) == ""
