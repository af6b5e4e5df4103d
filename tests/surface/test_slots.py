"""slots.caller: a model called with other weights, the same bits as functional_call, its own tensors back."""
import pytest
import torch
from torch import nn
from torch.func import functional_call

from landscape.surface.slots import WeightSlots, caller


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3)).eval()


def _other(model: nn.Module, buffers: bool = False) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    named = dict(model.named_parameters())
    if buffers:
        named.update((n, b) for n, b in model.named_buffers() if b.is_floating_point())
    return {n: torch.rand(t.shape, generator=g) + 0.5 for n, t in named.items()}


def test_a_call_computes_what_functional_call_does_to_the_bit_and_puts_the_models_tensors_back():
    model, x = _net(), torch.randn(5, 6)
    own = {n: t for n, t in [*model.named_parameters(), *model.named_buffers()]}
    call = caller(model)
    assert isinstance(call, WeightSlots)
    for weights in (_other(model), _other(model, buffers=True), {"3.bias": torch.ones(3)}):
        assert torch.equal(call(weights, x), functional_call(model, weights, (x,)))
        assert all(t is own[n] for n, t in [*model.named_parameters(), *model.named_buffers()])
    assert torch.equal(call({}, x), model(x))


def test_the_models_tensors_come_back_when_its_forward_fails():
    class Failing(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(2, 2)

        def forward(self, x):
            self.layer(x)
            raise ValueError("the plug-in failed")

    model = Failing()
    weight = model.layer.weight
    with pytest.raises(ValueError, match="the plug-in failed"):
        caller(model)({"layer.weight": torch.zeros(2, 2)}, torch.ones(1, 2))
    assert model.layer.weight is weight


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_tied_tensors_scripted_models_compiled_passes_and_unknown_names_keep_functional_call():
    model, x = _net(), torch.randn(5, 6)
    tied = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    tied[1].weight = tied[0].weight
    assert WeightSlots.of(tied) is None
    weights = {"0.weight": torch.eye(4) * 2}  # tied: both layers take it, as functional_call does
    assert torch.equal(caller(tied)(weights, torch.ones(1, 4)), functional_call(tied, weights, (torch.ones(1, 4),)))
    assert WeightSlots.of(torch.jit.script(nn.Linear(2, 2))) is None
    assert not isinstance(caller(model, compile=True), WeightSlots)
    unknown = {**_other(model), "scale": torch.tensor(2.0)}  # functional_call sets it as an attribute
    assert torch.equal(caller(model)(unknown, x), functional_call(model, unknown, (x,)))
    assert not hasattr(model, "scale")


def test_a_tensor_the_forward_replaces_goes_back_into_the_weights_as_functional_call_hands_it_back():
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("k", torch.zeros(()))

        def forward(self, x):
            self.k = self.k + 1
            return x * self.k

    model, x = Counting(), torch.ones(2)
    ours, theirs = {"k": torch.zeros(())}, {"k": torch.zeros(())}
    for _ in range(2):
        assert torch.equal(caller(model)(ours, x), functional_call(model, theirs, (x,)))
    assert float(ours["k"]) == float(theirs["k"]) == 2.0 and float(model.k) == 0.0
