"""``landscape export --vtk``: the files ParaView opens, read back with VTK's own readers and compared
with the surface file value for value, on a non-square grid with points still to do."""

import h5py
import numpy as np
import pytest
import torch

from landscape.io.checkpoint import save
from landscape.io.surface_file import read
from landscape.models import build_model

from conftest import landscape

vtk = pytest.importorskip("vtk")
from vtk.util.numpy_support import vtk_to_numpy  # noqa: E402


def surface(tmp_path, grid):
    torch.manual_seed(0)
    save(build_model("digits_mlp"), str(tmp_path / "m.pt"))
    assert (
        landscape(
            "surface",
            "--model",
            "digits_mlp",
            "--model_file",
            tmp_path / "m.pt",
            *grid,
            "--train_subset",
            "60",
            "--threads",
            "1",
            "--quiet",
            "--surf_file",
            tmp_path / "s.h5",
        )
        == 0
    )
    return tmp_path / "s.h5"


def test_a_non_square_surface_as_a_structured_grid(tmp_path, capsys, one_thread):
    path = surface(tmp_path, ["--x=-1:1:5", "--y=0:1:3"])
    with h5py.File(path, "r+") as f:  # one point back to "to do"
        f["done"][3, 2] = 0
    assert landscape("export", path, "--vtk", "--log") == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "s.vts")
    assert landscape("export", path, "--vtk", "--z", "train_err", "--out", tmp_path / "err") == 0  # 100 - accuracy
    capsys.readouterr()
    reader = vtk.vtkXMLStructuredGridReader()
    reader.SetFileName(str(tmp_path / "s.vts"))
    reader.Update()
    grid = reader.GetOutput()
    dims = [0, 0, 0]
    grid.GetDimensions(dims)
    assert dims == [5, 3, 1]
    s = read(str(path))
    points = vtk_to_numpy(grid.GetPoints().GetData()).reshape(3, 5, 3)  # VTK: x varies fastest
    assert np.array_equal(points[:, :, 0].T, np.repeat(s.x[:, None], 3, axis=1))
    assert np.array_equal(points[:, :, 1].T, np.repeat(s.y[None, :], 5, axis=0))
    z = np.log10(s.values["train_loss"])
    assert np.allclose(points[:, :, 2].T[s.done], z[s.done], rtol=0, atol=0)
    data = grid.GetPointData()
    names = {data.GetArrayName(i) for i in range(data.GetNumberOfArrays())}
    assert names - {"vtkGhostType"} == {*s.values, "done"}
    ghost = vtk_to_numpy(grid.GetPointGhostArray()).reshape(3, 5).T  # VTK's blanking: the point to do is hidden
    assert ghost[3, 2] == vtk.vtkDataSetAttributes.HIDDENPOINT and (ghost == 0).sum() == 14
    for name, values in s.values.items():
        back = vtk_to_numpy(data.GetArray(name)).reshape(3, 5).T
        assert np.array_equal(back, values, equal_nan=True), name
    assert vtk_to_numpy(data.GetArray("done")).reshape(3, 5).T[3, 2] == 0


def test_heights_above_zmax_are_hidden_not_flattened(tmp_path, one_thread):
    from landscape.io.paraview import heights

    path = surface(tmp_path, ["--x=-1:1:5", "--y=-1:1:5"])
    s = read(str(path))
    top = float(np.median(s.values["train_loss"]))
    z, hidden = heights(s, "train_loss", zmax=top)
    assert np.array_equal(hidden, s.values["train_loss"] > top) and hidden.any()
    assert np.array_equal(z[~hidden], s.values["train_loss"][~hidden])  # the rest keeps its true height


def test_a_1d_surface_as_a_polyline(tmp_path, capsys, one_thread):
    path = surface(tmp_path, ["--x=-1:1:7"])
    assert landscape("export", path, "--vtk", "--z", "train_acc", "--out", tmp_path / "line") == 0
    reader = vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(tmp_path / "line.vtu"))
    reader.Update()
    line = reader.GetOutput()
    assert line.GetNumberOfPoints() == 7 and line.GetNumberOfCells() == 1 and line.GetCellType(0) == vtk.VTK_POLY_LINE
    s = read(str(path))
    points = vtk_to_numpy(line.GetPoints().GetData())
    assert np.array_equal(points[:, 0], s.x) and np.array_equal(points[:, 1], s.values["train_acc"])
    assert np.array_equal(vtk_to_numpy(line.GetPointData().GetArray("train_loss")), s.values["train_loss"])


def test_bad_requests_are_one_line(tmp_path, capsys, one_thread):
    path = surface(tmp_path, ["--x=-1:1:3"])
    assert landscape("export", path) == 2 and "give --vtk" in capsys.readouterr().err
    assert landscape("export", path, "--vtk", "--z", "nonsense") == 2
    assert "--z=nonsense: " in capsys.readouterr().err
    assert landscape("export", path, path, "--vtk", "--out", tmp_path / "x") == 2
    assert landscape("export", path, "--vtk", "--out", tmp_path / "no" / "x") == 3
    assert landscape("export", path, "--vtk", "--log", "--zmax", "-1") == 2
    (tmp_path / "dd.vtu").mkdir()  # an output that is a folder: refused, not a crash
    assert landscape("export", path, "--vtk", "--out", tmp_path / "dd") == 3
    assert "dd.vtu is a directory" in capsys.readouterr().err
    assert landscape("export", path, "--vtk", "--out", "/proc/x") == 3


def test_a_quantity_name_cannot_add_xml_attributes(tmp_path, one_thread):
    """A file from someone else names a quantity ``a" offset="0" Injected="1`` (its checksums recomputed
    to match): the name stays one escaped attribute value, read back whole by VTK, and no element gains
    an attribute."""
    import dataclasses
    import xml.etree.ElementTree as ET

    from landscape.io.paraview import write_vtk

    s = read(str(surface(tmp_path, ["--x=-1:1:3", "--y=-1:1:3"])))
    hostile = 'a" offset="0" Injected="1 <&>'
    s = dataclasses.replace(s, values={**s.values, hostile: s.values["train_loss"] + 1})
    assert write_vtk(s, str(tmp_path / "v")) == str(tmp_path / "v.vts")
    tree = ET.parse(tmp_path / "v.vts")
    assert not [e for e in tree.iter() if "Injected" in e.attrib or "offset" in e.attrib]
    assert hostile in [e.get("Name") for e in tree.iter("DataArray")]
    reader = vtk.vtkXMLStructuredGridReader()
    reader.SetFileName(str(tmp_path / "v.vts"))
    reader.Update()
    back = reader.GetOutput().GetPointData().GetArray(hostile)
    assert back is not None and np.array_equal(vtk_to_numpy(back).reshape(3, 3).T, s.values[hostile])
