"""A full disk (a small tmpfs, mounted as root) ends train, surface, report and export with exit code 3
and one line naming the file and the reason: no traceback, no segmentation fault, no partial file of
the failed process left, the previous version of a result whole; a dead process's partial files are
removed by the next command that writes beside them."""

import json
import os
import re
import socket
import subprocess
import sys

import h5py
import numpy as np
import pytest
import torch

from landscape.io import direction_file

from ..workflows.test_report import FLAGS as REPORT_FLAGS
from ..workflows.test_report import networks
from conftest import run
from synthetic_study import surface

pytestmark = pytest.mark.faults


@pytest.fixture
def disk(tmp_path):
    """A 2 MiB tmpfs at ``tmp_path/disk``, unmounted afterwards; skipped where it cannot be mounted."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()})")
    yield where
    subprocess.run(["umount", str(where)], check=True)


def fill(disk, leave: int) -> None:
    """Take all of ``disk`` but ``leave`` bytes."""
    stat = os.statvfs(disk)
    with open(disk / "filler", "wb") as handle:
        handle.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))


def partials(folder) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*") if ".partial-" in p.name or p.name.startswith(".landscape-"))


def dead_pid() -> int:
    """The pid of a process that has ended."""
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)


def one_line(done, command: str) -> str:
    """The command's only line on stderr, that the disk is full; the path it names."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr[-3000:]
    found = re.match(
        rf"^landscape {command}: error: (?:surface file |direction file |VTK file |--out )?(\S+?):? cannot be written "
        r"\(No space left on device\)",
        lines[0],
    )
    assert found, lines[0]
    return found.group(1)


def test_training_on_a_full_disk_names_the_file_keeps_latest_whole_and_leaves_no_partial(disk):
    out = disk / "run"
    out.mkdir()
    stale = out / f"latest.pt.partial-{socket.gethostname()}-{dead_pid()}"  # a killed run's
    stale.write_bytes(b"half a checkpoint")
    flags = ["--model", "digits_mlp", "--batch_size", "512", "--threads", "1", "--quiet", "--out", str(out)]
    done = run("train", [*flags, "--epochs", "60"])  # 72 kB a checkpoint: the disk is full after about 20
    named = one_line(done, "train")
    assert os.path.dirname(named) == str(out) and not partials(disk), partials(disk)
    latest = torch.load(out / "latest.pt", map_location="cpu", weights_only=True)  # the last one written whole
    assert 1 <= latest["meta"]["epoch"] < 60 and json.loads((out / "run.json").read_text())["done"] is False


def test_a_surface_too_large_for_the_disk_is_one_line_not_a_segfault_and_its_directions_stay(disk):
    surf = disk / "s.h5"
    flags = ["--model", "digits_mlp", "--x=-1:1:301", "--y=-1:1:301", "--threads", "1", "--quiet"]
    flags += ["--batch_size", "1797", "--points_per_pass", "16", "--kernel", "reference"]  # no tuning
    done = run("surface", [*flags, "--surf_file", str(surf)])
    assert one_line(done, "surface") == str(surf) and not surf.exists() and not partials(disk)
    assert direction_file.read(str(disk / "s.directions.h5")).x  # made before, whole
    assert not (disk / "s.h5.lock").exists()
    # the directions themselves on a disk with no room: the same, for the direction file
    fill(disk, 64 * 1024)
    again = run("surface", [*flags, "--surf_file", str(disk / "t.h5")])
    assert one_line(again, "surface") == str(disk / "t.directions.h5") and not partials(disk)


def test_a_report_on_a_full_disk_names_the_file_and_cleans_a_dead_process_s_partial(disk, tmp_path):
    manifest = networks(tmp_path)
    out = disk / "out"
    folder = out / "runs" / "sgd_b16_s0"
    folder.mkdir(parents=True)
    stale = folder / f"surface_1d.h5.partial-{socket.gethostname()}-{dead_pid()}"
    stale.write_bytes(b"half a surface")
    fill(disk, 400 * 1024)  # a run's first files fit, not all of them
    done = run("report", [manifest, "--out", str(out), *REPORT_FLAGS])
    named = one_line(done, "report")
    assert named.startswith(str(out)) and not stale.exists() and not partials(disk), partials(disk)
    with h5py.File(folder / "surface_1d.h5") as f:  # what was written before is whole
        assert f["done"][()].all()


def test_export_on_a_full_disk_names_the_file_and_keeps_the_previous_export(disk, tmp_path):
    small = surface(str(tmp_path / "small.h5"), lambda a, b: a * a + b * b, y=[-1.0, 0.0, 1.0])
    large = surface(str(tmp_path / "large.h5"), lambda a, b: a * a + b * b, y=list(np.linspace(-1, 1, 400)))
    assert run("export", [small, "--vtk", "--out", str(disk / "x")]).returncode == 0
    before = (disk / "x.vts").read_bytes()
    fill(disk, 0)
    vtk = run("export", [large, "--vtk", "--out", str(disk / "x")])  # more than the old file's room
    assert one_line(vtk, "export") == str(disk / "x.vts") and (disk / "x.vts").read_bytes() == before
    html = run("export", [small, "--html", "--out", str(disk / "x")])
    assert one_line(html, "export") == str(disk / "x.html") and not (disk / "x.html").exists()
    assert not partials(disk), partials(disk)


def figure_line(done, command: str, path) -> None:
    """The command's only line on stderr: the figure ``path`` cannot be written, the disk being full."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0] == f"landscape {command}: error: figure {path} cannot be written (No space left on device)"


def manifest(folder) -> str:
    """A sweep's manifest of two finished runs (no logs: the error-against-batch panel alone)."""
    runs = [
        {"run": f"naive_b{b}_s0", "recipe": "naive", "batch_size": b, "seed": 0, "done": True, "test_error": e}
        for b, e in ((16, 5.0), (1024, 9.0))
    ]
    path = folder / "manifest.json"
    path.write_text(json.dumps({"settings": {}, "runs": runs}))
    return str(path)


def test_figures_on_a_full_disk_name_the_figure_keep_the_previous_one_and_leave_no_partial(disk, tmp_path):
    one = surface(str(tmp_path / "one.h5"), lambda a: a * a)
    two = surface(str(tmp_path / "two.h5"), lambda a, b: a * a + b * b, y=[-1.0, 0.0, 1.0])
    assert run("plot1d", [one, "--out", str(disk / "one")]).returncode == 0
    before = (disk / "one_1d.png").read_bytes()
    stale = disk / f"one_1d.png.partial-{socket.gethostname()}-{dead_pid()}"  # a killed plot's
    stale.write_bytes(b"half a figure")
    fill(disk, 8 * 1024)  # room for a partial file to begin, not for a figure
    figure_line(run("plot1d", [one, "--out", str(disk / "one")]), "plot1d", disk / "one_1d.png")
    assert (disk / "one_1d.png").read_bytes() == before and not partials(disk), partials(disk)
    figure_line(run("plot2d", [two, "--out", str(disk / "two")]), "plot2d", disk / "two_train_loss_2dcontour.png")
    training = run("plot-training", [manifest(tmp_path), "--out", str(disk / "training")])
    figure_line(training, "plot-training", disk / "training.png")
    assert not partials(disk) and not list(disk.glob("t*.png")), partials(disk)


def test_a_rescaled_checkpoint_on_a_full_disk_is_one_line_and_not_made(disk, tmp_path):
    from landscape.io.checkpoint import save
    from landscape.models import DigitsMLP

    torch.manual_seed(0)
    save(DigitsMLP(), str(tmp_path / "mlp.pt"))
    fill(disk, 8 * 1024)
    flags = ["--model", "digits_mlp", "--model_file", str(tmp_path / "mlp.pt"), "--alpha", "4", "--threads", "1"]
    done = run("rescale", [*flags, "--out", str(disk / "r.pt")])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr[-3000:]
    assert (
        lines[0] == f"landscape rescale: error: checkpoint {disk / 'r.pt'} cannot be written (No space left on device)"
    )
    assert not (disk / "r.pt").exists() and not partials(disk), partials(disk)


def test_a_lock_file_on_a_full_disk_is_one_line_and_not_left(disk):
    fill(disk, 0)
    flags = ["--model", "digits_mlp", "--epochs", "1", "--threads", "1", "--quiet"]
    done = run("train", [*flags, "--out", str(disk / "run")])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr[-3000:]
    assert (
        lines[0] == f"landscape train: error: lock file {disk / 'run.lock'} cannot be written (No space left on device)"
    )
    assert not (disk / "run.lock").exists()
