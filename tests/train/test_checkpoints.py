"""A training run's files written and read back: names that sort in training order, compact float32
weights beside full-precision resumable state, a damaged ``latest.pt`` refused by name, and a resume
refused when any setting of the stored run differs."""

import os

import pytest
import torch

from landscape.errors import InputError, MismatchError
from landscape.train.checkpoints import (
    FINAL,
    LATEST,
    check_same_run,
    compact,
    epoch_name,
    load_latest,
    save_latest,
    save_weights,
    step_name,
)


def state():
    return {
        "w": torch.tensor([[1.0 + 2**-40, -2.0]], dtype=torch.float64),
        "steps": torch.tensor(7),
    }


def test_file_names_sort_in_training_order():
    assert epoch_name(1) == "epoch_0001.pt" and step_name(100) == "step_0000100.pt"
    assert sorted([epoch_name(e) for e in (10, 2, 1)]) == [epoch_name(1), epoch_name(2), epoch_name(10)]
    assert (LATEST, FINAL) == ("latest.pt", "final.pt")


def test_weights_files_hold_float32_copies_and_latest_the_exact_state(tmp_path):
    s = state()
    small = compact(s)
    assert small["w"].dtype == torch.float32 and small["steps"].dtype == torch.int64
    small["w"].zero_()
    assert s["w"][0, 1] == -2.0  # a copy, not a view
    path = save_weights(str(tmp_path), epoch_name(3), s, {"epoch": 3})
    assert path == os.path.join(str(tmp_path), "epoch_0003.pt")
    written = torch.load(path, weights_only=True)
    assert written["meta"] == {"epoch": 3} and torch.equal(written["state_dict"]["w"], torch.tensor([[1.0, -2.0]]))
    save_latest(str(tmp_path), s, {"epoch": 3}, [{"rank": 0}, {"rank": 1}])
    latest = load_latest(str(tmp_path))
    assert latest["state_dict"]["w"].dtype == torch.float64 and torch.equal(latest["state_dict"]["w"], s["w"])
    assert latest["ranks"] == [{"rank": 0}, {"rank": 1}] and latest["meta"] == {"epoch": 3}
    assert sorted(os.listdir(tmp_path)) == ["epoch_0003.pt", "latest.pt"]  # no temporary left behind


def test_no_latest_state_is_a_fresh_run_and_a_damaged_one_is_refused_naming_it(tmp_path):
    assert load_latest(str(tmp_path)) is None
    (tmp_path / LATEST).write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(
        InputError, match=r"latest\.pt cannot be read .*it is damaged: remove it to start the run again"
    ):
        load_latest(str(tmp_path))


def test_a_resume_with_any_other_setting_is_refused_naming_it_and_both_values():
    stored = {"meta": {"identity": {"lr": 0.1, "seed": 0, "recipe": "sgd"}}}
    check_same_run(stored, {"lr": 0.1, "seed": 0, "recipe": "sgd"}, "run")
    with pytest.raises(MismatchError, match=r"^run holds a run with seed=0, not 1; rerun with its settings"):
        check_same_run(stored, {"lr": 0.1, "seed": 1, "recipe": "sgd"}, "run")
    with pytest.raises(MismatchError, match=r"holds a run with warmup_epochs=None, not 5;"):
        check_same_run(stored, {"lr": 0.1, "seed": 0, "recipe": "sgd", "warmup_epochs": 5}, "run")
