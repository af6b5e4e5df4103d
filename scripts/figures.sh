#!/usr/bin/env bash
# The figures README.md shows, refreshed on purpose (make figures): make demo and make study write
# only under demo_out/ and study_out/, so a clean checkout stays clean.  Everything computed is
# reused on a rerun.  Needs the venv (make builds it); the 3-D page's screenshot needs chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
MPIEXEC=${MPIEXEC:-.venv/bin/mpiexec}
landscape() { "$PY" -m landscape "$@"; }

landscape demo --figures figures
# the batch-16 run's path on the plane of its top two principal components
"$MPIEXEC" -n 2 "$PY" -m landscape surface --model digits_cnn --model_file demo_out/cnn_bs16/final.pt \
    --pca_from demo_out/cnn_bs16 --x=-25:3:29 --y=-11:11:23 --surf_file demo_out/cnn_bs16_pca.h5 --quiet
landscape plot2d demo_out/cnn_bs16_pca.h5 --trajectory --kind contour --log \
    --out figures/trajectory_demo_bs16 --format png pdf
# paper style
landscape plot2d demo_out/cnn_bs16_2d.h5 demo_out/cnn_bs1024_2d.h5 --style paper --kind contourf \
    --vmin 0.5 --vmax 10 --vlevel 0.5 --labels "batch 16" "batch 1024" --out figures/paper_demo --format png pdf
landscape plot1d demo_out/cnn_bs16_1d.h5 demo_out/cnn_bs1024_1d.h5 --style paper --error \
    --labels "batch 16" "batch 1024" --out figures/paper_demo --format png pdf
# ParaView's view of the batch-1024 surface (VTK off screen)
landscape export demo_out/cnn_bs1024_2d.h5 --vtk --zmax 10 --out demo_out/cnn_bs1024_2d
"$PY" scripts/render_vtk.py demo_out/cnn_bs1024_2d.vts figures/demo_paraview.png
# test error against batch size, two recipes
for recipe in naive linear; do
    landscape sweep --out "sweeps/digits_$recipe" --recipes "$recipe" --batch_sizes 16 32 64 128 256 512 1024 \
        --seeds 0 1 2 --model digits_cnn --dataset digits --epochs 100 --threads 1 --quiet &
done
wait
landscape plot-training sweeps/digits_naive sweeps/digits_linear --out figures/training_digits
# the batch-size study: its scorecard, tables and figures
landscape study --figures figures
