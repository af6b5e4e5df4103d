"""Any ``Params`` class as a command line (``cli/params.py``): one argument per field, its flag, help,
default words and heading taken from the field; only the flags typed come back; messages spell each
parameter as the command line does."""

import dataclasses

import pytest

from landscape.cli.params import flags_of, parsed, parser_for
from landscape.errors import UsageError
from landscape.workflows.params import REQUIRED, Params, int_or_auto, option


@dataclasses.dataclass(frozen=True, kw_only=True)
class Toy(Params):
    COMMAND = "toy"
    DESCRIPTION = "A toy command."
    GROUPS = ("input", "output")
    files: tuple[str, ...] = option(REQUIRED, "files to read", positional=True, metavar="FILE", group="input")
    runs: int = option(5, "how many runs", group="input")
    batch: int | str = option("auto", "samples per batch, or auto", parse=int_or_auto, group="input")
    out: str = option(REQUIRED, "where it goes", aliases=("--out_file",), group="output")
    scale: bool | None = option(
        None, switches=(("--log", True, "log scale"), ("--linear", False, "linear scale")), group="output"
    )
    kind: str = option("contour", "what to draw", choices=("contour", "surface"), shown="contour lines")


def test_only_the_flags_typed_come_back_by_parameter_name():
    parser = parser_for(Toy, "landscape toy")
    given = parsed(parser, ["a.h5", "b.h5", "--out_file", "o", "--batch", "64", "--log"])
    assert given == {"files": ["a.h5", "b.h5"], "out": "o", "batch": 64, "scale": True}
    made = Toy.of(given)
    assert (made.runs, made.kind) == (5, "contour")  # not typed: the field's default
    assert made.explicit("batch") and not made.explicit("runs")
    assert parsed(parser, ["a.h5", "--out", "o", "--batch", "auto"])["batch"] == "auto"


def test_a_bad_value_a_missing_flag_or_both_switches_are_one_usage_line():
    parser = parser_for(Toy, "landscape toy")
    with pytest.raises(UsageError, match="invalid value: '6x' \\(expected a positive whole number or auto\\)"):
        parsed(parser, ["a.h5", "--out", "o", "--batch", "6x"])
    with pytest.raises(UsageError, match="required: --out"):
        parsed(parser, ["a.h5"])
    with pytest.raises(UsageError, match="not allowed with argument --log"):
        parsed(parser, ["a.h5", "--out", "o", "--log", "--linear"])
    with pytest.raises(UsageError, match="invalid choice: 'bars'"):
        parsed(parser, ["a.h5", "--out", "o", "--kind", "bars"])


def test_the_help_lists_each_field_under_its_heading_with_its_default_in_words():
    text = parser_for(Toy, "landscape toy").format_help()
    assert "A toy command." in text
    body = text[text.index("options:") :]  # past the usage line
    assert body.index("input:") < body.index("--runs") < body.index("output:") < body.index("--out OUT, --out_file")
    assert "how many runs (default: 5)" in text
    assert "what to draw (default: contour lines)" in text  # ``shown``: the default as words
    assert "where it goes (default" not in text  # required: no default to show


def test_messages_spell_each_parameter_as_the_command_line_does():
    assert flags_of(Toy) == {
        "files": "files",
        "runs": "--runs",
        "batch": "--batch",
        "out": "--out",
        "scale": "--log",
        "kind": "--kind",
    }
