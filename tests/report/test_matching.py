"""Matched-loss checkpoints: the first saved checkpoint of a run at or below a training loss, found from
its log; a run that never gets there, or saved nothing there, says so."""

import math

from landscape.report.matching import final_loss, matched_checkpoint


def run_folder(tmp_path, losses: list[float], saved: list[str], by_step: bool = False):
    folder = tmp_path / "run"
    folder.mkdir()
    lines = ["epoch,step,train_loss"] + [f"{i + 1},{10 * (i + 1)},{v}" for i, v in enumerate(losses)]
    (folder / "log.csv").write_text("\n".join(lines) + "\n")
    for name in saved + ["final.pt"]:
        (folder / name).write_bytes(b"")
    return folder / "final.pt"


def test_the_first_saved_checkpoint_at_or_below_the_target(tmp_path):
    final = run_folder(tmp_path, [2.0, 0.5, 0.2, 0.1], ["epoch_0001.pt", "epoch_0003.pt", "epoch_0004.pt"])
    found = matched_checkpoint(str(final), 0.3)
    assert found.checkpoint.endswith("epoch_0003.pt") and (found.epoch, found.step, found.train_loss) == (3, 30, 0.2)
    assert final_loss(str(final)) == 0.1
    # only the last row is that low: the network given is the one at the matched loss, not a copy of it
    last = matched_checkpoint(str(final), 0.1)
    assert last.checkpoint == str(final) and (last.epoch, last.train_loss, last.note) == (4, 0.1, "its final weights")


def test_checkpoints_by_step_are_found_too(tmp_path):
    final = run_folder(tmp_path, [2.0, 0.5, 0.4], ["step_0000010.pt", "step_0000020.pt"])
    assert matched_checkpoint(str(final), 1.0).checkpoint.endswith("step_0000020.pt")


def test_a_run_that_never_gets_there_or_saved_nothing_there_says_so(tmp_path):
    final = run_folder(tmp_path, [2.0, 0.5, 0.2, 0.1], ["epoch_0001.pt"])
    never = matched_checkpoint(str(final), 0.05)
    assert never.checkpoint is None and "never reached train loss 0.05" in never.note and "0.1" in never.note
    # a checkpoint other than final.pt: its last row is not known to be its weights
    unsaved = matched_checkpoint(str(final.parent / "latest.pt"), 0.3)
    assert unsaved.checkpoint is None and "saved no weights" in unsaved.note


def test_a_checkpoint_without_a_log_has_no_training_path(tmp_path):
    (tmp_path / "x.pt").write_bytes(b"")
    assert math.isnan(final_loss(str(tmp_path / "x.pt")))
    assert "no log.csv" in matched_checkpoint(str(tmp_path / "x.pt"), 1.0).note
