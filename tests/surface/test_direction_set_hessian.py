"""Surfaces along the Hessian's top eigenvectors (``--hessian``): each direction is a unit eigenvector of
the training loss's Hessian with its eigenvalue recorded, and along it an exact quadratic rises as
λ t² / 2 — the closed form the 1-D surface must reproduce."""

import numpy as np
import pytest
import torch

import landscape
from landscape.curvature import Hessian
from landscape.data import Samples
from landscape.errors import MismatchError, UsageError
from landscape.io import direction_file

from ..curvature.test_sharpness import least_squares

pytestmark = pytest.mark.usefixtures("one_thread")


def flat(direction: dict, names) -> np.ndarray:
    return torch.cat([direction[n].reshape(-1) for n in names]).numpy()


def test_along_the_top_eigenvector_an_exact_quadratic_rises_as_lambda_t_squared_over_two(tmp_path):
    model, samples, D, _ = least_squares()
    result = landscape.loss_surface(
        model,
        (samples.inputs, samples.targets),
        "mse",
        hessian=True,
        x="-0.2:0.2:5",
        dtype="float64",
        surf_file=str(tmp_path / "q.h5"),
    )
    lam = 2 * D.max()  # H = 2 diag(D)
    t, f = result.surface.x, result.surface.values["train_loss"]
    centre = f[t == 0][0]
    assert np.allclose(f - centre, lam * t**2 / 2, rtol=1e-9, atol=1e-14)
    stored = direction_file.read(str(tmp_path / "q.directions.h5"))
    assert stored.axes[0].kind.startswith("Hessian eigenvector 1 (λ = ") and stored.axes[0].norm == "none"
    v = flat(stored.x, ["weight"])
    assert np.linalg.norm(v) == pytest.approx(1.0) and abs(v[np.argmax(D)]) == pytest.approx(1.0)


def test_two_directions_are_orthonormal_eigenvectors_with_their_eigenvalues(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double()
    x, y = torch.randn(40, 4, dtype=torch.float64), torch.randint(0, 3, (40,))
    landscape.loss_surface(
        model, (x, y), hessian=True, x="-0.1:0.1:3", y="-0.1:0.1:3", surf_file=str(tmp_path / "s.h5")
    )
    stored = direction_file.read(str(tmp_path / "s.directions.h5"))
    h = Hessian(model, Samples(x, y))
    vectors = [flat(d, h.names) for d in (stored.x, stored.y)]
    values = [float(a.kind.split("λ = ")[1].rstrip(")")) for a in stored.axes]
    assert values[0] >= values[1] > 0
    assert abs(vectors[0] @ vectors[1]) < 1e-6
    for v, lam in zip(vectors, values):
        assert np.linalg.norm(h.matvec(v) - lam * v) < 1e-4 * lam
        assert v[np.argmax(np.abs(v))] > 0  # the sign is fixed: the largest entry positive


def test_settings_that_do_not_apply_are_refused_and_a_file_of_random_directions_is_not_reused(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    x, y = torch.randn(20, 4), torch.randint(0, 3, (20,))
    with pytest.raises(UsageError, match="seed"):
        landscape.loss_surface(model, (x, y), hessian=True, seed=3)
    path = str(tmp_path / "r.h5")
    landscape.loss_surface(model, (x, y), x="-1:1:3", surf_file=path)
    with pytest.raises(MismatchError, match="hessian"):
        landscape.loss_surface(model, (x, y), x="-1:1:3", surf_file=path, hessian=True)


def test_the_command_line_takes_it(tmp_path, cli):
    done = cli(
        "surface",
        [
            "--model",
            "digits_mlp",
            "--hessian",
            "--x=-0.5:0.5:3",
            "--surf_file",
            str(tmp_path / "d.h5"),
            "--train_subset",
            "100",
            "--threads",
            "1",
        ],
    )
    assert done.returncode == 0, done.stderr
    assert "Hessian directions: λ = " in done.stdout
