"""The reference code's file formats (tomgoldstein/loss-landscape), read into this toolkit's terms.

* Direction files: groups ``xdirection``/``ydirection`` holding tensors named
  ``"0".."n-1"``: ``[p for p in net.parameters()]`` for ``weights`` directions, the
  values of ``net.state_dict()`` (integer buffers included) for ``states``; which
  of the two a file holds is told by the count unless the run says.  Files of
  PyTorch < 0.4.1 have no BatchNorm ``num_batches_tracked`` entries.
* Surface files: arrays declared ``(len(x), len(y))`` but filled in
  ``np.meshgrid(x, y)`` order, with -1 for "not computed".

Checkpoints (``{'state_dict': ...}`` with ``module.`` prefixes) are read by ``io.checkpoint``.
"""

from __future__ import annotations

import numpy as np

from ..errors import MismatchError, param

NOT_COMPUTED = -1.0  # the reference code's marker for "to do" in its surface files
DIR_TYPES = ("weights", "states")
COUNTER = "num_batches_tracked"


def is_direction_file(f) -> bool:
    """An HDF5 file (open) laid out as the reference code writes directions."""
    return f.attrs.get("schema") is None and "xdirection" in f and all(k.isdigit() for k in f["xdirection"])


def in_order(group) -> dict[str, np.ndarray]:
    """The arrays of a reference direction group, ``"0".."n-1"`` in numeric order."""
    return {name: group[name][()] for name in sorted(group, key=int)}


def name_tensors(indexed: dict, model, dir_type: str | None, source: str):
    """Name the tensors ``"0".."n-1"`` of a reference direction after ``model``'s own (a ``torch.nn.Module``).

    Returns ``(dir_type, {name: float64 tensor})`` over the floating-point tensors.
    """
    import torch  # here, so that reading surface files for figures does not import torch

    reference = model.state_dict()
    states = list(reference)
    without_counters = [k for k in states if not k.endswith(COUNTER)]  # torch < 0.4.1 had none
    orders = {"weights": [[n for n, _ in model.named_parameters()]], "states": [states, without_counters]}
    n = len(indexed)
    if dir_type is None:
        fits = [t for t in DIR_TYPES if any(len(o) == n for o in orders[t])]
        if not fits:
            raise MismatchError(
                f"{source} holds {n} tensors; the model has {len(orders['weights'][0])} parameters "
                f"and {len(states)} state_dict entries: it was made for another model"
            )
        dir_type = fits[0]
    names = next((o for o in orders[dir_type] if len(o) == n), None)
    if names is None:
        raise MismatchError(
            f"{source} holds {n} tensors but the model has {len(orders[dir_type][0])} "
            f"for {param('dir_type')}={dir_type}: it was made for another model",
        )
    out = {}
    for (key, array), name in zip(indexed.items(), names):
        if tuple(array.shape) != tuple(reference[name].shape):
            raise MismatchError(
                f"{source}: tensor {key} has shape {tuple(array.shape)} but the model's {name} has "
                f"{tuple(reference[name].shape)}: it was made for another model"
            )
        if reference[name].is_floating_point():
            out[name] = torch.as_tensor(array, dtype=torch.float64)
    return dir_type, out


def surface_values(values: dict, shape: tuple[int, ...]) -> tuple[dict, np.ndarray]:
    """Values of a reference surface file in this toolkit's order, and which points were computed.

    Flat position ``j*nx + i`` holds the point ``(x[i], y[j])``: reshaping to
    ``(ny, nx)`` and transposing restores ``[i, j] = (x[i], y[j])`` for square and
    non-square grids alike.
    """
    if len(shape) == 2:
        nx, ny = shape
        values = {k: v.reshape(-1).reshape(ny, nx).T.copy() for k, v in values.items()}
    else:
        values = {k: v.reshape(shape) for k, v in values.items()}
    done = np.ones(shape, bool)
    for v in values.values():
        done &= v != NOT_COMPUTED
    return values, done
