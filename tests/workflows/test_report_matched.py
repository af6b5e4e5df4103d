"""A report's runs beyond their final weights: each arm's matched level (off, given or chosen; the rescaled
copies are no arm), two checkpoints compared weight by weight, a run without weights at its level
recorded with why, and a stop signal inside a measurement (the level chosen: tests/report/test_matching.py;
the report end to end: tests/workflows/test_report.py)."""

from types import SimpleNamespace

import pytest
import torch

from landscape.errors import Stopped
from landscape.io.checkpoint import save
from landscape.parallel import stop
from landscape.report.runs import Run
from landscape.workflows.report_matched import ABANDONED, add_matched, levels_of, same_weights, unless_stopped


def crossing(level, phase="rate 0"):
    return {"level": level, "file": f"loss_{level:g}.pt", "step": 100, "fraction": 1.0, "phase": phase,
            "train_loss": 0.98 * level}  # fmt: skip


def run(tmp_path, name, recipe, levels):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "final.pt").write_bytes(b"")
    crossings = tuple(crossing(level) for level in levels)
    return Run(name, recipe, 16, 0, str(folder / "final.pt"), None, None, crossings=crossings, phase="rate 0")


def nn_checkpoint(path, scale=1.0) -> str:
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2)
    with torch.no_grad():
        net.weight.mul_(scale)
    save(net, str(path))
    return str(path)


def test_each_arm_gets_its_level_and_a_rescaled_copy_is_no_arm(tmp_path):
    copy = tmp_path / "copy.pt"
    torch.save({"state_dict": {}, "rescaled": {"from_sha256": "ab", "alpha": 4.0}}, copy)
    runs = [run(tmp_path, "a", "naive", [0.1, 0.03]), run(tmp_path, "b", "naive", [0.1]),
            run(tmp_path, "c", "linear", [0.3]), Run("copy", "rescaled", 16, 0, str(copy), None, None)]  # fmt: skip
    chosen = levels_of(SimpleNamespace(match_loss="auto"), runs)
    assert list(chosen) == ["naive", "linear"]  # the copy is measured beside its original, not as an arm
    assert chosen["naive"].level == 0.1 and chosen["linear"].level == 0.3
    given = levels_of(SimpleNamespace(match_loss="0.05"), runs)
    assert {arm: (level.level, level.note) for arm, level in given.items()} == {
        "naive": (0.05, "given"),
        "linear": (0.05, "given"),
    }
    assert levels_of(SimpleNamespace(match_loss="off"), runs) == {}


def test_two_checkpoints_hold_the_same_weights_only_when_every_tensor_is_equal(tmp_path):
    a, b = nn_checkpoint(tmp_path / "a.pt"), nn_checkpoint(tmp_path / "b.pt")
    assert same_weights(a, b)
    assert not same_weights(a, nn_checkpoint(tmp_path / "c.pt", scale=1.0 + 1e-6))


def test_a_run_without_weights_at_its_level_keeps_why_and_no_matched_values(tmp_path, capsys):
    lost = run(tmp_path, "a", "naive", [0.1])  # its loss_0.1.pt never written
    result = {"values": {"lambda_max": 2.0}}
    add_matched(result, lost, None, None, SimpleNamespace(out=str(tmp_path)), 0.1)
    note = f"its kept weights {tmp_path}/a/loss_0.1.pt are missing"
    assert {k: result["matched"][k] for k in ("level", "checkpoint", "step", "note")} == {
        "level": 0.1,
        "checkpoint": None,
        "step": 100,
        "note": note,
    }
    assert result["values"] == {"lambda_max": 2.0}  # no <key>_matched
    assert capsys.readouterr().out == f"  matched loss: a: {note}\n"


def test_a_stop_inside_a_measurement_abandons_it_only_under_the_command_s_own_handler(monkeypatch):
    def stopped(*args):
        raise Stopped("stopped inside a surface")

    assert unless_stopped(lambda a, b: a + b, 2, 3) == 5
    monkeypatch.setattr(stop, "_installed", None)  # the surface's own handler: stop as it did
    with pytest.raises(Stopped):
        unless_stopped(stopped)
    monkeypatch.setattr(stop, "_installed", SimpleNamespace(received="SIGTERM"))
    assert unless_stopped(stopped) is ABANDONED
