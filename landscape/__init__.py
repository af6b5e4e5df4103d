"""landscape: filter-normalized loss surfaces of trained networks, computed by MPI ranks into one HDF5 file.

The Python API (``landscape.api``): ``loss_surface``, ``train``, ``hessian_eigs``, ``hessian_trace``, ``sharpness``,
also reachable as ``landscape.<name>`` (imported on first use: ``import landscape`` stays light).
"""

from .version import __version__ as __version__

_API = ("loss_surface", "train", "hessian_eigs", "hessian_trace", "sharpness")


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'landscape' has no attribute {name!r}")
