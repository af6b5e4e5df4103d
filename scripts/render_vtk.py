"""Render a .vts written by ``landscape export --vtk`` to a PNG with VTK, off screen: what ParaView
shows when the file is opened and coloured by a quantity (for the README, or a cluster without a
display).  Needs the ``vtk`` wheel (a test dependency of landscape).

    python scripts/render_vtk.py demo_out/cnn_bs1024_2d.vts figures/demo_paraview.png --colour train_loss
"""

from __future__ import annotations

import argparse

import vtk


def render(path: str, png: str, colour: str, size=(900, 650)):
    reader = vtk.vtkXMLStructuredGridReader()
    reader.SetFileName(path)
    reader.Update()
    grid = reader.GetOutput()
    values = grid.GetPointData().GetArray(colour)
    if values is None:
        names = [grid.GetPointData().GetArrayName(i) for i in range(grid.GetPointData().GetNumberOfArrays())]
        raise SystemExit(f"render_vtk: {path} has no point data {colour!r}; it has {', '.join(names)}")
    grid.GetPointData().SetActiveScalars(colour)
    lut = vtk.vtkLookupTable()  # viridis-like: dark blue to yellow through green
    lut.SetNumberOfTableValues(256)
    ctf = vtk.vtkColorTransferFunction()
    for x, rgb in (
        (0.0, (0.267, 0.005, 0.329)),
        (0.25, (0.230, 0.322, 0.546)),
        (0.5, (0.128, 0.567, 0.551)),
        (0.75, (0.369, 0.789, 0.383)),
        (1.0, (0.993, 0.906, 0.144)),
    ):
        ctf.AddRGBPoint(x, *rgb)
    for i in range(256):
        lut.SetTableValue(i, *ctf.GetColor(i / 255), 1.0)
    lo, hi = values.GetRange()
    x0, x1, y0, y1, z0, z1 = grid.GetBounds()
    if colour == "train_loss":  # colours over the heights shown (export --zmax clips the heights, not the data)
        hi = min(hi, z1)
    lut.SetTableRange(lo, hi)
    mapper = vtk.vtkDataSetMapper()
    mapper.SetInputData(grid)
    mapper.SetLookupTable(lut)
    mapper.SetScalarRange(lo, hi)
    actor = vtk.vtkActor()
    actor.SetMapper(mapper)
    span = max(x1 - x0, y1 - y0)
    actor.SetScale(1.0, 1.0, 0.6 * span / max(z1 - z0, 1e-12))  # heights to 60 % of the width, as plot2d does
    bar = vtk.vtkScalarBarActor()
    bar.SetLookupTable(lut)
    bar.SetTitle(colour)
    bar.SetNumberOfLabels(5)
    for prop in (bar.GetTitleTextProperty(), bar.GetLabelTextProperty()):
        prop.SetColor(0.1, 0.1, 0.1)
    renderer = vtk.vtkRenderer()
    renderer.AddActor(actor)
    renderer.AddViewProp(bar)
    renderer.SetBackground(1, 1, 1)
    window = vtk.vtkRenderWindow()
    window.SetOffScreenRendering(1)
    window.AddRenderer(renderer)
    window.SetSize(*size)
    camera = renderer.GetActiveCamera()
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    camera.SetFocalPoint(cx, cy, 0.3 * span)
    camera.SetPosition(cx + 1.6 * span, cy - 1.9 * span, 1.5 * span)
    camera.SetViewUp(0, 0, 1)
    renderer.ResetCamera()
    camera.Zoom(1.05)
    window.Render()
    image = vtk.vtkWindowToImageFilter()
    image.SetInput(window)
    image.Update()
    writer = vtk.vtkPNGWriter()
    writer.SetFileName(png)
    writer.SetInputConnection(image.GetOutputPort())
    writer.Write()
    return png


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("vts")
    p.add_argument("png")
    p.add_argument("--colour", default="train_loss")
    args = p.parse_args()
    print(render(args.vts, args.png, args.colour))
