"""Jobs that span nodes, on a two-node Slurm on this machine (make test-slurm, CI).

``scripts/slurm/local_cluster.sh start DIR --nodes 2`` runs node1 and node2 as two slurmd, each in a
network, UTS and mount namespace of its own: two host names, two addresses on a bridge, so the ranks
of a job on both nodes see two hosts and talk over TCP, as on a cluster. The sbatch scripts take the
nodes from the command line (``-N 2``), unedited."""

import os
import shutil
import subprocess

import pytest

from landscape.io.surface_file import read as read_surface

from .test_sbatch import LANDSCAPE, SCRIPTS, final_state, same, serial, submit

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    if os.geteuid() != 0 or shutil.which("ip") is None:
        if os.environ.get("CI"):
            pytest.fail("the two-node Slurm tests need root and iproute2 in CI")
        pytest.skip("needs root (namespaces) to start a two-node Slurm")
    folder = tmp_path_factory.mktemp("slurm2")
    started = subprocess.run(
        [str(SCRIPTS / "local_cluster.sh"), "start", str(folder), "--nodes", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 0, started.stderr + started.stdout
    env = dict(os.environ, SLURM_CONF=str(folder / "slurm.conf"), LANDSCAPE=LANDSCAPE)
    env.pop("LANDSCAPE_SRUN_MPI", None)
    yield folder, env
    subprocess.run([str(SCRIPTS / "local_cluster.sh"), "stop", str(folder)], timeout=60)
    assert not (folder / "made").exists()


def test_two_idle_nodes_with_host_names_of_their_own(nodes):
    folder, env = nodes
    shown = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True, env=env, timeout=30)
    assert sorted(shown.stdout.split("\n")[:2]) == ["node1 idle", "node2 idle"], shown.stdout
    hosts = subprocess.run(
        ["srun", "-N", "2", "--ntasks-per-node=1", "hostname"], capture_output=True, text=True, env=env, timeout=60
    )
    assert sorted(hosts.stdout.split()) == ["node1", "node2"], hosts.stderr


def test_a_surface_on_two_nodes_is_one_file_equal_to_a_serial_one(nodes, tmp_path):
    """The CPU script, unedited, with -N 2 on the command line: one rank a node, one shared file whose
    run record names each rank's node."""
    folder, env = nodes
    args = ["--model", "digits_cnn", "--x=-1:1:9", "--y=-1:1:5", "--dir_file", str(tmp_path / "d.h5")]
    env = dict(env, LANDSCAPE_ARGS=" ".join([*args, "--surf_file", str(tmp_path / "nodes.h5")]))
    job = submit(
        env,
        "-N",
        "2",
        "--ntasks=2",  # the script's own --ntasks=8 would not fit 2 nodes of 4 CPUs at 4 CPUs a task
        "--cpus-per-task=1",
        f"--output={tmp_path}/out.txt",
        SCRIPTS / "surface_cpu.sbatch",
        cwd=tmp_path,
    )
    assert final_state(folder, job, 300) == "COMPLETED", (tmp_path / "out.txt").read_text()
    ours = read_surface(str(tmp_path / "nodes.h5"))
    assert ours.run["ranks"] == 2 and ours.run["placement"] == {"node1": "0", "node2": "1"}, ours.run
    assert same(ours, serial(args, tmp_path / "serial.h5"))


CHOICE = """
import os
from landscape.parallel import comm, devices
world = comm.world()
seen = world.node_allgather(os.environ.get("CUDA_VISIBLE_DEVICES"))
print(world.rank, os.uname().nodename, world.local_rank, os.environ["SLURM_LOCALID"],
      devices.choose("cuda", world.local_rank, seen, count=2), flush=True)
"""


def test_each_rank_takes_the_gpu_of_its_node_local_rank(nodes):
    """Two ranks a node, each node with two (pretended) GPUs: the node-local rank from MPI's
    shared-memory split is Slurm's local id, and picks the device, on either node."""
    folder, env = nodes
    import sys

    done = subprocess.run(
        ["srun", "-N", "2", "--ntasks-per-node=2", sys.executable, "-c", CHOICE],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = sorted(tuple(line.split()) for line in done.stdout.splitlines())
    assert rows == [
        ("0", "node1", "0", "0", "cuda:0"),
        ("1", "node1", "1", "1", "cuda:1"),
        ("2", "node2", "0", "0", "cuda:0"),
        ("3", "node2", "1", "1", "cuda:1"),
    ], done.stdout


def test_training_on_two_nodes_ends_where_one_rank_does(nodes, tmp_path):
    """Data-parallel over two nodes with the micro-batch given: the weights of a one-rank run, within
    the float-sum tolerance documented for ranks on one node (1e-4 of each tensor's largest value)."""
    import sys

    import torch

    from conftest import landscape

    folder, env = nodes
    flags = ["--model", "digits_mlp", "--dataset", "digits", "--batch_size", "256", "--micro_batch", "64"]
    flags += ["--recipe", "linear", "--lr", "0.02", "--epochs", "2", "--threads", "1", "--quiet"]
    done = subprocess.run(
        ["srun", "-N", "2", "--ntasks-per-node=1", sys.executable, "-m", "landscape", "train", *flags]
        + ["--out", str(tmp_path / "two")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert landscape("train", *flags, "--out", tmp_path / "one") == 0
    one, two = (torch.load(tmp_path / r / "final.pt", weights_only=True) for r in ("one", "two"))
    assert two["meta"]["ranks"] == 2 and one["meta"]["ranks"] == 1
    for name, a in one["state_dict"].items():
        b = two["state_dict"][name]
        assert float((a - b).abs().max()) <= 1e-4 * float(a.abs().max()), name


def test_a_node_lost_mid_job_ends_it_and_the_resubmitted_job_finishes_identical(nodes, tmp_path, plugins, monkeypatch):
    """node2's slurmd and ranks killed while a two-node surface runs: Slurm declares the node down and
    ends the job (NODE_FAIL) within a minute.  Rank 0, signalled by Slurm
    while it waits for rank 1 at the end of a round, leaves a few seconds later instead of hanging in the
    collective call, and records in the file how the run ended (its own line is lost with srun, which
    Slurm ends at once).  The file reads back; the job resubmitted on the node left says how the last
    run ended, resumes, and ends equal bit for bit to an uninterrupted serial run.
    Last in this module: node2 stays down."""
    import time

    from conftest import done_count

    folder, env = nodes
    args = ["--model", f"{plugins}:slow_model", "--x=-1:1:41", "--no_test", "--batch_size", "5000"]
    args += ["--kernel", "reference", "--points_per_pass", "1", "--dir_file", str(tmp_path / "d.h5")]
    surf = tmp_path / "lost.h5"
    flags = [*args, "--round_seconds", "0.2", "--surf_file", str(surf)]
    slow = dict(env, LANDSCAPE_ARGS=" ".join(flags), LANDSCAPE_TEST_SLEEP="0.3")
    job = submit(slow, "-N", "2", "--ntasks=2", "--cpus-per-task=1", f"--output={tmp_path}/out.txt",
                 SCRIPTS / "surface_cpu.sbatch", cwd=tmp_path)  # fmt: skip
    deadline = time.monotonic() + 120
    while done_count(surf) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert 4 <= done_count(surf) < 41, (tmp_path / "out.txt").read_text()
    pids = subprocess.run(["ip", "netns", "pids", "lsnode2"], capture_output=True, text=True).stdout.split()
    subprocess.run(["kill", "-9", *pids])  # the node is gone: its slurmd and its rank
    lost = time.monotonic()
    assert final_state(folder, job, 90) == "NODE_FAIL"
    assert time.monotonic() - lost < 60
    said = (tmp_path / "out.txt").read_text()
    assert "DUE TO NODE FAILURE" in said, said
    # srun usually adds "srun: error: Node failure on node2", but Slurm may end srun before it hears of the
    # node: what names the lost rank and node for sure is rank 0's record in the file, read below
    part = None  # readable, what was written kept, and how the run ended
    while (part is None or "ended" not in part.run) and time.monotonic() - lost < 60:
        try:  # rank 0 may still be writing its end record, a few seconds after Slurm's signal
            part = read_surface(str(surf))
        except Exception:  # noqa: BLE001 - read again
            pass
        time.sleep(0.5)
    assert part is not None and part.run.get("ended") == "lost rank 1 on node2", (part and part.run, said)
    assert 4 <= part.done.sum() < 41

    subprocess.run(["scancel", job], env=env, timeout=30)  # Slurm requeued it for two nodes: never again
    again = submit(dict(slow, LANDSCAPE_TEST_SLEEP="0"), "-N", "1", "-w", "node1", "--ntasks=2", "--cpus-per-task=1",
                   f"--output={tmp_path}/again.txt", SCRIPTS / "surface_cpu.sbatch", cwd=tmp_path)  # fmt: skip
    assert final_state(folder, again, 300) == "COMPLETED", (tmp_path / "again.txt").read_text()
    resumed = read_surface(str(surf))
    said = (tmp_path / "again.txt").read_text()
    assert "ended: lost rank 1 on node2" in said and f"{int(part.done.sum())} already done" in said, said
    monkeypatch.setenv("LANDSCAPE_TEST_SLEEP", "0")
    assert same(resumed, serial(args, tmp_path / "serial.h5"))
