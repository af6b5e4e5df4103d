"""Fingerprints and versions: what a result file records about how it was made."""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import socket
import sys

import h5py
import numpy as np
import torch

from .version import __version__


def sha256_file(path: str, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(block), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_tensors(tensors: dict) -> str:
    """Digest of named tensors or arrays: names, dtypes, shapes and exact bytes."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        value = tensors[name]
        array = value.detach().cpu().contiguous().numpy() if hasattr(value, "detach") else np.ascontiguousarray(value)
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def versions() -> dict[str, str]:
    return {
        "landscape_version": __version__,
        "python_version": sys.version.split()[0],
        "torch_version": str(torch.__version__),
        "numpy_version": np.__version__,
        "h5py_version": h5py.__version__,
        "hdf5_version": h5py.version.hdf5_version,
    }


def machine() -> dict[str, str | int]:
    """The host and its CPU: results of floating-point kernels can differ from one CPU to another."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"host": socket.gethostname(), "cpu": cpu, "cores": os.cpu_count() or 0, "platform": platform.platform()}


def command_line(argv: list[str] | None = None) -> str:
    return shlex.join(sys.argv if argv is None else argv)
