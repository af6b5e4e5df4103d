"""The curvature suite: each named measure of one Hessian against a closed form, run in the order asked,
with one default per setting, and unknown names or settings refused in one line."""

import numpy as np
import pytest

from landscape.curvature import Hessian
from landscape.curvature.suite import NAMES, SuiteConfig, measure, one
from landscape.errors import ConfigError

from .test_lanczos import Matrix
from .test_sharpness import quadratic_case


def exact_hessian(samples) -> np.ndarray:
    """The Hessian of the mean squared error of w·x + b over the samples, in the order (w, b)."""
    x = np.hstack([samples.inputs.numpy(), np.ones((len(samples), 1))])
    return 2.0 * x.T @ x / len(samples)


def test_each_measure_of_a_quadratic_is_its_closed_form_and_they_run_in_the_order_asked():
    model, samples = quadratic_case()  # its Hessian: exactly 2/n XᵀX in (w, b)
    h = Hessian(model, samples, loss="mse")
    exact = np.linalg.eigvalsh(exact_hessian(samples))
    seen = []
    found = measure(h, ["trace", "eigenvalues", "layers"], SuiteConfig(k=2, which="both", tol=1e-10,
                    trace_samples=2000), before=seen.append)  # fmt: skip
    assert seen == ["trace", "eigenvalues", "layers"] and list(found) == seen
    assert found["eigenvalues"]["top"].values == pytest.approx(exact[::-1][:2], rel=1e-8)
    assert found["eigenvalues"]["bottom"].values == pytest.approx(exact[:2], rel=1e-8)
    assert found["trace"].value == pytest.approx(exact.sum(), abs=4 * found["trace"].stderr)
    (layer,) = found["layers"]  # one module, whose own parameters are all of them: the whole Hessian
    assert layer.lambda_max == pytest.approx(exact[-1], rel=1e-6) and layer.parameters == 4


def test_a_known_spectrum_behind_the_interface_gives_its_extremes_and_trace():
    matrix = Matrix([5.0, 2.0, 1.0, 0.5, -1.0])
    found = one(matrix, "eigenvalues", SuiteConfig(which="both", tol=1e-10))
    assert found["top"].values[0] == pytest.approx(5.0) and found["bottom"].values[0] == pytest.approx(-1.0)
    trace = one(matrix, "trace", SuiteConfig(trace_samples=4000, seed=3))
    assert trace.value == pytest.approx(7.5, abs=4 * trace.stderr)


def test_names_and_settings_are_checked_in_one_line():
    assert {"eigenvalues", "trace", "density", "adaptive", "epsilon"} <= set(NAMES)
    with pytest.raises(ConfigError, match="measure=sharpest: expected one of eigenvalues"):
        measure(Matrix([1.0, 2.0]), ["eigenvalues", "sharpest"])
    for bad, match in (
        ({"which": "middle"}, "which=middle"),
        ({"tol": 0}, "tol=0"),
        ({"trace_samples": 1}, "trace_samples=1"),
        ({"method": "power"}, "method=power"),
    ):
        with pytest.raises(ConfigError, match=match):
            SuiteConfig(**bad)
    assert SuiteConfig().record()["sharpness"]["rho"] == SuiteConfig().sharpness.rho
