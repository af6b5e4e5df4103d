"""``landscape info`` and the plots on a surface whose job is still writing it: they read it without
HDF5's file lock, show what is done (info: how far the job is and how long it has left), and change
nothing: the finished file equals that of a run nobody looked at."""

import time

import numpy as np

from landscape.io.surface_file import read as read_surface

from conftest import done_count, start

GRID = ["--x=-1:1:9", "--y=-1:1:5"]  # 45 points, a forward pass of 0.4 s each: about 18 s to look at it


def args(plugins, tmp_path, surf):
    return [
        "--model",
        f"{plugins}:slow_model",
        *GRID,
        "--no_test",
        "--batch_size",
        "5000",
        "--kernel",
        "reference",
        "--points_per_pass",
        "1",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--round_seconds",
        "0.1",
        "--threads",
        "1",
        "--surf_file",
        str(tmp_path / surf),
    ]


def test_a_running_surface_can_be_looked_at_and_is_left_as_an_unread_one(tmp_path, plugins, cli):
    path, hold = tmp_path / "s.h5", tmp_path / "hold"
    hold.touch()  # slow while the test looks, then at full speed
    job = start(
        "surface",
        args(plugins, tmp_path, "s.h5"),
        env={"LANDSCAPE_TEST_SLEEP": "0.4", "LANDSCAPE_TEST_HOLD": str(hold)},
    )
    try:
        deadline = time.monotonic() + 60
        while done_count(path) < 5 and time.monotonic() < deadline and job.poll() is None:
            time.sleep(0.05)
        assert job.poll() is None, f"the job ended before it could be looked at: {job.stderr.read()}"

        info = cli("info", [str(path)])
        assert info.returncode == 0, info.stderr
        points = next(line for line in info.stdout.splitlines() if line.startswith("  points"))
        done = int(points.split()[1])
        assert 5 <= done < 45 and points.endswith(f"{done} of 45 done ({100 * done / 45:.1f} %), {45 - done} to do")
        assert "  progress  running, since " in info.stdout and " s left" in info.stdout, info.stdout
        assert ": running" in info.stdout  # the latest run record, not yet ended

        plot = cli("plot2d", [str(path), "--surf_name", "train_loss"])
        assert plot.returncode == 0, plot.stderr
        assert "points computed; the others are left blank" in plot.stderr, (job.poll(), done_count(path), plot)
        assert (tmp_path / "s_train_loss_2dcontour.png").stat().st_size > 0
        assert job.poll() is None, "the job ended while it was looked at: make it slower"

        cut = tmp_path / "cut.h5"  # a copy cut short mid-run: one line, exit 3
        cut.write_bytes(path.read_bytes()[:1500])
        broken = cli("info", [str(cut)])
        assert broken.returncode == 3 and len(broken.stderr.strip().splitlines()) == 1, broken.stderr
    finally:
        hold.unlink()
        out, err = job.communicate(timeout=120)
    assert job.returncode == 0, err

    unread = cli("surface", [*args(plugins, tmp_path, "unread.h5"), "--quiet"], env={"LANDSCAPE_TEST_SLEEP": "0"})
    assert unread.returncode == 0, unread.stderr
    a, b = read_surface(str(path)), read_surface(str(tmp_path / "unread.h5"))
    assert a.done.all() and b.done.all()
    assert all(np.array_equal(a.values[q], b.values[q]) for q in b.values)
    assert [r["ended"] for r in a.runs] == ["complete"]
    after = cli("info", [str(path)])
    assert after.returncode == 0 and "progress" not in after.stdout and "45 of 45 done" in after.stdout
