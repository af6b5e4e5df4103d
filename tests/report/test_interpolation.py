"""Keskar et al.'s interpolation: the values along w(α) = (1 − α) w_small + α w_large, which pairs of runs
are interpolated, and the record the report writes."""

import json
from dataclasses import asdict

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from landscape.data import Data, Samples
from landscape.errors import ConfigError
from landscape.models import DigitsMLP
from landscape.report.interpolation import along_line, alphas_of, choose_pairs, write_interpolation_json
from landscape.report.measure_config import MeasureConfig
from landscape.report.runs import Run

torch.set_num_threads(1)


def linear(seed: int) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(3, 2).double()


def regression(seed: int, n: int) -> Samples:
    g = torch.Generator().manual_seed(seed)
    return Samples(
        torch.randn(n, 3, generator=g, dtype=torch.float64), torch.randn(n, 2, generator=g, dtype=torch.float64)
    )


def test_the_least_squares_loss_along_the_line_is_its_exact_quadratic_in_alpha():
    small, large = linear(0), linear(1)
    data = Data("regression", regression(10, 50), regression(11, 20))
    alphas = np.array([-0.5, -0.1, 0.0, 0.3, 0.5, 1.0, 1.25, 1.5])
    line = along_line(small, large, data, alphas, loss_name="mse", batch_size=16, dtype="float64")
    for split, samples, values in (("train", data.train, line.train_loss), ("test", data.test, line.test_loss)):
        x, y = samples.inputs.numpy(), samples.targets.numpy()
        w0, b0 = small.weight.detach().numpy(), small.bias.detach().numpy()
        w1, b1 = large.weight.detach().numpy(), large.bias.detach().numpy()
        r0 = x @ w0.T + b0 - y  # the residual at α = 0, and how it changes per unit of α
        d = x @ (w1 - w0).T + (b1 - b0)
        # mean over samples and outputs of (r0 + α d)²: a quadratic whose coefficients are moments
        exact = np.mean(r0 * r0) + 2 * alphas * np.mean(r0 * d) + alphas**2 * np.mean(d * d)
        np.testing.assert_allclose(values, exact, rtol=1e-13, atol=0, err_msg=split)
    assert np.isnan(line.train_error).all() and np.isnan(line.test_error).all()  # a regression has no error


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.bn, self.b = nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 3)

    def forward(self, x):
        return self.b(torch.relu(self.bn(self.a(x))))


def normed(seed: int) -> Normed:
    torch.manual_seed(seed)
    model = Normed()
    with torch.no_grad():  # running statistics far from the defaults, unlike for the two networks
        model.bn.running_mean.normal_(0.0, 1.0)
        model.bn.running_var.uniform_(0.5, 3.0)
    return model.eval()


def classes(seed: int, n: int) -> Samples:
    g = torch.Generator().manual_seed(seed)
    return Samples(torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g))


def own(model: nn.Module, samples: Samples) -> tuple[float, float]:
    """The network's own loss and error (%) on ``samples``, BatchNorm in eval mode: a plain forward."""
    with torch.no_grad():
        out = model.eval()(samples.inputs)
    loss = F.cross_entropy(out, samples.targets).item()
    return loss, 100.0 * int((out.argmax(1) != samples.targets).sum()) / len(samples)


def test_alpha_0_and_1_are_the_two_networks_bit_for_bit_batchnorm_statistics_included():
    small, large = normed(0), normed(1)
    data = Data("classes", classes(5, 300), classes(6, 100))
    alphas = alphas_of()
    line = along_line(small, large, data, alphas, batch_size=64)
    at = {a: i for i, a in enumerate(alphas)}
    alone = {  # each network by itself, the same evaluation: the line must meet these exactly
        "small": along_line(small, small, data, [0.0], batch_size=64),
        "large": along_line(large, large, data, [0.0], batch_size=64),
    }
    for alpha, name in ((0.0, "small"), (1.0, "large")):
        for key in ("train_loss", "test_loss", "train_error", "test_error"):
            assert getattr(line, key)[at[alpha]] == getattr(alone[name], key)[0], (alpha, key)
    for alpha, model in ((0.0, small), (1.0, large)):  # and they are the networks' own values
        for split, samples in (("train", data.train), ("test", data.test)):
            loss, error = own(model, samples)
            assert getattr(line, f"{split}_loss")[at[alpha]] == pytest.approx(loss, rel=1e-6)
            assert getattr(line, f"{split}_error")[at[alpha]] == pytest.approx(error, abs=1e-9)


def test_between_the_ends_the_batchnorm_statistics_are_interpolated_with_the_weights_in_eval_mode():
    small, large = normed(0), normed(1)
    data = Data("classes", classes(5, 300), None)
    line = along_line(small, large, data, [0.25], batch_size=64)
    middle = normed(2)  # every floating tensor, weights and running statistics, at 0.75 small + 0.25 large
    one, two = small.state_dict(), large.state_dict()
    middle.load_state_dict({k: 0.75 * one[k] + 0.25 * two[k] if one[k].is_floating_point() else one[k] for k in one})
    loss, error = own(middle, data.train)
    assert line.train_loss[0] == pytest.approx(loss, rel=1e-6)
    assert line.train_error[0] == pytest.approx(error, abs=1e-9)
    assert np.isnan(line.test_loss).all() and np.isnan(line.test_error).all()  # no test set: not computed
    assert line.record()["test_loss"] == [None]  # and null in the record


def test_the_line_leaves_both_networks_unchanged():
    small, large = normed(0), normed(1)
    before = [{k: v.clone() for k, v in m.state_dict().items()} for m in (small, large)]
    along_line(small, large, Data("classes", classes(5, 50), None), [0.5, 1.5], batch_size=16)
    for model, state in zip((small, large), before):
        assert all(torch.equal(model.state_dict()[k], v) for k, v in state.items())


def test_the_default_alphas_run_from_minus_half_to_one_and_a_half_with_both_networks_exactly_on_them():
    alphas = alphas_of()
    assert len(alphas) == 41 and alphas[0] == -0.5 and alphas[-1] == 1.5
    assert alphas[10] == 0.0 and alphas[30] == 1.0
    with pytest.raises(ConfigError, match="holding 0 and 1"):
        alphas_of("-1:1:4")  # misses 0 and 1


def run(recipe: str, batch: int, seed: int, name: str | None = None) -> dict:
    return asdict(
        Run(name or f"{recipe}_b{batch}_s{seed}", recipe, batch, seed, f"/ckpt/{recipe}{batch}_{seed}.pt", None, None)
    )


def test_pairs_are_the_smallest_against_the_largest_batch_per_recipe_and_seed():
    runs = [
        run("sgd", 16, 0), run("sgd", 64, 0), run("sgd", 256, 0),
        run("sgd", 16, 1), run("sgd", 256, 1),
        run("sgd", 16, 2), run("sgd", 64, 2),  # no run at 256: left out
        run("sgd", 256, 3),  # no run at 16: left out
        run("lr", 32, 0), run("lr", 512, 0),
        run("rescaled", 16, 0), run("rescaled", 256, 0),  # the rescaling control: never paired
        run("alone", 64, 0), run("alone", 64, 1),  # one batch size: nothing to interpolate
    ]  # fmt: skip
    found = [p.record() for p in choose_pairs(runs)]
    assert found == [
        {"recipe": "sgd", "seed": 0, "from": "sgd_b16_s0", "to": "sgd_b256_s0", "batch_from": 16, "batch_to": 256},
        {"recipe": "sgd", "seed": 1, "from": "sgd_b16_s1", "to": "sgd_b256_s1", "batch_from": 16, "batch_to": 256},
        {"recipe": "lr", "seed": 0, "from": "lr_b32_s0", "to": "lr_b512_s0", "batch_from": 32, "batch_to": 512},
    ]
    assert (
        choose_pairs([run("sgd", 16, 0), run("sgd", 16, 0, "again"), run("sgd", 64, 0)])[0].small["name"]
        == "sgd_b16_s0"
    )


def test_the_report_writes_the_record_of_every_pair_in_its_layout(tmp_path):
    results = []
    for batch, seed in ((16, 0), (128, 0)):
        torch.manual_seed(batch)
        path = tmp_path / f"b{batch}.pt"
        torch.save(DigitsMLP().state_dict(), path)
        entry = asdict(Run(f"sgd_b{batch}", "sgd", batch, seed, str(path), None, None))
        target = {"model": "digits_mlp", "dataset": "digits", "datapath": None, "num_classes": None, "device": "cpu"}
        results.append({"run": entry, "target": target})
    control = asdict(Run("copy", "sgd", 128, 0, str(tmp_path / "b128.pt"), None, None))
    results.append({"run": control, "target": results[0]["target"], "rescaled": {"alpha": 2.0}})  # not paired

    path, written = write_interpolation_json(results, MeasureConfig(grid_2d="-1:1:5"), str(tmp_path / "card"))
    assert path == str(tmp_path / "card_interpolation.json")
    record = json.loads((tmp_path / "card_interpolation.json").read_text())
    assert record == json.loads(json.dumps(written))
    assert list(record) == ["alphas", "pairs", "definition", "citation"]
    assert record["citation"] == "Keskar et al. 2017, Fig. 3" and "BatchNorm" in record["definition"]
    assert record["alphas"] == alphas_of().tolist()
    (pair,) = record["pairs"]
    assert list(pair) == [
        "recipe", "seed", "from", "to", "batch_from", "batch_to", "train_loss", "test_loss", "train_error", "test_error"
    ]  # fmt: skip
    assert (pair["from"], pair["to"], pair["batch_from"], pair["batch_to"]) == ("sgd_b16", "sgd_b128", 16, 128)
    assert all(len(pair[k]) == 41 and None not in pair[k] for k in ("train_loss", "test_loss", "test_error"))
    assert all(0.0 <= e <= 100.0 for e in pair["train_error"] + pair["test_error"])  # errors in %


def test_a_report_without_a_pair_writes_an_empty_record(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "b16.pt"
    torch.save(DigitsMLP().state_dict(), path)
    target = {"model": "digits_mlp", "dataset": "digits", "datapath": None, "num_classes": None, "device": "cpu"}
    results = [{"run": asdict(Run("only", "sgd", 16, 0, str(path), None, None)), "target": target}]
    path, record = write_interpolation_json(results, MeasureConfig(grid_2d="-1:1:5"), str(tmp_path / "card"))
    assert path == str(tmp_path / "card_interpolation.json") and record["pairs"] == []
    assert json.loads((tmp_path / "card_interpolation.json").read_text())["pairs"] == []
