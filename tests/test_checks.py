"""The checks every configuration shares: whole numbers, bounded numbers, choices, and the JSON reader.

A value is shown as Python writes it, so the string "10" reads as '10' and is never taken for 10; a bool
is never a number.
"""

import math

import pytest

from landscape.checks import as_whole, json_loads, number, one_of, whole
from landscape.errors import ConfigError


def test_a_whole_number_in_range_comes_back_as_it_was_given():
    assert whole("epochs", 1) == 1
    assert whole("seed", 0, least=0) == 0
    assert whole("rank", 7, least=0, most=7) == 7


@pytest.mark.parametrize(
    "value, bounds, message",
    [
        (0, {}, "batch_size=0: expected a positive whole number"),
        ("10", {}, "batch_size='10': expected a positive whole number"),  # a string, shown as one
        (True, {}, "batch_size=True: expected a positive whole number"),  # a bool is not 1
        (2.0, {}, "batch_size=2.0: expected a positive whole number"),
        (-1, {"least": 0}, "batch_size=-1: expected a whole number >= 0"),
        (9, {"least": 1, "most": 8}, "batch_size=9: expected a whole number from 1 to 8"),
        (3, {"least": 4, "expected": "a multiple of 4"}, "batch_size=3: expected a multiple of 4"),
    ],
)
def test_a_whole_number_out_of_range_or_of_another_type_is_refused_by_name(value, bounds, message):
    with pytest.raises(ConfigError) as caught:
        whole("batch_size", value, **bounds)
    assert str(caught.value) == message and caught.value.field == "batch_size"


@pytest.mark.parametrize(
    "value, bounds, message",
    [
        (0.0, {"above": 0}, "lr=0.0: expected a positive number"),
        (1, {"above": 0, "below": 1}, "lr=1: expected a number strictly between 0 and 1"),
        (-0.5, {"least": 0}, "lr=-0.5: expected a number >= 0"),
        (2.5, {"least": 1, "below": 2}, "lr=2.5: expected a number >= 1 and < 2"),
        (math.nan, {"least": 0}, "lr=nan: expected a number >= 0"),  # NaN and inf are never numbers here
        (math.inf, {"above": 0}, "lr=inf: expected a positive number"),
        (False, {"least": 0}, "lr=False: expected a number >= 0"),
    ],
)
def test_a_number_outside_its_bounds_is_refused_with_the_bounds_in_words(value, bounds, message):
    with pytest.raises(ConfigError) as caught:
        number("lr", value, **bounds)
    assert str(caught.value) == message


def test_a_number_on_an_inclusive_bound_passes_and_on_a_strict_one_fails():
    assert number("momentum", 0, least=0) == 0
    assert number("momentum", 0.5, above=0, below=1) == 0.5
    with pytest.raises(ConfigError):
        number("momentum", 0, above=0)


@pytest.mark.parametrize(
    "value, expected",
    [
        (16, 16),
        (16.0, 16),  # JSON's 16.0
        (" 16 ", 16),  # CSV's "16", padded
        ("-3", -3),
        ("+3", 3),
        ("9" * 30, int("9" * 30)),
        ("9" * 31, None),  # longer than any whole number a file of ours holds
        (True, None),
        (2.5, None),
        ("16x", None),
        ("1e3", None),
        (math.inf, None),
        (None, None),
    ],
)
def test_a_whole_number_as_a_file_writes_it(value, expected):
    assert as_whole(value) == expected


def test_one_of_lists_the_choices():
    assert one_of("norm", "filter", ["filter", "layer"]) == "filter"
    with pytest.raises(ConfigError) as caught:
        one_of("norm", "Filter", ("filter", "layer", "none"))
    assert str(caught.value) == "norm=Filter: expected one of filter, layer, none"


def test_json_nested_too_deeply_is_malformed_json_not_a_recursion_error():
    assert json_loads(b'{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    with pytest.raises(ValueError, match="JSON nested too deeply to read"):
        json_loads("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError):
        json_loads("{'single': 'quotes'}")
