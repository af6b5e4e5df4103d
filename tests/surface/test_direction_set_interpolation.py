"""1-D interpolation between two networks (--model_file2), and why BatchNorm statistics matter."""

import numpy as np
import torch

from landscape.cli.surface import main
from landscape.data import load_named
from landscape.io.checkpoint import save
from landscape.io.surface_file import read as read_surface
from landscape.models import DigitsCNN

from conftest import landscape, mean_losses


def network(seed: int) -> DigitsCNN:
    torch.manual_seed(seed)
    model = DigitsCNN()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.5)
                m.running_var.uniform_(0.2, 3.0)
    return model.eval()


def loss_of(model) -> float:
    return mean_losses(model, {"train": load_named("digits").train})[0]


def test_states_interpolation_reaches_model2_exactly_weights_alone_does_not(tmp_path):
    a, b = network(1), network(2)
    save(a, str(tmp_path / "a.pt"))
    save(b, str(tmp_path / "b.pt"))
    results = {}
    for dir_type in ("states", "weights"):
        surf = tmp_path / f"{dir_type}.h5"
        assert (
            main(
                [
                    "--model",
                    "digits_cnn",
                    "--model_file",
                    str(tmp_path / "a.pt"),
                    "--model_file2",
                    str(tmp_path / "b.pt"),
                    "--x=0:1:3",
                    "--dir_type",
                    dir_type,
                    "--no_test",
                    "--surf_file",
                    str(surf),
                    "--quiet",
                ]
            )
            == 0
        )
        results[dir_type] = read_surface(str(surf))
    s = results["states"]
    assert s.attrs["xdirection"] == "target" and s.attrs["model_file2_sha256"]
    assert s.values["train_loss"][0] == loss_of(a)
    assert s.values["train_loss"][-1] == loss_of(b)  # alpha = 1 is model 2, running statistics included
    w = results["weights"].values["train_loss"]
    assert w[0] == loss_of(a)
    assert abs(w[-1] - loss_of(b)) > 1e-3  # model 2's weights with model 1's statistics: not model 2


def test_plot_flag_draws_the_figures_at_the_end(tmp_path):
    surf = tmp_path / "p.h5"
    assert (
        main(["--model", "digits_mlp", "--x=-1:1:5", "--y=-1:1:3", "--surf_file", str(surf), "--quiet", "--plot"]) == 0
    )
    for kind in ("2dcontour", "2dcontourf", "3dsurface"):
        assert (tmp_path / f"p_train_loss_{kind}.png").read_bytes()[:4] == b"\x89PNG"
    assert np.isfinite(read_surface(str(surf)).values["train_loss"]).all()


def test_bn_policies_are_recorded_and_states_is_implied(tmp_path):
    a, b = network(1), network(2)
    save(a, str(tmp_path / "a.pt"))
    save(b, str(tmp_path / "b.pt"))
    common = [
        "--model",
        "digits_cnn",
        "--model_file",
        str(tmp_path / "a.pt"),
        "--model_file2",
        str(tmp_path / "b.pt"),
        "--x=0:1:3",
        "--no_test",
        "--quiet",
    ]
    assert main([*common, "--bn", "states", "--surf_file", str(tmp_path / "s.h5")]) == 0
    s = read_surface(str(tmp_path / "s.h5"))
    assert s.attrs["bn"] == "states" and s.attrs["dir_type"] == "states"
    assert main([*common, "--bn", "recalibrate", "--bn_batches", "3", "--surf_file", str(tmp_path / "r.h5")]) == 0
    r = read_surface(str(tmp_path / "r.h5"))
    assert r.attrs["bn"] == "recalibrate" and r.attrs["bn_batches"] == 3 and r.attrs["dir_type"] == "weights"
    # at 0: network a with statistics re-estimated from 3 seeded training batches of 128
    from torch.func import functional_call

    from landscape.surface.batchnorm import Recalibrator

    with torch.no_grad():
        stats = Recalibrator(a, load_named("digits").train.inputs, 3).statistics(
            lambda batch, fresh: functional_call(a, fresh, (batch,))
        )

    class Recalibrated(torch.nn.Module):
        def forward(self, x):
            return functional_call(a, stats, (x,))

    assert r.values["train_loss"][0] == loss_of(Recalibrated()) != loss_of(a)


def test_recalibration_estimates_the_statistics_of_the_chosen_batches():
    from landscape.surface.batchnorm import Recalibrator

    model = network(3)
    inputs = load_named("digits").train.inputs
    from torch.func import functional_call

    recal = Recalibrator(model, inputs, batch_size=100, batches=4)
    bn = model.features[1]
    before = bn.running_mean.clone()
    with torch.no_grad():
        stats = recal.statistics(lambda batch, fresh: functional_call(model, fresh, (batch,)))
        features = torch.cat([model.features[0](batch) for batch in recal.batches])
    assert len(recal.batches) == 4 and all(len(b) == 100 for b in recal.batches)
    assert torch.allclose(stats["features.1.running_mean"], features.mean(dim=(0, 2, 3)), atol=1e-5)
    assert int(stats["features.1.num_batches_tracked"]) == 4
    assert torch.equal(bn.running_mean, before)  # the model's own statistics are never touched
    assert not bn.training and bn.momentum == 0.1


def test_contradicting_bn_and_dir_type(tmp_path, capsys):
    assert (
        landscape(
            "surface",
            *["--model", "digits_cnn", "--dir_type", "states", "--bn", "eval", "--surf_file", str(tmp_path / "s.h5")],
        )
        == 2
    )
    assert "--bn=eval" in capsys.readouterr().err
