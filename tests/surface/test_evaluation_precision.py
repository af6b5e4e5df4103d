"""bfloat16 and float16 surfaces: the model and data in that type, the losses taken in float32, and the
centre also evaluated in float32 with the difference stored beside each quantity."""

import h5py
import numpy as np
import pytest

from landscape.io.surface_file import read as read_surface

from conftest import landscape


@pytest.mark.parametrize("dtype, model, rtol", [("bfloat16", "digits_cnn", 2e-2), ("float16", "digits_mlp", 2e-3)])
def test_low_precision_surfaces_record_their_error_at_the_centre(tmp_path, dtype, model, rtol):
    args = [
        "surface",
        "--model",
        model,
        "--x=-1:1:3",
        "--no_test",
        "--threads",
        "1",
        "--quiet",
        "--dir_file",
        tmp_path / "d.h5",
    ]
    assert landscape(*args, "--dtype", dtype, "--surf_file", tmp_path / "low.h5") == 0
    assert landscape(*args, "--surf_file", tmp_path / "f32.h5") == 0
    low, f32 = read_surface(str(tmp_path / "low.h5")), read_surface(str(tmp_path / "f32.h5"))
    assert low.attrs["dtype"] == dtype
    with h5py.File(tmp_path / "low.h5") as f:
        attrs = dict(f["train_loss"].attrs)
    assert attrs["at_centre"] == low.values["train_loss"][1]
    assert attrs["float32_at_centre"] == f32.values["train_loss"][1]  # the same float32 evaluation
    assert attrs["difference_at_centre"] == attrs["at_centre"] - attrs["float32_at_centre"]
    assert attrs["difference_at_centre"] != 0.0  # the low precision shows
    assert np.allclose(low.values["train_loss"], f32.values["train_loss"], rtol=rtol)
