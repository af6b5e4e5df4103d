"""The demo end to end at a reduced size: train, surfaces on 2 ranks, figures, summary; a rerun reuses all."""

import json
import subprocess
import sys

import numpy as np
import pytest

from landscape.io.surface_file import read as read_surface

from conftest import ROOT, require_mpi

pytestmark = [pytest.mark.slow, pytest.mark.mpi]  # 110 s, its surfaces under mpiexec: CI runs it with the MPI tests


def test_quick_demo_end_to_end_and_rerun(tmp_path):
    require_mpi()
    cmd = [
        sys.executable,
        "-m",
        "landscape",
        "demo",
        "--quick",
        "--out",
        str(tmp_path / "out"),
        "--figures",
        str(tmp_path / "fig"),
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "on 2 ranks" in first.stdout
    assert "2 ranks vs 1 rank: identical bit for bit" in first.stdout
    parallel, serial = (read_surface(str(tmp_path / "out" / f"cnn_bs16_{tag}.h5")) for tag in ("1d", "1d_serial"))
    assert parallel.run["ranks"] == 2 and serial.run["ranks"] == 1
    assert all(np.array_equal(parallel.values[q], serial.values[q]) for q in parallel.values)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["ranks_bit_identical"] is True
    assert set(summary["networks"]) == {"batch 16", "batch 1024"}
    assert summary["sharper"] in summary["networks"] and summary["verdict"].startswith(f"The {summary['sharper']}")
    for kind in ("1d", "train_loss_2dcontour", "train_loss_2dcontourf", "train_loss_3dsurface"):
        for fmt, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF")):
            assert (tmp_path / "fig" / f"demo_{kind}.{fmt}").read_bytes()[:4] == magic

    again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.count("already trained") == 2 and "epoch 1/" not in again.stdout
    assert again.stdout.count(", 0 to compute") == 5  # 4 surfaces + the 1-rank check, nothing recomputed
