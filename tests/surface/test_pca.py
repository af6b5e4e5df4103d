"""Directions from a trajectory: a path that lies in a known plane gives that plane and its
coordinates back; the explained variance agrees with scikit-learn's PCA; the surface and the path
figure from a real training run's checkpoints."""

import math

import numpy as np
import pytest
import torch

from landscape.errors import InputError, UsageError
from landscape.surface import pca
from landscape.surface.direction_set import DirectionConfig

from conftest import landscape


def flat(tensors, names):
    return torch.cat([tensors[n].reshape(-1) for n in names]).numpy()


def synthetic(noise=0.0, T=12, seed=0):
    """Checkpoints origin + a_t e1 + b_t e2 (+ noise) with e1, e2 orthonormal in the weight tensors
    (1-D tensors left out, as ignore=biasbn leaves them)."""
    g = torch.Generator().manual_seed(seed)
    origin = {
        "conv.weight": torch.randn(6, 3, 3, generator=g, dtype=torch.float64),
        "conv.bias": torch.randn(6, generator=g, dtype=torch.float64),
        "fc.weight": torch.randn(10, 7, generator=g, dtype=torch.float64),
    }
    names = ["conv.weight", "fc.weight"]
    n = sum(origin[k].numel() for k in names)
    e, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, 2)))
    t = np.linspace(0, 1, T)
    a, b = 5 * (1 - t) ** 2, np.sin(3 * t) * (1 - t)  # a path towards the origin, wider in a than in b
    rng = np.random.default_rng(seed + 1)
    states = []
    for k in range(T):
        v = a[k] * e[:, 0] + b[k] * e[:, 1] + noise * rng.standard_normal(n)
        state, start = {}, 0
        for name, w in origin.items():
            if name in names:
                size = w.numel()
                state[name] = w + torch.from_numpy(v[start : start + size]).reshape(w.shape)
                start += size
            else:
                state[name] = w + 1.0  # a bias that moved: ignored
        states.append(state)
    return origin, states, names, e, a, b


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_a_path_in_a_known_plane_gives_the_plane_and_its_coordinates(chunk):
    origin, states, names, e, a, b = synthetic()
    x, y, coords, explained = pca.plane(origin, states, "biasbn", chunk=chunk)
    vx, vy = flat(x, names), flat(y, names)
    assert np.linalg.norm(vx) == pytest.approx(1, abs=1e-12) and abs(vx @ vy) < 1e-12
    basis = e.T  # both directions lie in span(e1, e2)
    for v in (vx, vy):
        assert np.linalg.norm(basis @ v) == pytest.approx(1.0, abs=1e-10)
    assert sum(explained) == pytest.approx(1.0, abs=1e-10)
    # the path is recovered exactly: d_t = c_t1 v1 + c_t2 v2
    for k, state in enumerate(states):
        d = flat(state, names) - flat(origin, names)
        assert np.allclose(coords[k, 0] * vx + coords[k, 1] * vy, d, atol=1e-10)
    assert coords[-1] == pytest.approx([0, 0], abs=1e-12)  # the last checkpoint is the centre
    assert coords[0, 0] < 0 and coords[0, 1] < 0  # the sign convention
    assert torch.all(x["conv.bias"] == 0) and torch.all(y["conv.bias"] == 0)


def test_slices_do_not_change_the_answer_and_sklearn_agrees():
    from sklearn.decomposition import PCA

    origin, states, names, *_ = synthetic(noise=0.05)
    one = pca.plane(origin, states, "biasbn", chunk=5)
    whole = pca.plane(origin, states, "biasbn", chunk=1 << 20)
    assert np.allclose(one[2], whole[2], atol=1e-12) and one[3] == pytest.approx(whole[3], abs=1e-12)
    D = np.stack([flat(s, names) - flat(origin, names) for s in states])
    reference = PCA(n_components=2).fit(D)
    assert whole[3] == pytest.approx(tuple(reference.explained_variance_ratio_), rel=1e-9)
    assert 0.9 < sum(whole[3]) < 1.0  # the noise holds the rest


def test_the_random_walk_baseline():
    first, second = pca.random_walk_ratios(200, dim=1000, trials=10)
    assert first == pytest.approx(6 / math.pi**2, abs=0.06) and second == pytest.approx(6 / (4 * math.pi**2), abs=0.04)


def test_which_checkpoints(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for epoch in (1, 2, 9, 10):
        (run / f"epoch_{epoch:d}.pt").write_bytes(b"")
    (run / "final.pt").write_bytes(b"")
    assert [p.split("/")[-1] for p in pca.checkpoint_files(str(run))] == [
        "epoch_1.pt",
        "epoch_2.pt",
        "epoch_9.pt",
        "epoch_10.pt",
    ]
    assert len(pca.checkpoint_files(str(run / "epoch_*.pt"))) == 4
    (tmp_path / "list.txt").write_text("# my order\nrun/epoch_10.pt\nrun/epoch_1.pt  # first\n\nrun/epoch_2.pt\n")
    assert [p.split("/")[-1] for p in pca.checkpoint_files(str(tmp_path / "list.txt"))] == [
        "epoch_10.pt",
        "epoch_1.pt",
        "epoch_2.pt",
    ]  # a list keeps its order
    with pytest.raises(InputError, match="final.pt has no epoch number"):
        pca.checkpoint_files(str(run / "*.pt"))
    (tmp_path / "twice.txt").write_text("run/epoch_1.pt\nrun/epoch_2.pt\nrun/epoch_1.pt\n")
    with pytest.raises(InputError, match="listed twice"):
        pca.checkpoint_files(str(tmp_path / "twice.txt"))
    (tmp_path / "log.csv").write_text("epoch,loss\n")
    with pytest.raises(InputError, match="neither a checkpoint pattern nor a .txt list"):
        pca.checkpoint_files(str(tmp_path / "log.csv"))
    with pytest.raises(InputError, match="at least 3"):
        pca.checkpoint_files(str(run / "epoch_1*.pt"))
    with pytest.raises(InputError, match="matches no file"):
        pca.checkpoint_files(str(tmp_path / "nothing_*.pt"))


def test_settings_that_cannot_go_with_a_trajectory():
    with pytest.raises(UsageError, match="xnorm does not apply with pca_from"):
        DirectionConfig(pca_from="run", xnorm="filter")
    for given in ({"seed": 5}, {"yignore": "none"}):
        with pytest.raises(UsageError, match=f"{next(iter(given))} does not apply with pca_from"):
            DirectionConfig(pca_from="run", **given)


def test_checkpoints_without_spread_give_no_plane():
    origin, states, *_ = synthetic()
    with pytest.raises(InputError, match="fewer than two dimensions"):
        pca.plane(origin, [states[0]] * 3)  # the same weights three times: rounding only
    with pytest.raises(UsageError, match="pca_from needs a 2-D grid"):
        DirectionConfig(pca_from="run").check_grid(1)


def test_a_surface_on_a_training_run_s_plane_and_its_path_figure(tmp_path, capsys, one_thread):
    from landscape.io.direction_file import read

    assert (
        landscape(
            "train",
            "--model",
            "digits_mlp",
            "--batch_size",
            "128",
            "--epochs",
            "5",
            "--threads",
            "1",
            "--quiet",
            "--out",
            tmp_path / "run",
        )
        == 0
    )
    assert (
        landscape(
            "surface",
            "--model",
            "digits_mlp",
            "--model_file",
            tmp_path / "run" / "final.pt",
            "--pca_from",
            tmp_path / "run",
            "--x=-1:1:5",
            "--y=-1:1:3",
            "--train_subset",
            "200",
            "--no_test",
            "--threads",
            "1",
            "--surf_file",
            tmp_path / "s.h5",
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "trajectory of 5 checkpoints: PC1" in out
    d = read(str(tmp_path / "s.directions.h5"))
    t = d.trajectory
    assert t.labels == (1, 2, 3, 4, 5) and t.coordinates.shape == (5, 2) and t.coordinates[-1] == pytest.approx([0, 0])
    assert d.axes[0].kind == "PC1 of 5 checkpoints" and 0.5 < t.explained[0] <= 1
    assert landscape("info", tmp_path / "s.directions.h5") == 0
    assert "trajectory: 5 checkpoints, epochs 1 to 5" in capsys.readouterr().out
    assert landscape("plot2d", tmp_path / "s.h5", "--trajectory", "--kind", "contour") == 0
    assert (tmp_path / "s_train_loss_2dcontour.png").read_bytes()[:4] == b"\x89PNG"
    # a random-direction surface has no path to draw
    assert (
        landscape(
            "surface",
            "--model",
            "digits_mlp",
            "--model_file",
            tmp_path / "run" / "final.pt",
            "--x=-1:1:3",
            "--y=-1:1:3",
            "--train_subset",
            "50",
            "--no_test",
            "--quiet",
            "--surf_file",
            tmp_path / "r.h5",
        )
        == 0
    )
    assert landscape("plot2d", tmp_path / "r.h5", "--trajectory") == 3
    assert "holds no trajectory" in capsys.readouterr().err
    # another plane's path over this surface, and this surface's file with other checkpoints: refused
    assert landscape("plot2d", tmp_path / "r.h5", "--trajectory", tmp_path / "s.directions.h5") == 3
    assert "is not the one" in capsys.readouterr().err
    (tmp_path / "three.txt").write_text("run/epoch_0001.pt\nrun/epoch_0002.pt\nrun/epoch_0003.pt\n")
    assert (
        landscape(
            "surface",
            "--model",
            "digits_mlp",
            "--model_file",
            tmp_path / "run" / "final.pt",
            "--pca_from",
            tmp_path / "three.txt",
            "--x=-1:1:5",
            "--y=-1:1:3",
            "--train_subset",
            "200",
            "--no_test",
            "--threads",
            "1",
            "--surf_file",
            tmp_path / "s.h5",
        )
        == 4
    )
    assert "the plane of other checkpoints" in capsys.readouterr().err
