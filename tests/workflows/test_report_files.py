"""The report's files checked before any work (``check_outputs``): every table, the interpolation record and
the files a study adds, refused over an input whatever ``force`` says and over a kept kind without it; a
figure never over a kept kind.  And the flags table's rows, from made-up results (the report end to end:
tests/workflows/test_report.py; the command line's refusals: tests/io/test_outputs.py)."""

import json

import pytest

from landscape.errors import InputError
from landscape.workflows.report_files import OUTPUT_FILES, _flags, check_outputs

from synthetic_study import card, results

RUN_RECORD = json.dumps({"identity": {"seed": 0}, "done": True})  # what io.outputs calls a run record


def test_a_figures_folder_not_made_yet_has_nothing_to_replace(tmp_path):
    check_outputs(str(tmp_path / "not_yet"), "card", {}, force=False)
    assert not (tmp_path / "not_yet").exists()  # checked, not made


@pytest.mark.parametrize("pattern", [*OUTPUT_FILES, "{name}_interpolation.json", "{name}_mechanism.csv"])
def test_every_table_is_refused_over_a_kept_kind_unless_forced_and_over_an_input_always(tmp_path, pattern):
    path = tmp_path / pattern.format(name="card")
    path.write_text(RUN_RECORD)
    more = ("{name}_mechanism.csv",)  # a study's own files
    with pytest.raises(InputError, match=f"{path} is an existing run record; expected a new path"):
        check_outputs(str(tmp_path), "card", {}, force=False, more=more)
    check_outputs(str(tmp_path), "card", {}, force=True, more=more)
    with pytest.raises(InputError, match=f"{path} is this command's input manifest"):
        check_outputs(str(tmp_path), "card", {"manifest": [str(path)]}, force=True, more=more)


def test_a_figure_of_the_report_s_name_is_never_written_over_a_kept_kind(tmp_path):
    (tmp_path / "card_measures.pdf").write_text(RUN_RECORD)
    (tmp_path / "other.png").write_text(RUN_RECORD)  # not this report's
    with pytest.raises(InputError, match=r"figure .*card_measures.pdf: an existing run record is there"):
        check_outputs(str(tmp_path), "card", {}, force=True)
    check_outputs(str(tmp_path), "other_card", {}, force=False)


def test_the_flags_table_lists_each_network_and_value_a_statement_must_be_read_with():
    found = results(batches=(16, 1024), seeds=(0,))
    found[0]["values"]["train_error"] = 4.0
    found[0]["details"]["m_sharpness"] = {"notes": ["not converged: grew 3.0%"]}
    found[1]["matched"] = {"level": 0.01, "off": "its training loss 0.02 is not within 5 % below the matched level"}
    found[1]["matched_flags"] = {"adaptive_sharpness": ["no rise above the loss's rounding (1e-07) was found"]}
    assert _flags(found, card(found)) == [
        ("naive_b16_s0", "training and the points compared", "not at a minimum",
         "train error 4.00 % at its final weights"),
        ("naive_b16_s0", "final weights", "m-sharpness", "not converged: grew 3.0%"),
        ("naive_b1024_s0", "matched loss 0.01", "train loss",
         "its training loss 0.02 is not within 5 % below the matched level"),
        ("naive_b1024_s0", "matched loss", "adaptive sharpness", "no rise above the loss's rounding (1e-07) was found"),
    ]  # fmt: skip
    assert _flags(results(), card(results())) == []
