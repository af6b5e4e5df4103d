"""A case whose answer is known exactly: a linear model with MSE loss.

For y = W x + b the residual at (a, b) is r0 + a*rx + b*ry, where r0 = W0 x + b0 - t,
rx = Dx x + dbx, ry = Dy x + dby; so the loss is the quadratic
L(a, b) = mean over samples and outputs of (r0 + a rx + b ry)^2, computed here by hand.
"""

import h5py
import numpy as np
import pytest

from landscape.cli.surface import main
from landscape.io.surface_file import read as read_surface


def quadratic(dir_file, model_weight, model_bias, x, t, a, b):
    with h5py.File(dir_file) as f:
        dx = {k: f["xdirection"][k][()] for k in f["xdirection"]}
        dy = {k: f["ydirection"][k][()] for k in f["ydirection"]}
    r0 = x @ model_weight.T + model_bias - t
    rx = x @ dx["weight"].T + dx["bias"]
    ry = x @ dy["weight"].T + dy["bias"]
    A, B = np.meshgrid(a, b, indexing="ij")
    terms = {
        "1": np.mean(r0 * r0),
        "a": 2 * np.mean(r0 * rx),
        "b": 2 * np.mean(r0 * ry),
        "aa": np.mean(rx * rx),
        "ab": 2 * np.mean(rx * ry),
        "bb": np.mean(ry * ry),
    }
    return terms["1"] + terms["a"] * A + terms["b"] * B + terms["aa"] * A**2 + terms["ab"] * A * B + terms["bb"] * B**2


@pytest.mark.parametrize("norm", ["filter", "none"])
def test_linear_mse_surface_is_the_exact_quadratic(tmp_path, plugins, norm):
    surf = tmp_path / "lin.h5"
    assert (
        main(
            [
                "--model",
                f"{plugins}:linear_model",
                "--dataset",
                f"{plugins}:regression_data",
                "--loss_name",
                "mse",
                "--dtype",
                "float64",
                "--x=-2:1.5:15",
                "--y=-1:3:9",
                "--xnorm",
                norm,
                "--xignore",
                "none",
                "--surf_file",
                str(surf),
                "--quiet",
            ]
        )
        == 0
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("p", plugins)
    p = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(p)
    model = p.linear_model()
    (x, t), (xt, tt) = p.regression_data()
    w, bias = model.weight.detach().numpy(), model.bias.detach().numpy()
    s = read_surface(str(surf))
    assert s.done.all() and s.values["train_loss"].shape == (15, 9)
    expected = quadratic(str(tmp_path / "lin.directions.h5"), w, bias, x.numpy(), t.numpy(), s.x, s.y)
    assert np.allclose(s.values["train_loss"], expected, rtol=1e-10, atol=1e-12)
    expected_test = quadratic(str(tmp_path / "lin.directions.h5"), w, bias, xt.numpy(), tt.numpy(), s.x, s.y)
    assert np.allclose(s.values["test_loss"], expected_test, rtol=1e-10, atol=1e-12)
    assert "train_acc" not in s.values  # regression: no accuracy
