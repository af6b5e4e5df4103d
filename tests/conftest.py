"""Shared helpers: run the CLIs in a subprocess, serially or under an MPI launcher, and watch them."""

import os
import re
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from landscape.io.paths import cache_folder
from landscape.parallel.launch import cli_command, mpiexec_command

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = str(ROOT / "tests" / "plugins.py")


def require_mpi() -> None:
    if mpiexec_command() is None:
        if os.environ.get("CI"):
            pytest.fail("no MPI launcher found in CI: MPI tests must run there (set LANDSCAPE_MPIEXEC)")
        pytest.skip("no MPI launcher (install mpi4py and mpich, or set LANDSCAPE_MPIEXEC)")


def command(program: str, args: list[str], ranks: int | None = None) -> list[str]:
    if ranks is not None:
        require_mpi()
    return cli_command(program, args, ranks)


def run(program: str, args: list[str], ranks: int | None = None, timeout: float = 180, **kw):
    env = dict(os.environ, **kw.pop("env", {}))
    return subprocess.run(
        command(program, args, ranks),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=kw.pop("cwd", ROOT),
        env=env,
        **kw,
    )


def start(program: str, args: list[str], ranks: int | None = None, env: dict | None = None) -> subprocess.Popen:
    """A job running in the background, in a session of its own (so its whole tree can be signalled)."""
    return subprocess.Popen(
        command(program, args, ranks),
        cwd=ROOT,
        env=dict(os.environ, **(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants (MPICH's Hydra puts every rank in a session of its own)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def unlocked(path) -> bool:
    try:
        h5py.File(path, "r").close()
        return True
    except OSError:
        return False


def done_count(path) -> int:
    try:
        with h5py.File(path, "r", locking=False) as f:
            return int(f["done"][()].sum())
    except (OSError, KeyError):
        return 0


def begun_before(path, field: str, value=None) -> None:
    """Make the surface file at ``path`` what an older landscape leaves when its job is interrupted: the
    identity ``field`` absent (older than the field) or holding ``value``, point 1 still to compute."""
    import json

    from landscape.io.schema import IDENTITY

    with h5py.File(path, "r+") as f:
        identity = json.loads(f.attrs[IDENTITY])
        if value is None:
            del identity[field], f.attrs[field]
        else:
            identity[field] = f.attrs[field] = value
        f.attrs[IDENTITY] = json.dumps(identity)
        f["done"][1] = False


def digits_kernel(cfg, stderr: bool = False, model: str = "digits_mlp"):
    """An evaluator of a digits model (seed 0) along two Gaussian directions (seed 1), on both digits sets,
    with the ``EvaluationConfig`` ``cfg`` (what it leaves ``auto``: the reference kernel, batch 128, one point
    per pass), and the losses' standard errors with ``stderr``."""
    from dataclasses import replace

    import torch

    from landscape.data import load_named
    from landscape.models import build_model
    from landscape.surface.evaluation import Evaluator

    cfg = replace(
        cfg,
        **{
            name: value
            for name, value in (("kernel", "reference"), ("batch_size", 128), ("points_per_pass", 1))
            if getattr(cfg, name) == "auto"
        },
    )
    torch.manual_seed(0)
    net = build_model(model).eval()
    origin = {n: p.detach().double() for n, p in net.named_parameters()}
    g = torch.Generator().manual_seed(1)
    dx = {n: torch.randn(v.shape, generator=g, dtype=torch.float64) for n, v in origin.items()}
    dy = {n: torch.randn(v.shape, generator=g, dtype=torch.float64) for n, v in origin.items()}
    if model != "digits_mlp":  # a convolutional network's loss at unit Gaussian steps is astronomical: smaller ones
        dx, dy = ({n: 0.1 * v for n, v in d.items()} for d in (dx, dy))
    data = load_named("digits")
    return Evaluator(net, origin, dx, dy, {"train": data.train, "test": data.test}, cfg.loss_name, cfg, stderr=stderr)


def landscape(*argv) -> int:
    """The ``landscape`` command run in this process (one error boundary): its exit code."""
    from landscape.cli.main import main

    return main([str(a) for a in argv])


@pytest.fixture
def cli(capfd, monkeypatch):
    """``cli(program, args, cwd=..., env=...)``: ``run``'s result (exit code, stdout, stderr) from the command
    run in this process, without a new interpreter's seconds of imports. Output is captured at the file
    descriptors, so what HDF5 or torch print from C is seen too. Not for plug-ins named by a module under
    the current folder (a module imported once stays imported) nor for jobs that must be signalled."""
    import torch

    def call(program: str, args: list[str], cwd=None, env: dict | None = None, timeout=None):
        """``timeout`` is taken for ``run``'s sake; pytest-timeout bounds the test."""
        threads, path = torch.get_num_threads(), list(sys.path)
        with monkeypatch.context() as patch:
            patch.chdir(cwd or ROOT)
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            capfd.readouterr()
            code = landscape(program, *args)
            out, err = capfd.readouterr()
        torch.set_num_threads(threads)  # a command sets its own count
        sys.path[:] = path  # and puts the folder of a plug-in on the path
        return subprocess.CompletedProcess([program, *map(str, args)], code, out, err)

    return call


def mean_losses(model, sets: dict, batch_size: int = 128) -> list[float]:
    """Each set's mean cross-entropy of ``model`` (its own weights) as the reference kernel sums it, so a
    surface's centre can be compared with it bit for bit: ``sets`` maps names to Samples."""
    import torch

    from landscape.losses import Loss
    from landscape.surface.kernels import Problem, make

    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    zero = {n: torch.zeros_like(v) for n, v in origin.items()}
    problem = Problem.of(
        model,
        origin,
        [zero],
        {name: (s.inputs, s.targets) for name, s in sets.items()},
        Loss("crossentropy"),
        torch.float32,
        torch.device("cpu"),
        True,
    )
    with torch.inference_mode():
        sums = make("reference", problem, batch_size, 1)(torch.zeros((1, 2), dtype=torch.float64))[0]
    return [float(total) / len(s) for total, s in zip(sums[:, 0], sets.values())]


@pytest.fixture(scope="module")
def one_thread():
    """Small models gain nothing from intra-op threads, and on a busy machine lose much."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session", autouse=True)
def one_thread_per_worker():
    """Under pytest-xdist (make test) every core runs a worker of its own: torch's threads in each would
    only contend for the same cores."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    """This session's (this worker's) cache folder, ``$LANDSCAPE_CACHE`` for every command the tests run:
    the MNIST-1D samples already generated are linked in, what the session generates stays there."""
    real = Path(cache_folder())
    folder = tmp_path_factory.mktemp("cache")
    for path in real.glob("mnist1d_*.npz") if real.is_dir() else ():
        (folder / path.name).symlink_to(path)
    os.environ["LANDSCAPE_CACHE"] = str(folder)
    return folder


@pytest.fixture(autouse=True)
def no_remembered_choices(session_cache):
    """Every test starts with no settings ``auto`` remembered (``surface/choices.py``): one that watches
    ``auto`` measure must not find another test's choice."""
    (session_cache / "choices.json").unlink(missing_ok=True)


@pytest.fixture
def plugins() -> str:
    return PLUGINS


SHARED_MEMORY = Path("/dev/shm")
MPI_SEGMENTS = ("mpich_", "vader_segment.")  # MPICH's node-shared memory, and Open MPI's (the phdf5 stack)


def mpi_segments() -> set[str]:
    """The MPI libraries' shared-memory files, removed by the last rank's MPI_Finalize on each node."""
    if not SHARED_MEMORY.is_dir():
        return set()
    return {p.name for p in SHARED_MEMORY.iterdir() if p.name.startswith(MPI_SEGMENTS)}


def mapped_segments() -> set[str]:
    names = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/maps") as maps:
                    names.update(re.findall(r" /dev/shm/(\S+)", maps.read()))
            except OSError:
                continue
    return names


@pytest.fixture(scope="session", autouse=True)
def no_shared_memory_left_behind():
    """Ranks the tests kill with SIGKILL leave their MPI's segments in /dev/shm (2 MB each, never reclaimed,
    and named after the launcher's job id, which a fresh Slurm repeats); remove those this session left
    that no process maps any more."""
    before = mpi_segments()
    yield
    for name in mpi_segments() - before - mapped_segments():
        (SHARED_MEMORY / name).unlink(missing_ok=True)
