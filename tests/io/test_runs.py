"""Run records in a surface file's fixed slots: numbered runs whose start and end records merge, a ring
that keeps the latest RUN_SLOTS // 2 runs, a torn slot skipped, a record that never outgrows its slot."""

import json

import h5py
import numpy as np
import pytest

from landscape.io import runs
from landscape.io.schema import RUN_SLOT_BYTES, RUN_SLOTS, RUNS


@pytest.fixture
def surface(tmp_path):
    """A file with empty run slots, as a new surface file has them, open for writing."""
    with h5py.File(tmp_path / "s.h5", "w") as f:
        f.create_dataset(RUNS, data=runs.empty_slots())
        yield f


def test_a_runs_start_and_end_records_read_back_as_one_run(surface):
    assert runs.append(surface, "start", {"ranks": 2, "command_line": "landscape surface"}) == 1
    assert runs.append(surface, "end", {"points": 15, "ended": "done"}, run=1) == 1
    assert runs.append(surface, "start", {"ranks": 4}) == 2  # a new run takes the next number
    assert runs.read(surface[RUNS][()]) == [
        {"run": 1, "ranks": 2, "command_line": "landscape surface", "points": 15, "ended": "done"},
        {"run": 2, "ranks": 4},
    ]
    assert surface[RUNS].shape == (RUN_SLOTS,)  # written into slots: the file's structure never changes


def test_the_ring_keeps_the_latest_half_of_the_slots_as_runs(surface):
    for k in range(1, 21):  # 40 records in 32 slots: records 9..40 survive, the runs 5..20
        runs.append(surface, "start", {"n": k})
        runs.append(surface, "end", {"points": k}, run=k)
    kept = runs.read(surface[RUNS][()])
    assert [r["run"] for r in kept] == list(range(21 - RUN_SLOTS // 2, 21))
    assert kept[0] == {"run": 5, "n": 5, "points": 5}
    assert runs.append(surface, "start", {}) == 21


def test_a_torn_or_foreign_slot_is_skipped_and_the_others_read(surface):
    runs.append(surface, "start", {"host": "node1"})
    runs.append(surface, "start", {"host": "node2"})
    surface[RUNS][1] = np.bytes_(b'{"seq": 1, "run": 1, "host": "no')  # a kill in the middle of the write
    surface[RUNS][5] = np.bytes_(json.dumps({"seq": "5", "run": 9}).encode())  # not a record of ours
    surface[RUNS][6] = np.bytes_(b"[1, 2]")
    assert runs.read(surface[RUNS][()]) == [{"run": 2, "host": "node2"}]
    assert runs.append(surface, "start", {}) == 3


def test_a_long_command_line_is_shortened_to_fit_its_slot(surface):
    long = "landscape surface " + "--x=-1:1:5 " * 1000
    runs.append(surface, "start", {"command_line": long, "ranks": 8})
    stored = bytes(surface[RUNS][1]).rstrip(b"\0")
    assert len(stored) <= RUN_SLOT_BYTES
    (run,) = runs.read(surface[RUNS][()])
    assert run["ranks"] == 8 and run["command_line"].endswith(" …(shortened)")
    assert long.startswith(run["command_line"].removesuffix(" …(shortened)"))
    runs.append(surface, "start", {"host": "h" * RUN_SLOT_BYTES})  # too long, and not the command line
    assert runs.read(surface[RUNS][()])[-1] == {"run": 2}  # what identifies the record is kept


@pytest.mark.parametrize(
    "attribute, expected",
    [
        ('[{"ranks": 2}, 3, "x", {"ranks": 4}]', [{"ranks": 2}, {"ranks": 4}]),
        ('{"ranks": 2}', []),
        ("[{", []),
        (None, []),
    ],
)
def test_schema_1s_runs_attribute_reads_as_its_records_or_none(attribute, expected):
    assert runs.read_legacy(attribute) == expected
