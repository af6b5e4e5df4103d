"""Which device each rank computes on: a pure function of what the node's ranks see (no MPI here).

Under MPI, ranks on one node are told apart by their node-local rank (from an MPI shared-memory
split, done by ``parallel.comm``), not by launcher-specific variables.  Ranks that see the same
GPUs take one each, in order; a Slurm job with ``--gpus-per-task`` gives each rank its own
``CUDA_VISIBLE_DEVICES``, and each rank then takes the first GPU it sees.  More ranks than GPUs
would make them share one silently: that is an error unless sharing is asked for.
"""

from __future__ import annotations

import os

import torch

from ..errors import ConfigError, InputError, UsageError, param

CHOICES = ("auto", "cpu", "cuda", "cuda:N")
DEVICE_HELP = (  # every computing command's --device and --allow_shared_gpus say the same
    "auto (CUDA when there is one), cpu, cuda (each rank the GPU of its node-local rank, or the one Slurm binds "
    "to it), cuda:N (default: auto)"
)
SHARED_GPUS_HELP = "let several ranks of a node share a GPU (refused by default)"


def check_spec(spec: str) -> str:
    if spec in ("auto", "cpu", "cuda"):
        return spec
    if isinstance(spec, str) and spec.startswith("cuda:") and spec[5:].isdigit():
        return spec
    raise ConfigError("device", spec, "auto, cpu, cuda or cuda:N")


def choose(spec: str, local_rank: int, visible: list[str], count: int, allow_shared: bool = False) -> str:
    """The torch device of node-local rank ``local_rank``.

    ``visible``: what each rank of the node sees (its ``CUDA_VISIBLE_DEVICES``, in node-local rank
    order); ``count``: the CUDA devices this rank sees (``torch.cuda.device_count()``).
    """
    check_spec(spec)
    if spec == "cpu" or (spec == "auto" and count == 0):
        return "cpu"
    shown = visible[local_rank] if visible[local_rank] is not None else "not set"
    if count == 0:
        raise InputError(
            f"{param('device')}={spec}: no CUDA device is visible to this rank (CUDA_VISIBLE_DEVICES={shown}); "
            f"expected at least one, or {param('device')}=cpu",
        )
    sharing = [rank for rank, seen in enumerate(visible) if seen == visible[local_rank]]
    if spec.startswith("cuda:"):
        index = int(spec[5:])
        if index >= count:
            raise InputError(
                f"{param('device')}={spec}: this rank sees {count} CUDA device{'s' * (count > 1)}; expected "
                f"an index below {count}",
            )
        wanted = len(sharing)  # every rank that sees the same devices takes this one
    else:
        index = sharing.index(local_rank) % count
        wanted = len(sharing) if len(sharing) > count else 1
    if wanted > 1 and not allow_shared:
        raise UsageError(
            f"{len(sharing)} ranks on this node would share {count if spec == 'cuda' else 1} GPU"
            f"{'s' * (spec == 'cuda' and count > 1)} ({spec}): expected at most one rank per GPU; start "
            f"fewer ranks per node, or give {param('allow_shared_gpus')}",
        )
    return f"cuda:{index}"


def for_rank(spec: str, comm, allow_shared: bool = False) -> str:
    """This rank's device (``choose`` with what the ranks of its node see, from ``comm``); on a GPU,
    deterministic algorithms, so that a rerun gives the same bits."""

    visible = comm.node_allgather(os.environ.get("CUDA_VISIBLE_DEVICES"))
    count = torch.cuda.device_count() if spec != "cpu" else 0
    device = choose(spec, comm.local_rank, visible, count, allow_shared)
    if device.startswith("cuda"):
        exact(device)
    return device


def exact(device: str) -> None:
    """A GPU computes as asked and the same each time: deterministic algorithms, and float32 products
    in float32 (not TensorFloat-32, which cuDNN's convolutions use by default and which rounds their
    inputs to 10 bits: a float32 surface would then differ from the CPU's in its fourth digit)."""

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # needed by deterministic cuBLAS
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    if torch.device(device).index is not None:
        torch.cuda.set_device(torch.device(device))


def record(device: str) -> dict:
    """The device for a run record: its name, and on a GPU its model and the CUDA version."""
    if not device.startswith("cuda"):
        return {"device": device}

    return {
        "device": device,
        "device_name": torch.cuda.get_device_name(torch.device(device)),
        "cuda_version": str(torch.version.cuda),
    }
