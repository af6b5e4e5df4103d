"""A training run's ``log.csv`` and ``run.json``: written whole, read back as written, and a log that is not
one of ours refused by line and column."""

import pytest

from landscape.errors import InputError
from landscape.io.run_files import read_log, read_run, write_log, write_run


def test_a_log_and_a_record_round_trip(tmp_path):
    rows = [{"epoch": e, "step": 10 * e, "lr": 0.1, "phase": "rate 0", "train_loss": 1.0 / (e + 1)} for e in range(3)]
    write_log(str(tmp_path), rows)
    back = read_log(str(tmp_path))
    assert [r["step"] for r in back] == ["0", "10", "20"] and back[1]["phase"] == "rate 0"
    assert float(back[2]["train_loss"]) == pytest.approx(1 / 3, rel=1e-5)
    write_run(str(tmp_path), {"identity": {"model": "digits_mlp"}})
    assert read_run(str(tmp_path)) == {"identity": {"model": "digits_mlp"}}
    assert read_log(str(tmp_path / "none")) == [] and read_run(str(tmp_path / "none")) is None


@pytest.mark.parametrize(
    "text, words",
    [
        ("step,epoch\n1,1\n", "starts with 'step,epoch'"),
        ("epoch,step,lr\n1,2.5,0.1\n", "line 2: step='2.5': expected a whole number"),
        ("epoch,step,lr\n1,2,fast\n", "line 2: lr='fast': expected a number (or nan)"),
        ("epoch,step,lr\n1,2\n", "2 values for 3 columns"),
    ],
)
def test_a_log_that_is_not_ours_is_refused_by_line_and_column(tmp_path, text, words):
    (tmp_path / "log.csv").write_text(text)
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_log(str(tmp_path))
