"""What the commands share: ``fields_of`` picks a configuration's own parameters; a result's record is strict
JSON (NaN and infinities as null, NumPy values as Python's, tuples as lists, keys as text), leaving out the
fields declared ``repr=False``."""

import dataclasses
import json
import math

import numpy as np

from landscape.workflows.command import Result, fields_of, plain


@dataclasses.dataclass(frozen=True)
class Grid:
    num: int
    lo: float = -1.0


@dataclasses.dataclass(frozen=True)
class Done(Result):
    files: list
    loss: float
    grid: Grid
    by_point: dict
    values: np.ndarray = dataclasses.field(default=None, repr=False)  # read back from a file: not recorded


def test_a_configuration_takes_only_its_own_fields():
    given = {"num": 5, "lo": -2.0, "model": "digits_mlp", "quiet": True}
    assert fields_of(given, Grid) == {"num": 5, "lo": -2.0}
    assert Grid(**fields_of(given, Grid)) == Grid(5, -2.0)
    assert fields_of({"model": "x"}, Grid) == {}


def test_plain_values_are_what_strict_json_holds():
    assert plain(math.nan) is None and plain(-math.inf) is None and plain(np.float32(np.inf)) is None
    assert plain(np.int64(3)) == 3 and type(plain(np.int64(3))) is int
    assert plain(np.float64(0.25)) == 0.25 and type(plain(np.float64(0.25))) is float
    assert plain((1, (2, 3))) == [1, [2, 3]] and plain(np.array([[1.0, np.nan]])) == [[1.0, None]]
    assert plain({1: "a", (0.5): [np.nan]}) == {"1": "a", "0.5": [None]}


def test_a_result_s_record_and_json_leave_out_arrays_and_write_nan_as_null():
    done = Done(("a.h5", "b.h5"), math.nan, Grid(3), {0: np.float64(1.5)}, np.zeros(4))
    record = done.record()
    assert record == {"files": ["a.h5", "b.h5"], "loss": None, "grid": {"num": 3, "lo": -1.0}, "by_point": {"0": 1.5}}

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    assert json.loads(done.json(), parse_constant=refuse) == record
