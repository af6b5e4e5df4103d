"""A surface file survives SIGKILL before any of its writes (fault injection under strace).

``strace -e inject=pwrite64:signal=KILL:when=N`` kills the job just before its N-th
write, for every N of three runs: a short fresh run, a resume of a partly computed
file, and a rerun that has nothing left to compute.  After every kill the file (if
it exists) must read back without error, every point marked done must hold exactly
the values of an uninterrupted run, and the same command run again must finish it
to those values, leaving no partial file and no lock behind.

The jobs run in processes forked from one that has already imported everything
(this file run as a script), with strace attached to each fork, so a kill costs
tens of milliseconds instead of a fresh interpreter.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve()
SCENARIOS = ("fresh", "resume", "noop")


def job_args(plugins: str, folder: Path) -> list[str]:
    return [
        "surface",
        "--model",
        f"{plugins}:linear_model",
        "--dataset",
        f"{plugins}:regression_data",
        "--loss_name",
        "mse",
        "--x=-1:1:3",
        "--y=0:1:2",
        "--dir_file",
        str(folder / "d.h5"),
        "--surf_file",
        str(folder / "s.h5"),
        "--threads",
        "1",
        "--quiet",
    ]  # two rounds: 1 point, then 5


# --------------------------------------------------------------------------- the fork server (a script)


def _prepare(scenario: str, folder: Path, reference: Path, plugins: str, main) -> None:
    folder.mkdir()
    shutil.copy(reference / "d.h5", folder / "d.h5")
    if scenario in ("resume", "noop"):
        shutil.copy(reference / "s.h5", folder / "s.h5")
    if scenario == "resume":  # as if the first run had stopped after two points
        import h5py

        with h5py.File(folder / "s.h5", "r+") as f:
            done = f["done"][()]
            done.reshape(-1)[2:] = 0
            f["done"][...] = done


def _killed_at(n: int, argv: list[str], main) -> int:
    """Fork a job, attach strace to it with a kill before its n-th pwrite64; return its wait status."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the job
        os.close(ready_w)
        os.read(ready_r, 1)
        os._exit(main(argv))
    os.close(ready_r)
    tracer = subprocess.Popen(
        [
            "strace",
            "-qq",
            "-o",
            "/dev/null",
            "-p",
            str(pid),
            "-e",
            "trace=pwrite64",
            "-e",
            f"inject=pwrite64:signal=KILL:when={n}",
        ]
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status") as status:
            if any(line.startswith("TracerPid:") and line.split()[1] != "0" for line in status):
                break
        time.sleep(0.001)
    os.write(ready_w, b"x")
    os.close(ready_w)
    _, status = os.waitpid(pid, 0)
    tracer.wait(timeout=30)
    return status


def serve(scenario: str, base: Path, plugins: str) -> list[dict]:
    import torch

    from landscape.cli.main import main

    torch.set_num_threads(1)
    reference = base / "reference"
    results = []
    for n in range(1, 500):
        folder = base / f"{scenario}-{n}"
        _prepare(scenario, folder, reference, plugins, main)
        status = _killed_at(n, job_args(plugins, folder), main)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
        results.append(
            {
                "n": n,
                "killed": killed,
                "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                "folder": str(folder),
            }
        )
        if not killed:
            break
    return results


if __name__ == "__main__":
    print(json.dumps(serve(sys.argv[1], Path(sys.argv[2]), sys.argv[3])))
    sys.exit(0)


# --------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def reference(tmp_path_factory, plugins_path):
    from conftest import landscape

    base = tmp_path_factory.mktemp("kills")
    (base / "reference").mkdir()
    assert landscape(*job_args(plugins_path, base / "reference")) == 0
    return base


@pytest.fixture(scope="module")
def plugins_path():
    return str(HERE.parent.parent / "plugins.py")


@pytest.mark.faults
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_kill_before_any_write_leaves_a_file_that_reads_and_resumes_exactly(reference, plugins_path, scenario):
    from landscape.io.surface_file import read

    from conftest import landscape

    if shutil.which("strace") is None:
        if os.environ.get("CI"):
            pytest.fail("strace is missing: make test-faults installs it")
        pytest.skip("needs strace (apt-get install strace)")
    done = subprocess.run(
        [sys.executable, str(HERE), scenario, str(reference), plugins_path],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    killed = [r for r in results if r["killed"]]
    assert results[-1]["exit"] == 0 and len(killed) == len(results) - 1, results[-1]
    assert len(killed) >= {"fresh": 15, "resume": 5, "noop": 3}[scenario], f"only {len(killed)} writes"
    expected = read(str(reference / "reference" / "s.h5"))
    before = {"fresh": None, "resume": 2, "noop": expected.done.size}[scenario]
    for r in results:
        folder, n = Path(r["folder"]), r["n"]
        path = folder / "s.h5"
        if path.exists():
            s = read(str(path))  # raises if the file is damaged
            if before is not None:
                assert s.done.sum() >= before, f"write {n}: computed points lost their done marks"
            for q, values in expected.values.items():
                assert np.array_equal(s.values[q][s.done], values[s.done]), (n, q)
        assert landscape(*job_args(plugins_path, folder)) == 0, f"write {n}: the rerun failed"
        s = read(str(path))
        assert s.done.all(), n
        assert all(np.array_equal(s.values[q], v) for q, v in expected.values.items()), n
        left = sorted(p.name for p in folder.iterdir() if ".partial-" in p.name or p.name.endswith(".lock"))
        assert not left, f"write {n}: left behind {left}"
