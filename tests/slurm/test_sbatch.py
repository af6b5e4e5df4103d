"""The sbatch scripts of scripts/slurm/, submitted to a real one-node Slurm (make test-slurm, CI).

scripts/slurm/local_cluster.sh starts Debian's slurmctld, slurmd and munge for the session; each
test submits a script as a user would, with the surface given in LANDSCAPE_ARGS (or
LANDSCAPE_ARGS_FILE), and checks the files it leaves against a serial run of the same surface.  The
scripts' srun takes the cluster's MpiDefault (pmi2), as on a site: no test sets LANDSCAPE_SRUN_MPI
but the one that checks it reaches srun.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from landscape.io.surface_file import read as read_surface

from conftest import PLUGINS, ROOT, landscape

pytestmark = pytest.mark.slurm
SCRIPTS = ROOT / "scripts" / "slurm"
LANDSCAPE = str(Path(sys.executable).parent / "landscape")
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0 or shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        if os.environ.get("CI"):
            pytest.fail("the Slurm tests need root and Debian's packages in CI")
        pytest.skip("needs root to start a local Slurm")
    folder = tmp_path_factory.mktemp("slurm")
    started = subprocess.run(
        [str(SCRIPTS / "local_cluster.sh"), "start", str(folder)], capture_output=True, text=True, timeout=300
    )
    assert started.returncode == 0, started.stderr + started.stdout
    env = dict(os.environ, SLURM_CONF=str(folder / "slurm.conf"), LANDSCAPE=LANDSCAPE)
    env.pop("LANDSCAPE_SRUN_MPI", None)  # the site's default MPI plugin, as a user's job gets it
    yield folder, env
    subprocess.run([str(SCRIPTS / "local_cluster.sh"), "stop", str(folder)], timeout=60)


def submit(env, *args, cwd) -> str:
    done = subprocess.run(
        ["sbatch", "--parsable", *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(";")[0]


def final_state(folder, job: str, timeout: float) -> str:
    """The job's last state in the job completion log once it is terminal (a requeue is not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = folder / "jobcomp.log"
        states = [
            line.split("JobState=")[1].split()[0]
            for line in (log.read_text().splitlines() if log.exists() else [])
            if line.startswith(f"JobId={job} ")
        ]
        if states and states[-1] in TERMINAL:
            return states[-1]
        time.sleep(0.5)
    raise AssertionError(f"job {job} did not end within {timeout} s")


def serial(args, surf) -> object:
    assert landscape("surface", *args, "--surf_file", surf, "--threads", "1", "--quiet") == 0
    return read_surface(str(surf))


def same(a, b) -> bool:
    return a.done.all() and b.done.all() and all(np.array_equal(a.values[q], b.values[q]) for q in a.values)


def test_the_cpu_script_runs_srun_ranks_that_match_a_serial_surface(cluster, tmp_path):
    folder, env = cluster
    args = ["--model", "digits_cnn", "--x=-1:1:9", "--y=-1:1:5", "--dir_file", str(tmp_path / "d.h5")]
    env = dict(env, LANDSCAPE_ARGS=" ".join([*args, "--surf_file", str(tmp_path / "slurm.h5")]))
    job = submit(
        env,
        "--ntasks=2",
        "--cpus-per-task=1",
        f"--output={tmp_path}/out.txt",
        SCRIPTS / "surface_cpu.sbatch",
        cwd=tmp_path,
    )
    assert final_state(folder, job, 300) == "COMPLETED", (tmp_path / "out.txt").read_text()
    ours = read_surface(str(tmp_path / "slurm.h5"))
    assert ours.run["ranks"] == 2 and ours.run["threads_per_rank"] == 1  # from $SLURM_CPUS_PER_TASK
    assert "on 2 ranks x 1 thread" in (tmp_path / "out.txt").read_text()
    assert same(ours, serial(args, tmp_path / "serial.h5"))


def test_arguments_from_an_args_file_keep_their_spaces_and_the_surface_matches_a_serial_one(cluster, tmp_path):
    """LANDSCAPE_ARGS is split at spaces; LANDSCAPE_ARGS_FILE gives one argument per line, kept whole."""
    folder, env = cluster
    spaced = tmp_path / "my runs"
    spaced.mkdir()
    grid = ["--model", "digits_cnn", "--x=-1:1:7", "--y=-1:1:3"]
    directions, surface = spaced / "the directions.h5", spaced / "the surface.h5"
    (tmp_path / "surface.args").write_text(f"--dir_file\n{directions}\n\n--surf_file\n{surface}\n\n")
    env = dict(env, LANDSCAPE_ARGS=" ".join(grid), LANDSCAPE_ARGS_FILE=str(tmp_path / "surface.args"))
    job = submit(
        env,
        "--ntasks=2",
        "--cpus-per-task=1",
        f"--output={tmp_path}/out.txt",
        SCRIPTS / "surface_cpu.sbatch",
        cwd=tmp_path,
    )
    assert final_state(folder, job, 300) == "COMPLETED", (tmp_path / "out.txt").read_text()
    assert directions.is_file() and not (tmp_path / "my").exists()  # no argument was split at its space
    ours = read_surface(str(surface))
    assert ours.run["ranks"] == 2
    assert same(ours, serial([*grid, "--dir_file", str(directions)], tmp_path / "serial.h5"))


def test_the_scripts_take_the_sites_mpi_and_landscape_srun_mpi_reaches_srun(cluster, tmp_path):
    """No script names an MPI plugin; LANDSCAPE_SRUN_MPI=none gives srun --mpi=none, under which each
    task is a world of one and landscape refuses to start (the cluster's default, pmi2, works above)."""
    folder, env = cluster
    for script in SCRIPTS.glob("*.sbatch"):
        launches = [line for line in script.read_text().splitlines() if line.lstrip().startswith("srun")]
        assert all(line.lstrip().startswith('srun "${mpi[@]}" ') for line in launches), (script.name, launches)
    env = dict(
        env,
        LANDSCAPE_SRUN_MPI="none",
        LANDSCAPE_ARGS=f"--model digits_mlp --x=-1:1:3 --no_test --surf_file {tmp_path / 's.h5'}",
    )
    job = submit(
        env,
        "--ntasks=2",
        "--cpus-per-task=1",
        f"--output={tmp_path}/out.txt",
        SCRIPTS / "surface_cpu.sbatch",
        cwd=tmp_path,
    )
    assert final_state(folder, job, 300) == "FAILED"
    assert "srun started 2 tasks but each sees an MPI world of 1" in (tmp_path / "out.txt").read_text()
    assert not (tmp_path / "s.h5").exists()


def test_a_sweep_array_then_its_plot_after_all_surfaces(cluster, tmp_path):
    folder, env = cluster
    import torch

    from landscape.io.checkpoint import save
    from landscape.models import DigitsMLP

    checkpoints = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        save(DigitsMLP(), str(tmp_path / f"mlp{seed}.pt"))
        checkpoints.append(str(tmp_path / f"mlp{seed}.pt"))
    (tmp_path / "list.txt").write_text("\n".join(checkpoints) + "\n")
    env = dict(
        env,
        LANDSCAPE_ARGS="--model digits_mlp --x=-1:1:7 --no_test",
        OUT=str(tmp_path / "sweep"),
        PLOT_ARGS="--error",
        PLOT_ARGS_FILE=str(tmp_path / "plot.args"),
    )
    (tmp_path / "plot.args").write_text("--format\npng\n\n--title\nTwo seeds, one scale\n")
    done = subprocess.run(
        [
            str(SCRIPTS / "submit_sweep.sh"),
            str(tmp_path / "list.txt"),
            "--ntasks=2",
            "--cpus-per-task=1",
            f"--output={tmp_path}/%x-%j.out",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    array, plot = words[words.index("array") + 1].rstrip(";"), words[words.index("job", words.index("figures:")) + 1]
    assert final_state(folder, plot, 300) == "COMPLETED", [p.read_text() for p in tmp_path.glob("*.out")]
    for checkpoint in checkpoints:
        s = read_surface(checkpoint[:-3] + ".surface.h5")
        assert s.done.all() and s.run["ranks"] == 2
    assert (tmp_path / "sweep_1d.png").read_bytes()[:4] == b"\x89PNG"
    assert final_state(folder, array, 10) == "COMPLETED"  # every task of the array


def test_a_job_stopped_before_its_time_limit_requeues_and_finishes_identical(cluster, tmp_path):
    """--time=1, stopped 30 s before the limit: each incarnation saves its round and requeues itself."""
    folder, env = cluster
    args = [
        "--model",
        f"{PLUGINS}:slow_model",
        "--x=-1:1:301",
        "--no_test",
        "--batch_size",
        "5000",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--round_seconds",
        "2",
    ]
    env = dict(
        env,
        LANDSCAPE_TEST_SLEEP="0.3",
        STOP_BEFORE_LIMIT="30",
        LANDSCAPE_ARGS=" ".join([*args, "--surf_file", str(tmp_path / "long.h5")]),
    )
    job = submit(
        env,
        "--ntasks=2",
        "--cpus-per-task=1",
        "--time=1",
        f"--output={tmp_path}/out.txt",
        SCRIPTS / "requeue.sbatch",
        cwd=tmp_path,
    )
    assert final_state(folder, job, 600) == "COMPLETED", (tmp_path / "out.txt").read_text()
    out = (tmp_path / "out.txt").read_text()
    assert "stopped by SIGUSR1 after saving" in out and "requeueing job" in out, out
    s = read_surface(str(tmp_path / "long.h5"))
    assert [r["ended"] for r in s.runs][-1] == "complete" and len(s.runs) >= 2
    assert all(r["ended"] == "stopped by SIGUSR1" for r in s.runs[:-1])
    os.environ["LANDSCAPE_TEST_SLEEP"] = "0"
    try:
        assert same(s, serial(args, tmp_path / "serial.h5"))
    finally:
        del os.environ["LANDSCAPE_TEST_SLEEP"]


def test_a_training_sweep_array_trains_one_configuration_per_task_into_one_manifest(cluster, tmp_path):
    folder, env = cluster
    config = tmp_path / "sweep.toml"
    config.write_text(
        f'out = "{tmp_path / "sweep"}"\nrecipes = ["linear"]\nbatch_sizes = [32, 64]\n'
        '[train]\nmodel = "digits_mlp"\ndataset = "digits"\nepochs = 2\n'
    )
    job = submit(
        dict(env, SWEEP_CONFIG=str(config)),
        "--array=0-1",
        "--ntasks=2",
        "--cpus-per-task=1",
        f"--output={tmp_path}/%x-%A_%a.out",
        SCRIPTS / "train_array.sbatch",
        cwd=tmp_path,
    )
    assert final_state(folder, job, 300) == "COMPLETED", [p.read_text() for p in tmp_path.glob("*.out")]
    import csv
    import json

    with open(tmp_path / "sweep" / "manifest.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["run"], r["done"], r["ranks"]) for r in rows] == [
        ("linear_b32_s0", "True", "2"),
        ("linear_b64_s0", "True", "2"),
    ]
    assert len(json.loads((tmp_path / "sweep" / "manifest.json").read_text())["runs"]) == 2


def test_training_stopped_before_its_time_limit_requeues_and_ends_identical(cluster, tmp_path):
    """About 90 s of training (a model that sleeps at every forward pass) under --time=1, stopped 30 s
    before the limit: the requeued job resumes mid-epoch and ends with the weights of a run never stopped."""
    import torch

    folder, env = cluster
    args = [
        "--model",
        f"{PLUGINS}:slow_model",
        "--dataset",
        "digits",
        "--batch_size",
        "64",
        "--epochs",
        "12",
        "--recipe",
        "linear",
    ]
    env = dict(
        env,
        LANDSCAPE_TEST_SLEEP="0.3",
        STOP_BEFORE_LIMIT="30",
        LANDSCAPE_COMMAND="train",
        LANDSCAPE_ARGS=" ".join([*args, "--out", str(tmp_path / "long")]),
    )
    job = submit(
        env,
        "--ntasks=2",
        "--cpus-per-task=1",
        "--time=1",
        f"--output={tmp_path}/out.txt",
        SCRIPTS / "requeue.sbatch",
        cwd=tmp_path,
    )
    assert final_state(folder, job, 600) == "COMPLETED", (tmp_path / "out.txt").read_text()
    out = (tmp_path / "out.txt").read_text()
    assert "stopped by SIGUSR1" in out and "requeueing job" in out and "resuming" in out, out
    from conftest import run

    whole = run(
        "train",
        [*args, "--out", str(tmp_path / "whole"), "--threads", "1"],
        ranks=2,
        timeout=300,
        env={"LANDSCAPE_TEST_SLEEP": "0"},
    )
    assert whole.returncode == 0, whole.stderr
    a, b = (torch.load(tmp_path / f / "final.pt", weights_only=True)["state_dict"] for f in ("long", "whole"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_study_trains_as_an_array_then_its_scorecard_after_all_networks(cluster, tmp_path):
    """submit_study.sh: the training array, then report.sbatch on 2 ranks once the array succeeded."""
    folder, env = cluster
    config = tmp_path / "study.toml"
    config.write_text(
        f'out = "{tmp_path / "study"}"\nfigures = "{tmp_path / "figures"}"\nname = "tiny"\n'
        'batch_sizes = [32, 256]\nseeds = [0]\nrecipes = ["sgd"]\n[train]\nmodel = "digits_mlp"\ndataset = "digits"\n'
        'epochs = 2\n[report]\ngrid_1d = "-1:1:5"\ngrid_2d = "-1:1:3"\nradius = 1.0\ndirections = 2\n'
        'trace_samples = 2\niterations = 5\nrestarts = 1\ntrain_subset = 200\nthreads = 1\nformats = "png"\n'
    )
    done = subprocess.run(
        [
            str(SCRIPTS / "submit_study.sh"),
            str(config),
            "--ntasks=2",
            "--cpus-per-task=1",
            f"--output={tmp_path}/%x-%j.out",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    report = words[words.index("scorecard:") + 2]
    assert "(2 networks)" in done.stdout
    assert final_state(folder, report, 400) == "COMPLETED", [p.read_text() for p in tmp_path.glob("*.out")]
    table = (tmp_path / "figures" / "tiny.md").read_text()
    assert "| sgd | 32 | 1 |" in table and "| sgd | 256 | 1 |" in table
    assert (tmp_path / "figures" / "tiny_measures.png").read_bytes()[:4] == b"\x89PNG"
    log = next(tmp_path.glob("landscape-report-*.out")).read_text()
    assert "2 ranks" in log and "rank 1)" in log


def fnv1a(text: str) -> int:
    value = 2166136261
    for byte in text.encode():
        value = (value ^ byte) * 16777619 & 0xFFFFFFFF
    return value


def test_a_cancelled_job_leaves_no_mpich_memory_for_a_later_job_with_its_ids(cluster, tmp_path):
    """MPICH names a node's shared memory after the PMI job and step (FNV-1a of "JOB.STEP"); ranks killed
    by scancel leave it, and a step with those ids attaches to it and fails in MPI_Init (CI saw it when
    a fresh cluster reused job ids). The local cluster's epilog removes it; its job ids do not restart."""
    folder, env = cluster
    script = tmp_path / "wait.sh"
    script.write_text(
        f"#!/bin/bash\nsrun {sys.executable} -c "
        '\'from mpi4py import MPI; import time; MPI.COMM_WORLD.Barrier(); print("up", flush=True); '
        "time.sleep(300)'\n"
    )
    job = submit(env, "--ntasks=2", f"--output={tmp_path}/out.txt", script, cwd=tmp_path)
    segment = Path(f"/dev/shm/mpich_shm_{fnv1a(f'{job}.0'):x}_0")
    deadline = time.monotonic() + 120
    while not segment.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert segment.exists(), (tmp_path / "out.txt").read_text()
    subprocess.run(["scancel", job], env=env, check=True, timeout=60)
    assert final_state(folder, job, 120) == "CANCELLED"
    deadline = time.monotonic() + 30
    while segment.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not segment.exists()
    assert int(job) > 1000  # ids from the clock, not from 1 on every start
