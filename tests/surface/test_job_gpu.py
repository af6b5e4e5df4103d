"""On a GPU: the surface agrees with the CPU's, reruns are bit-identical, several points per pass agree
with one, bfloat16 records its error, auto's choice is what a rerun at those settings computes, and
ranks that would share one GPU are refused unless asked for (and then give the one rank's bits).
Skipped where no CUDA device is visible (scripts/gpu_check.sh runs these on a GPU machine)."""

import h5py
import numpy as np
import pytest
import torch

from landscape.io.surface_file import read as read_surface

from conftest import landscape, run

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]

GRID = ["--x=-1:1:7", "--y=-1:1:5"]
FIXED = ["--kernel", "reference", "--batch_size", "512", "--points_per_pass", "1"]  # auto may choose otherwise each run


def surface(tmp_path, name: str, *extra) -> object:
    """``landscape surface`` of the demo CNN through one direction file; the file read back."""
    args = [
        "surface",
        "--model",
        "digits_cnn",
        *GRID,
        "--quiet",
        "--dir_file",
        tmp_path / "d.h5",
        "--surf_file",
        tmp_path / f"{name}.h5",
        *FIXED,
        *extra,
    ]
    assert landscape(*args) == 0, name
    return read_surface(str(tmp_path / f"{name}.h5"))


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-4), ("float64", 1e-10)])
def test_a_gpu_surface_agrees_with_the_cpu_and_reruns_are_identical(tmp_path, dtype, rtol):
    cpu, gpu, again = (
        surface(tmp_path, name, "--dtype", dtype, "--device", device)
        for name, device in (("cpu", "cpu"), ("gpu", "cuda"), ("gpu_again", "cuda"))
    )
    assert gpu.run["device"].startswith("cuda") and gpu.run["device_name"] and gpu.run["cuda_version"]
    assert gpu.run["device"].startswith("cuda") and cpu.run["device"] == "cpu"  # provenance, not identity
    for q in cpu.values:
        assert np.array_equal(gpu.values[q], again.values[q]), q
        if q.endswith("loss"):
            assert np.allclose(gpu.values[q], cpu.values[q], rtol=rtol, atol=0), q


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-6), ("float64", 1e-12)])
def test_several_points_per_pass_on_a_gpu_agree_with_one(tmp_path, dtype, rtol):
    one, four = (
        surface(tmp_path, f"k{k}", "--dtype", dtype, "--device", "cuda", "--kernel", name, "--points_per_pass", str(k))
        for name, k in (("reference", 1), ("reference", 4))
    )
    assert four.run["kernel"] == "reference" and int(four.run["points_per_pass"]) == 4
    for q in one.values:
        if q.endswith("loss"):
            assert np.allclose(four.values[q], one.values[q], rtol=rtol, atol=0), q


def test_a_bfloat16_surface_on_a_gpu_records_its_error_at_the_centre(tmp_path):
    low = surface(tmp_path, "low", "--device", "cuda", "--dtype", "bfloat16")
    f32 = surface(tmp_path, "f32", "--device", "cuda")
    with h5py.File(tmp_path / "low.h5") as f:
        attrs = dict(f["train_loss"].attrs)
    assert low.attrs["dtype"] == "bfloat16"
    values = f32.values["train_loss"].reshape(-1)
    assert attrs["float32_at_centre"] == values[values.size // 2]  # the same float32 evaluation (7 x 5: the middle)
    assert attrs["difference_at_centre"] == attrs["at_centre"] - attrs["float32_at_centre"]
    assert attrs["difference_at_centre"] != 0.0
    assert np.allclose(low.values["train_loss"], f32.values["train_loss"], rtol=2e-2)


def test_auto_on_a_gpu_records_settings_that_give_its_bits_again(tmp_path):
    auto = surface(
        tmp_path, "auto", "--device", "cuda", "--kernel", "auto", "--batch_size", "auto", "--points_per_pass", "auto"
    )
    kernel, batch, k = auto.run["kernel"], int(auto.run["batch_size"]), int(auto.run["points_per_pass"])
    given = ["--kernel", kernel, "--batch_size", str(batch), "--points_per_pass", str(k)]
    fixed = surface(tmp_path, "fixed", "--device", "cuda", *given)
    for q in auto.values:
        assert np.array_equal(auto.values[q], fixed.values[q]), q


def test_ranks_sharing_one_gpu_are_refused_unless_allowed_and_then_give_one_ranks_bits(tmp_path):
    count = torch.cuda.device_count()
    ranks = count + 1
    args = ["--model", "digits_cnn", *GRID, *FIXED, "--quiet", "--device", "cuda", "--dir_file", str(tmp_path / "d.h5")]
    refused = run("surface", [*args, "--surf_file", str(tmp_path / "refused.h5")], ranks=ranks)
    assert refused.returncode != 0
    assert f"{ranks} ranks on this node would share {count} GPU" in refused.stderr, refused.stderr
    assert not (tmp_path / "refused.h5").exists()
    shared = run("surface", [*args, "--allow_shared_gpus", "--surf_file", str(tmp_path / "shared.h5")], ranks=ranks)
    assert shared.returncode == 0, shared.stderr
    alone = surface(tmp_path, "alone", "--device", "cuda")
    together = read_surface(str(tmp_path / "shared.h5"))
    assert together.run["ranks"] == ranks
    for q in alone.values:
        assert np.array_equal(together.values[q], alone.values[q]), q
