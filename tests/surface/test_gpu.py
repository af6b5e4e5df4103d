"""On a GPU: the surface agrees with the CPU's, and a rerun on the same GPU is bit-identical.
Skipped where no CUDA device is visible (scripts/gpu_check.sh runs these on a GPU machine)."""
import numpy as np
import pytest
import torch

from conftest import landscape
from landscape.io.surface_file import read as read_surface

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-4), ("float64", 1e-10)])
def test_a_gpu_surface_agrees_with_the_cpu_and_reruns_are_identical(tmp_path, dtype, rtol):
    common = ["surface", "--model", "digits_cnn", "--x=-1:1:7", "--y=-1:1:5", "--dtype", dtype, "--quiet",
              "--dir_file", tmp_path / "d.h5"]
    for name, device in (("cpu", "cpu"), ("gpu", "cuda"), ("gpu_again", "cuda")):
        assert landscape(*common, "--device", device, "--surf_file", tmp_path / f"{name}.h5") == 0
    cpu, gpu, again = (read_surface(str(tmp_path / f"{n}.h5")) for n in ("cpu", "gpu", "gpu_again"))
    assert gpu.run["device"].startswith("cuda") and gpu.run["device_name"] and gpu.run["cuda_version"]
    assert gpu.attrs["device"] == "cuda" and cpu.attrs["device"] == "cpu"
    for q in cpu.values:
        assert np.array_equal(gpu.values[q], again.values[q]), q
        if q.endswith("loss"):
            assert np.allclose(gpu.values[q], cpu.values[q], rtol=rtol, atol=0), q
