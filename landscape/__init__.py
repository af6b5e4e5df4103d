"""landscape: filter-normalized loss surfaces of trained networks, computed by MPI ranks into one HDF5 file.

The Python API is ``landscape.api``: every command as a function (``api.surface``, ``api.train``,
``api.report``, ...) and the curvature of one network (``hessian_eigs``, ``hessian_trace``,
``hessian_layers``, ``sharpness``, ``relative_flatness``, ``fisher_rao_norm``, ``noise_scale``).  These
and ``loss_surface`` are also reachable as ``landscape.<name>``, imported on first use so that
``import landscape`` stays light.
"""

from .version import __version__ as __version__

_API = (
    "loss_surface",
    "hessian_eigs",
    "hessian_trace",
    "hessian_layers",
    "sharpness",
    "relative_flatness",
    "fisher_rao_norm",
    "noise_scale",
)


def __getattr__(name: str):
    if name in _API:
        from . import api  # torch and the commands: only when the API is used

        return getattr(api, name)
    raise AttributeError(f"module 'landscape' has no attribute {name!r}")
