"""Fingerprints and versions: what a result file records about how it was made."""
from __future__ import annotations

import hashlib
import shlex
import sys

import numpy as np


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
    import h5py
    import torch

    from . import __version__

    return {
        "landscape_version": __version__,
        "python_version": sys.version.split()[0],
        "torch_version": str(torch.__version__),
        "numpy_version": np.__version__,
        "h5py_version": h5py.__version__,
        "hdf5_version": h5py.version.hdf5_version,
    }


def command_line(argv: list[str] | None = None) -> str:
    return shlex.join(sys.argv if argv is None else argv)
