"""The settings ``auto`` measured, remembered in the user's cache folder (``surface/choices.py``): the key
is what the speed depends on, a damaged file is an empty one, and the next job on the same problem takes
the choice without measuring."""

import json

import torch
from torch import nn

from landscape.data.samples import Samples
from landscape.io.surface_file import read as read_surface
from landscape.surface import choices, cost, tuning

from conftest import landscape

GIVEN = {"loss": "crossentropy", "dtype": "float32", "bn": None, "kernel": "auto", "batch_size": "auto"}


def sets(n: int = 10, width: int = 4) -> dict:
    return {"train": Samples(torch.zeros(n, width), torch.zeros(n, dtype=torch.long))}


def test_the_key_is_what_the_speed_depends_on_and_never_the_ranks():
    model = nn.Linear(4, 2)
    one = choices.key(model, sets(), "cpu", 2, GIVEN)
    assert one == choices.key(nn.Linear(4, 2), sets(), "cpu", 2, GIVEN)  # other weights, same shapes
    others = [
        choices.key(nn.Linear(4, 3), sets(), "cpu", 2, GIVEN),
        choices.key(model, sets(n=11), "cpu", 2, GIVEN),
        choices.key(
            model, {"train": Samples(torch.zeros(10, 4, dtype=torch.float64), torch.zeros(10))}, "cpu", 2, GIVEN
        ),
        choices.key(model, sets(), "cpu", 1, GIVEN),
        choices.key(model, sets(), "cpu", 2, {**GIVEN, "batch_size": 64}),
        choices.key(model, sets(), "cpu", 2, {**GIVEN, "dtype": "float64"}),
    ]
    assert len({one, *others}) == 1 + len(others)


def test_a_missing_or_damaged_file_remembers_nothing_and_a_kept_choice_comes_back(tmp_path):
    path = str(tmp_path / "cache" / "choices.json")
    assert choices.recalled("k", path) is None  # no file
    chosen = {"kernel": "reference", "batch_size": 512, "points_per_pass": 4}
    choices.remember("k", chosen, path)
    assert choices.recalled("k", path) == chosen and choices.recalled("other", path) is None
    stored = json.loads(open(path).read())
    for damaged in (b"{not json", b"[1, 2]", b'{"k": {"kernel": 1, "batch_size": 512, "points_per_pass": 4}}',
                    b'{"k": {"kernel": "reference", "batch_size": 0, "points_per_pass": 4}}',
                    b'{"k": {"kernel": "reference", "batch_size": true, "points_per_pass": 4}}'):  # fmt: skip
        open(path, "wb").write(damaged)
        assert choices.recalled("k", path) is None, damaged
    choices.remember("k", chosen, path)  # written afresh over the damaged file
    assert choices.recalled("k", path) == chosen and set(stored["k"]) == {*choices.FIELDS, "saved"}


def test_only_the_latest_choices_are_kept_and_a_failed_write_is_let_go(tmp_path, monkeypatch):
    monkeypatch.setattr(choices, "KEPT", 3)
    path = str(tmp_path / "choices.json")
    for i in range(5):
        choices.remember(f"k{i}", {"kernel": "reference", "batch_size": 16 + i, "points_per_pass": 1}, path)
    assert list(json.loads(open(path).read())) == ["k2", "k3", "k4"]
    (tmp_path / "file").write_text("")
    choices.remember("k", {"kernel": "reference", "batch_size": 16, "points_per_pass": 1}, str(tmp_path / "file" / "c"))


def test_a_measured_choice_is_taken_by_the_next_job_on_the_same_problem_without_measuring(
    tmp_path, capsys, monkeypatch, session_cache
):
    monkeypatch.setattr(tuning, "BUDGET", 1.0)
    monkeypatch.setattr(cost, "MEASURE_AFTER", 0.0)  # a surface this small is not worth measuring otherwise
    args = ["surface", "--model", "digits_mlp", "--x=-1:1:21", "--no_test", "--threads", "1"]
    assert landscape(*args, "--surf_file", tmp_path / "a.h5") == 0
    assert "measured in a budget of" in capsys.readouterr().out
    first = read_surface(str(tmp_path / "a.h5")).run
    assert (session_cache / "choices.json").exists()
    assert landscape(*args, "--surf_file", tmp_path / "b.h5") == 0  # a new file: nothing recorded in it
    out = capsys.readouterr().out
    assert "as measured before for this model, data, device and threads" in out and "measured in a budget" not in out
    second = read_surface(str(tmp_path / "b.h5")).run
    assert {k: second[k] for k in choices.FIELDS} == {k: first[k] for k in choices.FIELDS}
    assert landscape(*args, "--threads", "2", "--surf_file", tmp_path / "c.h5") == 0  # other threads: measured
    assert "measured in a budget of" in capsys.readouterr().out
