"""The findings in words from a study's record: every number in them is one of the record's, each sentence
names what shows it, exploratory statements are worded so, and the mechanism's claim follows its table."""

from landscape.report.findings import findings

from claims import unfounded
from synthetic_study import card, results


def record(mechanism=()):
    found = results(recipes=("naive", "linear"), mismatch=True, control=True)
    scored = card(found).record()
    scored["study"] = {
        "model": "mnist1d_mlp",
        "data_set": "mnist1d",
        "batch_sizes": [16, 64, 256, 1024],
        "seeds": [0, 1, 2],
        "mechanism": {"table": list(mechanism)},
    }
    return scored


def plateau(run, batch, lr, fraction):
    return {"run": run, "batch_size": batch, "lr": lr, "fraction": fraction, "loss_name": "mse"}


def test_every_number_of_the_findings_is_the_records_and_each_names_its_figure_or_table():
    gd = [plateau(f"gd_lr{lr}_s0", 4000, lr, f) for lr, f in ((0.4, 0.97), (0.8, 1.02), (1.6, 0.95))]
    sgd = [plateau(f"sgd_b256_lr{lr}_s0", 256, lr, f) for lr, f in ((0.4, 0.31), (0.8, 0.34), (1.6, 0.41))]
    scored = record(gd + sgd)
    text = findings(scored)
    assert unfounded(text, scored) == []
    lines = text.strip().splitlines()
    assert all("`study" in line for line in lines)  # each names the file or figure that shows it
    assert "**Mechanism, full-batch gradient descent** (η = 0.4, 0.8, 1.6" in text
    assert "the rate caps the sharpness" in text and "plateau of λmax is 95%–102% of 2(1 + β)/η" in text
    assert "**Mechanism, SGD at batch 256**" in text and "λmax stays below its stability limit" in text
    assert "naive compared at matched training loss 0.01" in text and "**Rescaling control**" in text


def test_a_mechanism_that_is_not_at_its_limit_is_not_said_to_cap_the_sharpness():
    mixed = [plateau("gd_lr0.4_s0", 4000, 0.4, 0.6), plateau("gd_lr0.8_s0", 4000, 0.8, 0.99)]
    text = findings(record(mixed))
    assert "caps" not in text and "not at one place against its limit" in text


def test_the_checker_finds_a_number_the_record_does_not_hold():
    scored = record()
    assert unfounded("λmax rises by +123.456 (95 % interval)", scored) == ["+123.456"]


def test_the_committed_findings_are_those_of_the_committed_record_and_the_readme_cites_only_its_numbers():
    """figures/study_findings.md (which docs/study.md includes) is ``findings`` of figures/study.json, and
    every decimal number or percentage in README.md's findings section is one of that record's."""
    import json

    from conftest import ROOT

    record = json.loads((ROOT / "figures" / "study.json").read_text())
    assert (ROOT / "figures" / "study_findings.md").read_text() == findings(record)
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## What the built-in study finds", 1)[1].split("\n## ", 1)[0]
    assert unfounded(section, record) == []
    assert "exploratory" not in section.lower()  # nothing exploratory on the front page
    study_page = (ROOT / "docs" / "study.md").read_text()
    assert '--8<-- "figures/study_findings.md"' in study_page


def test_the_committed_study_compares_networks_at_a_minimum_matched_within_five_percent_with_converged_endpoints():
    """Issue 41's bar for the committed study: no compared network above 1 % training error or short of its
    stop rule, every matched network's measured loss within 5 % below its level, no endpoint search left
    unconverged, a record that says what was studied, and training logs small enough to commit."""
    import json

    from landscape.report.minimum import away

    from conftest import ROOT

    record = json.loads((ROOT / "figures" / "study.json").read_text())
    compared = [r for r in record["runs"] if not r.get("control")]
    assert away(record["runs"]) == []
    for run in compared:
        matched = run["matched"]
        assert matched["checkpoint"] and matched["off"] is None, (run["name"], matched)
        assert 0.95 * matched["level"] <= matched["measured_loss"] <= matched["level"] * 1.0001
        assert not set(run["flagged"]) & set(record["endpoints"]), run["name"]
    study = record["study"]
    assert study["data_set"] == "mnist1d" and study["model"] == "mnist1d_mlp"
    for given in study["arms"].values():
        assert {"lr", "momentum", "milestones"} <= set(given["given"]) and given["resolved_by_batch"]
    assert study["versions"]["torch_version"] and study["machine"]["cpu"]
    assert (ROOT / "figures" / "study_training.csv").stat().st_size < 1_000_000
