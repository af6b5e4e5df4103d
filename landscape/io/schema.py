"""The one HDF5 schema: every name of surface and direction files, defined here and nowhere else.

Surface file (one per network and grid), schema version 2::

    /xcoordinates            (nx,)      float64  dimension scale: coefficient of the x direction
    /ycoordinates            (ny,)      float64  dimension scale (2-D surfaces only)
    /<data>_<metric>         (nx[,ny])  float64  train_loss, train_acc, test_loss, ...: NaN until
                                                 computed; [i, j] is (x[i], y[j]); attrs long_name, units
    /done                    (nx[,ny])  uint8    1 where the point has been computed
    /checksum                (nx[,ny])  uint64   of the point's index and values (``point_checksums``)
    /runs                    (RUN_SLOTS,) fixed-size JSON records of the runs (``io.runs``)
    attrs: schema, schema_version, identity (JSON) and one attribute per identity field

The identity is what the values are values of (model, data, directions, grid, loss, precision,
BatchNorm policy, quantities); how they were computed (kernel, batch size, points per pass, device,
threads, versions, host) is provenance, in each run's record.  Files of landscape 0.2 kept some
provenance in their identity (``PROVENANCE``): those fields are ignored when such a file is resumed.

Everything is allocated when the file is made, and nothing but raw data is
written afterwards: a job killed during any write cannot damage the file's
structure (a kill in the middle of a value leaves its checksum unmatched and the
point not done).  ``done`` is the only record of progress: a loss of 0, a
negative value, NaN or inf from a diverged point is a result like any other.

Direction file::

    /xdirection/<parameter name>   float64 tensors keyed by the model's own names
    /ydirection/<parameter name>   (2-D only)
    attrs on each group: kind (random|target|same as x ...|PCk of T checkpoints), norm, ignore, seed,
    target_file, target_sha256
    /trajectory/coordinates        (T, 2) float64: each checkpoint on the plane (directions from pca_from)
    /trajectory/files, /labels     (T,) the checkpoints and their epochs
    attrs on /trajectory: explained_variance_ratio (2,), random_walk_ratio (2,)
    root attrs: schema, schema_version, dir_type, same_dir, seed, model, origin_sha256, digest, versions
"""

from __future__ import annotations

import numpy as np

SURFACE_SCHEMA = "landscape.surface"
DIRECTION_SCHEMA = "landscape.directions"
SCHEMA_VERSION = 2  # 1 (landscape 0.1): run records as one JSON attribute, no checksums or units
DIRECTION_SCHEMA_VERSION = 1

X, Y = "xcoordinates", "ycoordinates"
COORDINATE_NAMES = {X: "coefficient of the x direction", Y: "coefficient of the y direction"}
DONE = "done"
CHECKSUM = "checksum"
RUNS = "runs"
IDENTITY = "identity"
BOOKKEEPING = (X, Y, DONE, CHECKSUM, RUNS)  # datasets that are not quantities
# how a surface was computed, which landscape 0.2 recorded in the identity: not compared on resuming
PROVENANCE = frozenset(
    {
        "batch_size",
        "points_per_pass",
        "compile",
        "set_passes",
        "eager_passes",
        "compiled_passes",
        "first_layer",
        "last_layer",
        "device",
    }
)

RUN_SLOTS = 32  # run records kept: the latest RUN_SLOTS // 2 runs (a start and an end record each)
RUN_SLOT_BYTES = 4096

AXES = ("xdirection", "ydirection")
TRAJECTORY = "trajectory"

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: every input bit changes about half of the output bits."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def point_checksums(flat: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A 64-bit checksum of each point: its flat index and the exact bits of its values ``(n, q)``,
    the quantities in the alphabetical order of their names.

    Never 0, the fill value of points not computed, so a done mark set by
    corruption on a point never written is caught.
    """
    with np.errstate(over="ignore"):
        h = _mix(np.asarray(flat, dtype=np.uint64) + _GOLDEN)
        bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64).reshape(len(h), -1)
        for column in bits.T:
            h = _mix(h ^ column)
    h[h == 0] = 1
    return h
