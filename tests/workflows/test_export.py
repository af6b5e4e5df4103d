"""``landscape export`` as a function, on surface files written here: without ``out`` each file's export goes
beside it, its kind by its dimension; two inputs of one name into one folder, a label count that is not
the file count and a height cap that is not a positive number are refused before anything is written (the
files' contents and the command line's refusals: tests/io/test_paraview.py, tests/plotting/test_interactive.py)."""

import math

import pytest

from landscape.errors import ConfigError, UsageError
from landscape.workflows.export import ExportParams, run

from synthetic_study import X, surface


def test_each_file_is_exported_beside_itself_as_a_line_or_a_grid(tmp_path):
    line = surface(str(tmp_path / "line.h5"), lambda a: a**2)
    (tmp_path / "sub").mkdir()
    grid = surface(str(tmp_path / "sub" / "grid.h5"), lambda a, b: a**2 + b**2, y=X)
    done = run({"surf_files": (line, grid), "vtk": True})
    assert done.files == [str(tmp_path / "line.vtu"), str(tmp_path / "sub" / "grid.vts")]
    assert all((tmp_path / f).stat().st_size > 0 for f in ("line.vtu", "sub/grid.vts"))
    assert done.record() == {"files": done.files}
    assert ExportParams.of({"surf_files": line, "html": True}).surf_files == (line,)  # one file: a string


def test_two_inputs_of_one_name_into_one_folder_are_refused_before_either_is_written(tmp_path):
    for folder in ("a", "b", "out"):
        (tmp_path / folder).mkdir()
    first = surface(str(tmp_path / "a" / "s.h5"), lambda a: a**2)
    second = surface(str(tmp_path / "b" / "s.h5"), lambda a: 2 * a**2)
    with pytest.raises(UsageError, match=f"two inputs would both be exported to {tmp_path}/out/s.vtu; expected"):
        run({"surf_files": (first, second), "vtk": True, "out": str(tmp_path / "out")})
    assert list((tmp_path / "out").iterdir()) == []


def test_labels_must_be_one_per_file_and_the_cap_a_finite_number_positive_with_log():
    with pytest.raises(UsageError, match="got 1 labels for 2 files; expected one label per file"):
        ExportParams.of({"surf_files": ("a.h5", "b.h5"), "html": True, "labels": ("seed 0",)})
    with pytest.raises(ConfigError, match="zmax=nan: expected a finite number$"):
        ExportParams.of({"surf_files": "a.h5", "vtk": True, "zmax": math.nan})
    with pytest.raises(ConfigError, match="zmax=0: expected a finite number, positive with log"):
        ExportParams.of({"surf_files": "a.h5", "vtk": True, "log": True, "zmax": 0})
    assert ExportParams.of({"surf_files": "a.h5", "vtk": True, "zmax": -1.0}).zmax == -1.0  # linear heights
    with pytest.raises(ConfigError, match="surf_files=\\(\\): expected one surface file or more"):
        ExportParams.of({"surf_files": (), "vtk": True})
