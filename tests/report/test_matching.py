"""Per arm, the matched training loss: the lowest level every run kept weights at in the phase it ended
in (or one given); each run's kept checkpoint there, or why it has none; the measured loss checked
against the level."""

import math

from landscape.report.matching import choose, has_matched, matched, off_level, values_of
from landscape.report.runs import Run


def crossing(level, step, phase="rate 0", loss=None):
    return {"level": level, "file": f"loss_{level:g}.pt", "step": step, "fraction": 1.0, "lr": 0.1,
            "phase": phase, "train_loss": loss if loss is not None else 0.98 * level, "train_error": 0.0}  # fmt: skip


def run(tmp_path, name, crossings, phase="rate 0", files=True):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "final.pt").write_bytes(b"")
    for c in crossings if files else ():
        (folder / c["file"]).write_bytes(b"")
    return Run(name, "naive", 16, 0, str(folder / "final.pt"), None, None, crossings=tuple(crossings), phase=phase)


def test_the_arms_level_is_the_lowest_every_run_crossed_in_its_last_phase(tmp_path):
    a = run(tmp_path, "a", [crossing(0.1, 100), crossing(0.03, 200), crossing(0.01, 300)])
    b = run(tmp_path, "b", [crossing(0.1, 50), crossing(0.03, 80)])  # never reached 0.01
    c = run(tmp_path, "c", [crossing(0.1, 10, "rate 0"), crossing(0.03, 900, "rate 1")], phase="rate 1")
    assert choose([a, b]).level == 0.03
    level = choose([a, b, c])  # c crossed 0.1 before its rate dropped: only 0.03 is in its last phase
    assert level.level == 0.03 and "last learning-rate phase" in level.note
    assert choose([a, run(tmp_path, "d", [crossing(0.1, 5, "rate 0")], phase="rate 1")]).level is None
    assert (
        choose([a, run(tmp_path, "e", [])]).level is None
        and "--save_at_loss" in choose([a, run(tmp_path, "f", [])]).note
    )
    assert choose([a], given=0.1).level == 0.1


def test_a_runs_kept_weights_at_the_level_or_why_it_has_none(tmp_path):
    a = run(tmp_path, "a", [crossing(0.1, 100), crossing(0.01, 300, loss=0.0099)])
    found = matched(a, 0.01)
    assert found.checkpoint.endswith("a/loss_0.01.pt") and (found.step, found.train_loss, found.phase) == (
        300,
        0.0099,
        "rate 0",
    )
    assert matched(a, 0.003).checkpoint is None and "kept no weights at train loss 0.003" in matched(a, 0.003).note
    c = run(tmp_path, "c", [crossing(0.1, 10, "rate 0")], phase="rate 1")
    assert matched(c, 0.1).checkpoint is None and "in phase rate 0, not in rate 1" in matched(c, 0.1).note
    gone = run(tmp_path, "g", [crossing(0.1, 10)], files=False)
    assert matched(gone, 0.1).checkpoint is None and "missing" in matched(gone, 0.1).note


def test_the_measured_loss_must_be_the_level_to_within_five_percent_below():
    assert off_level(0.0096, 0.01) is None and off_level(0.01, 0.01) is None
    assert "not within 5 % below" in off_level(0.009, 0.01) and off_level(0.0102, 0.01) is not None
    assert off_level(math.nan, 0.01) is not None


def test_values_at_matched_loss_where_an_arm_has_them():
    runs = [{"values": {"lambda_max": 2.0, "lambda_max_matched": 5.0}}, {"values": {"lambda_max": 3.0}}]
    assert has_matched(runs) and values_of(runs, "lambda_max", True)[1] == "matched_loss"
    assert values_of(runs, "lambda_max", True)[0][0] == 5.0 and math.isnan(values_of(runs, "lambda_max", True)[0][1])
    assert values_of(runs, "lambda_max", False) == ([2.0, 3.0], "final")
