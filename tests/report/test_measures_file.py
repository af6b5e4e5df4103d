"""``measures.json`` read back (``cached``) from files written by hand: absent, it asks for a measurement;
as written, it is reused; unreadable, measured as another network or from another checkpoint, it is
refused with the path and what differs; its digest covers everything but itself (other settings and an
edited value, through ``measure_run``: tests/report/test_measures.py)."""

import json
from dataclasses import asdict

import pytest

from landscape.errors import InputError, MismatchError
from landscape.report.measure_config import MeasureConfig, Target
from landscape.report.measures_file import RECORD_DIGEST, cached, digest, run_record
from landscape.report.runs import Run

CONFIG = MeasureConfig(grid_1d="-1:1:5", grid_2d="-1:1:5")
RUN = Run("sgd_b16_s0", "sgd", 16, 0, "/runs/sgd_b16_s0/final.pt", "digits_mlp", "digits")
TARGET = Target("digits_mlp", "digits", device="cuda:0", threads=4)


def measured(path, **changed) -> dict:
    """A record as ``measure_run`` writes it (``changed``: fields replaced before the digest is taken)."""
    record = {
        "run": run_record(RUN),
        "target": {k: v for k, v in asdict(TARGET).items() if k != "threads"},
        "checkpoint_sha256": "ab" * 32,
        "settings": CONFIG.record(),
        "values": {"lambda_max": 3.5, "train_loss": 0.01},
        **changed,
    }
    record[RECORD_DIGEST] = digest(record)
    path.write_text(json.dumps(record, indent=2))
    return record


def test_no_file_asks_for_a_measurement_and_an_untouched_one_is_reused(tmp_path):
    path = tmp_path / "measures.json"
    assert cached(str(path), CONFIG, "ab" * 32, RUN, TARGET) is None
    record = measured(path)
    on_cpu = Target("digits_mlp", "digits", device="cpu")  # where it runs is not what it measured
    assert cached(str(path), CONFIG, "ab" * 32, RUN, on_cpu) == record


def test_a_file_that_is_not_a_record_names_itself_and_the_run_to_measure_again(tmp_path):
    path = tmp_path / "measures.json"
    path.write_text('{"values": ')
    with pytest.raises(InputError, match=f"{path} cannot be read .*; remove it to measure sgd_b16_s0 again"):
        cached(str(path), CONFIG, "ab" * 32, RUN, TARGET)
    path.write_text("[1, 2]")
    with pytest.raises(InputError, match=f"{path} holds no measurement record; remove it to measure sgd_b16_s0"):
        cached(str(path), CONFIG, "ab" * 32, RUN, TARGET)


def test_another_network_or_checkpoint_is_refused_with_what_differs(tmp_path):
    path = tmp_path / "measures.json"
    measured(path)
    wide = Target("digits_mlp", "digits", model_args='{"width": 64}')
    with pytest.raises(
        MismatchError, match="""another network or data set \\(model_args '' there, '{"width": 64}' now\\)"""
    ):
        cached(str(path), CONFIG, "ab" * 32, RUN, wide)  # the same names, other factory arguments
    with pytest.raises(MismatchError, match="model 'digits_mlp' there, 'digits_cnn' now"):
        cached(str(path), CONFIG, "ab" * 32, RUN, Target("digits_cnn", "digits"))
    with pytest.raises(MismatchError, match="from another checkpoint than /runs/sgd_b16_s0/final.pt .*retrained"):
        cached(str(path), CONFIG, "cd" * 32, RUN, TARGET)


def test_the_digest_covers_every_field_but_itself_in_any_key_order():
    record = {"values": {"trace": 1.0, "lambda_max": 2.0}, "checkpoint_sha256": "x"}
    reordered = {"checkpoint_sha256": "x", "values": {"lambda_max": 2.0, "trace": 1.0}}
    assert digest(record) == digest(reordered) == digest({**record, RECORD_DIGEST: "anything"})
    assert digest(record) != digest({**record, "values": {"trace": 1.0, "lambda_max": 2.0000001}})
    assert len(digest(record)) == 64 and int(digest(record), 16) >= 0  # SHA-256 in hex


def test_a_run_s_record_holds_plain_values():
    kept = Run("a", "sgd", 16, 0, "/c.pt", None, None, crossings=({"level": 0.1},), minimum={"rule": "r"})
    record = run_record(kept)
    assert record["crossings"] == [{"level": 0.1}] and record["minimum"] == {"rule": "r"}  # a tuple as a list
    assert json.loads(json.dumps(record)) == record
