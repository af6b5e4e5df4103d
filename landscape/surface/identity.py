"""What a surface is, apart from how it was computed.

A surface file's identity is what makes two computations the same: the model's weights, the data, the
directions, the grid, the loss, the BatchNorm policy, the precision and the quantities.  An existing file
is resumed only by a job of the same identity, field for field.  How a run computed its points (kernel,
batch size, points per pass, how the sets went through, device; threads, versions and host besides)
is provenance, kept in each run's record (``how``): it changes the values' last bits only, so a surface
begun one way may be finished another.
"""

from __future__ import annotations

from .. import directions as dirs
from ..data import SUBSET_SEED
from ..plugins import canonical
from ..provenance import sha256_file
from .config import SurfaceJob
from .evaluation import Evaluator
from .inputs import Loaded


def identity(job: SurfaceJob, loaded: Loaded, d: dirs.Directions, ev: Evaluator) -> dict:
    """What a surface's values are values of: an existing file must match it field for field.

    How they were computed (kernel, batch size, points per pass, device, threads, versions) is
    provenance, kept in each run's record: it changes the values' last bits only, so a surface begun one
    way may be finished another, and its run records say which points came from which run."""
    data, prints = loaded.data, loaded.prints
    identity = {
        "grid_x": job.grid.x.spec,
        "grid_y": job.grid.y.spec if job.grid.y else "",
        "model": canonical(job.model.model),
        "origin_sha256": prints["origin"],
        "model_file_sha256": sha256_file(job.model.model_file) if job.model.model_file else "",
        "dataset": canonical(data.name),
        "train_size": len(data.train),
        "raw_data": bool(job.data.raw_data),
        "data_split": job.data.data_split,
        "split_idx": job.data.split_idx,
        "train_subset": -1 if job.data.train_subset is None else job.data.train_subset,
        "subset_seed": SUBSET_SEED,
        "train_sha256": prints["train"],
        "test_size": len(data.test) if data.test is not None else 0,
        "test_sha256": prints["test"],
        "loss_name": ev.loss.name,
        "dtype": ev.cfg.dtype,
        "bn": "recalibrate" if ev.problem.recalibrator else ("states" if d.dir_type == "states" else "eval"),
        "bn_batches": len(ev.problem.recalibrator.batches) if ev.problem.recalibrator else 0,
        "bn_batch_size": len(ev.problem.recalibrator.batches[0]) if ev.problem.recalibrator else 0,
        "dir_type": d.dir_type,
        "dir_seed": d.seed,
        "same_dir": bool(d.same_dir),
        "directions_sha256": d.digest,
    }
    for key, args in (("model_args", job.model.model_args), ("data_args", job.data.data_args)):
        if args:  # only then: files of factories without arguments keep the identity they always had
            identity[key] = args
    if ev.cfg.curvature:  # only then: files without curvature keep the identity they always had
        identity.update(curvature=True, curvature_tol=ev.cfg.curvature_tol, curvature_method="lanczos")
    for axis, info in zip("xy", d.axes[: job.grid.ndim]):
        identity[f"{axis}direction"] = info.kind
        identity[f"{axis}norm"] = info.norm
        identity[f"{axis}ignore"] = info.ignore
        if info.target_sha256:
            identity[f"model_file{2 if axis == 'x' else 3}_sha256"] = info.target_sha256
    return identity


def how(ev: Evaluator) -> dict:
    """How this run computes its points: its run record's part that the identity leaves out."""
    return {
        "kernel": ev.kernel.name,
        "batch_size": ev.cfg.batch_size,
        "points_per_pass": ev.points_per_pass,
        "set_passes": "joined" if ev.sets.joined else "apart",
        **({"first_layer": "by linearity"} if getattr(ev.kernel, "start", None) is not None else {}),
    }
