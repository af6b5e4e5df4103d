"""Hessian-vector products, extreme eigenvalues and the trace against the explicit Hessian of small
networks (``torch.autograd.functional.hessian``) in float64, a saddle point included."""

import gc
import weakref

import numpy as np
import pytest
import torch
from torch import nn

from landscape.curvature import Hessian, extreme, extremes, hutchinson
from landscape.curvature import hessian as hessian_module
from landscape.data import Samples

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: threads only add overhead


def tiny(seed=0, hidden=6):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 3))


def data(n=50, seed=1):
    g = torch.Generator().manual_seed(seed)
    return Samples(torch.randn(n, 4, generator=g, dtype=torch.float64), torch.randint(0, 3, (n,), generator=g))


def explicit(model, samples):
    """The dense Hessian of the mean cross-entropy over all samples, by autograd, in float64."""
    model = model.double()
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    flat0 = torch.cat([p.detach().reshape(-1) for _, p in model.named_parameters()])

    def f(flat):
        params, start = {}, 0
        for n, s in zip(names, shapes):
            params[n] = flat[start : start + s.numel()].view(s)
            start += s.numel()
        out = torch.func.functional_call(model, params, (samples.inputs,))
        return nn.functional.cross_entropy(out, samples.targets)

    return torch.autograd.functional.hessian(f, flat0).numpy()


@pytest.fixture(scope="module")
def case():
    model, samples = tiny(), data()
    dense = explicit(tiny(), samples)
    return model, samples, dense, np.linalg.eigvalsh(dense)


def test_products_equal_the_explicit_hessian_whatever_the_batch_size(case):
    model, samples, dense, _ = case
    v = np.random.default_rng(0).standard_normal(dense.shape[0])
    for batch in (7, 50, 1000):
        h = Hessian(tiny(), samples, batch_size=batch)
        assert np.allclose(h.matvec(v), dense @ v, rtol=1e-10, atol=1e-13)
    assert h.products == 1


def test_top_and_bottom_eigenvalues_match_the_explicit_ones_to_1e_8(case):
    model, samples, _, exact = case
    result = extremes(Hessian(tiny(), samples, batch_size=16), k=3, which="both", tol=1e-12)
    top, bottom = result["top"], result["bottom"]
    assert top.converged and bottom.converged
    assert np.allclose(top.values, exact[::-1][:3], rtol=1e-8, atol=0)
    assert np.allclose(bottom.values, exact[:3], rtol=1e-8, atol=1e-12)
    assert max(top.residuals) < 1e-6 and top.products > 3


def test_a_saddle_point_has_a_negative_bottom_eigenvalue_found_directly(case):
    """Random weights of a tanh network: an indefinite Hessian.  λmin is computed as such, no shift."""
    _, samples, _, exact = case
    assert exact[0] < 0 < exact[-1], "the fixture is meant to be a saddle"
    bottom = extreme(Hessian(tiny(), samples), k=1, end="bottom", tol=1e-12)
    assert bottom.values[0] < 0 and bottom.values[0] == pytest.approx(exact[0], rel=1e-8)


def test_float32_products_agree_with_float64(case):
    _, samples, dense, _ = case
    v = np.random.default_rng(1).standard_normal(dense.shape[0])
    h32 = Hessian(tiny(), Samples(samples.inputs.float(), samples.targets), dtype="float32")
    assert np.allclose(h32.matvec(v), dense @ v, rtol=1e-4, atol=1e-5)


def test_non_convergence_is_reported_with_estimates_and_residuals(case):
    _, samples, _, exact = case
    result = extreme(Hessian(tiny(), samples), k=4, end="bottom", tol=1e-14, maxiter=2)
    assert not result.converged and "did not reach" in result.note
    assert len(result.values) == 4 and len(result.residuals) == 4
    assert all(np.isfinite(result.values)) and all(r >= 0 for r in result.residuals)


def test_the_mean_loss_and_gradient_cover_every_sample(case):
    _, samples, _, _ = case
    loss, gradient = Hessian(tiny(), samples, batch_size=9).loss_and_gradient()
    model = tiny().double()
    reference = nn.functional.cross_entropy(model(samples.inputs), samples.targets)
    reference.backward()
    assert loss == pytest.approx(float(reference.detach()), rel=1e-12)
    assert np.allclose(gradient, torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy(), rtol=1e-10)


def test_a_shard_per_rank_summed_by_reduce_gives_the_whole_product(case):
    """Two 'ranks' played in one process: each holds half the samples; reduce adds the other's part."""
    _, samples, dense, _ = case
    v = np.random.default_rng(2).standard_normal(dense.shape[0])
    halves = [Samples(samples.inputs[:25], samples.targets[:25]), Samples(samples.inputs[25:], samples.targets[25:])]
    parts = [Hessian(tiny(), half, count=50).matvec(v) for half in halves]  # reduce left out: each its own sum
    assert np.allclose(parts[0] + parts[1], dense @ v, rtol=1e-10, atol=1e-13)
    other = parts[1]
    joined = Hessian(tiny(), halves[0], count=50, reduce=lambda a: a.__iadd__(other)).matvec(v)
    assert np.allclose(joined, dense @ v, rtol=1e-10, atol=1e-13)


def test_hutchinsons_trace_is_within_its_error_bar_of_the_exact_trace(case):
    _, samples, dense, _ = case
    estimate = hutchinson(Hessian(tiny(), samples), samples=400, seed=3)
    assert abs(estimate.value - np.trace(dense)) < 4 * estimate.stderr
    assert estimate.products == 400 and estimate.stderr > 0
    again = hutchinson(Hessian(tiny(), samples), samples=400, seed=3)
    assert again.value == estimate.value


def test_batchnorm_networks_use_their_running_statistics():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 3))
    model.train()
    for _ in range(3):
        model(torch.randn(32, 4))  # move the running statistics away from (0, 1)
    samples = data()
    h = Hessian(model, Samples(samples.inputs.float(), samples.targets))
    assert not h.model.training
    v = np.zeros(h.dim)
    v[0] = 1.0
    first = h.matvec(v)
    assert np.array_equal(first, h.matvec(v))  # eval mode: the same function every time


def test_slq_with_a_full_krylov_space_recovers_the_exact_spectrum(case):
    """With as many Lanczos steps as parameters, the quadrature's nodes are the eigenvalues and the
    smoothed density is that of the exact eigenvalues; with fewer steps it still integrates to 1 and
    matches the exact smoothed density closely."""
    from landscape.curvature import slq

    _, samples, dense, exact = case
    h = Hessian(tiny(), samples)
    full = slq(h, steps=h.dim, runs=1, seed=4)
    found = full.nodes[0][full.weights[0] > 1e-14]
    scale = np.abs(exact).max()
    assert all(np.abs(found - lam).min() < 1e-6 * scale for lam in exact)  # every eigenvalue is a node
    assert all(np.abs(exact - node).min() < 1e-6 * scale for node in found)  # and no node is spurious
    assert full.weights.sum() == pytest.approx(1.0, abs=1e-10)
    grid = np.linspace(exact[0] - 1, exact[-1] + 1, 2001)
    sigma = 0.05 * (exact[-1] - exact[0])
    truth = np.exp(-0.5 * ((grid[:, None] - exact) / sigma) ** 2).sum(axis=1) / (
        len(exact) * sigma * np.sqrt(2 * np.pi)
    )
    estimate = slq(h, steps=20, runs=30, seed=5).smoothed(grid, sigma)
    step = grid[1] - grid[0]
    assert estimate.sum() * step == pytest.approx(1.0, abs=1e-3)
    assert np.abs(estimate - truth).sum() * step < 0.15  # L1 distance of two densities (at most 2)


def test_kept_gradient_graphs_give_the_products_of_recomputed_ones(case):
    """Products through the batches' kept graphs (the default), none kept (budget 0) and some kept (a
    budget of one batch's graph) are the same numbers, every time."""
    _, samples, dense, _ = case
    v, w = np.random.default_rng(3).standard_normal((2, dense.shape[0]))
    kept = Hessian(tiny(), samples, batch_size=16)
    none = Hessian(tiny(), samples, batch_size=16, graph_budget=0)
    first = kept.matvec(v)
    assert len(kept._graphs) == 4 and kept.graph_bytes > 0 and not none._graphs
    some = Hessian(tiny(), samples, batch_size=16, graph_budget=kept.graph_bytes // 3)
    for h in (kept, none, some):
        assert np.array_equal(h.matvec(v), first)
        assert np.allclose(h.matvec(w), dense @ w, rtol=1e-10, atol=1e-13)
    assert 0 < len(some._graphs) < 4
    with pytest.raises(ValueError, match="graph_budget=-1"):
        Hessian(tiny(), samples, graph_budget=-1)


def test_a_kept_graph_is_freed_with_its_hessian(case):
    """The activations a kept graph saved (here a tanh's output, which its own backward needs) are
    freed with the Hessian: no reference cycle that garbage collection cannot break keeps them."""
    _, samples, _, _ = case
    model, saved = tiny(), []
    model[1].register_forward_hook(lambda module, inputs, output: saved.append(weakref.ref(output)))
    h = Hessian(model, samples)
    h.matvec(np.ones(h.dim))
    assert h._graphs and saved
    del h
    gc.collect()
    assert all(ref() is None for ref in saved)


def test_on_a_cpu_graphs_are_kept_in_pieces_of_at_most_piece_bytes_of_activation(case, monkeypatch):
    """The tiny network's largest activation is its hidden layer, 6 float64 numbers (48 bytes) a
    sample: with room for 7 samples, a batch of 50 is cut into 8 equal pieces, and the product is the
    same sum over all samples."""
    _, samples, dense, _ = case
    monkeypatch.setattr(hessian_module, "PIECE_BYTES", 7 * 6 * 8)
    v = np.random.default_rng(4).standard_normal(dense.shape[0])
    h = Hessian(tiny(), samples, batch_size=1000)
    assert np.allclose(h.matvec(v), dense @ v, rtol=1e-10, atol=1e-13)
    assert [len(y) for _, y in h.pieces()] == [7, 7, 6, 6, 6, 6, 6, 6] and len(h._graphs) == 8
    monkeypatch.setattr(hessian_module, "PIECE_BYTES", 16 << 20)
    assert len(Hessian(tiny(), samples, batch_size=16).pieces()) == 4  # pieces never join batches
