"""ReLUs made in place in a traced forward: only where what they overwrite is a fresh temporary no one else
reads, with the model's outputs to the bit and the data untouched."""
import torch
import torch.nn.functional as F
from torch import nn

from landscape.models import build_model
from landscape.surface import in_place


class Shapes(nn.Module):
    """A ReLU after each kind of source: a layer and a sum (fresh: in place), the input itself, a view
    of it and a tensor read twice (none of them)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)
        self.act = nn.ReLU()

    def forward(self, x):
        h = self.act(self.a(x))                  # a layer's output: in place
        s = F.relu(h + self.b(h))                # a sum: in place
        kept = self.b(s)
        twice = torch.relu(kept) + kept          # read again after the ReLU: not
        return twice + F.relu(x) + torch.relu(x.view(-1, 8))  # the input and a view of it: not


def traced(model: nn.Module) -> torch.fx.GraphModule:
    graph = torch.fx.symbolic_trace(model)
    done = in_place.relus(graph)
    graph.delete_all_unused_submodules()
    graph.recompile()
    graph.done = done
    return graph


def test_only_relus_of_fresh_temporaries_go_in_place_and_the_outputs_and_data_stay_as_they_were():
    torch.manual_seed(0)
    model = Shapes().eval()
    graph = traced(model)
    assert graph.done == 2 and graph.code.count("relu_(") == 2
    x = torch.randn(20, 8)
    kept = x.clone()
    with torch.inference_mode():
        assert torch.equal(graph(x), model(x))
    assert torch.equal(x, kept)


def test_relus_already_in_place_and_other_activations_are_left_alone():
    for act in (nn.ReLU(inplace=True), nn.ReLU6(), nn.LeakyReLU()):
        graph = traced(nn.Sequential(nn.Linear(4, 4), act))
        assert graph.done == 0


def test_resnet20_s_relus_all_go_in_place_with_the_same_bits():
    torch.manual_seed(0)
    model = build_model("resnet20").eval()
    graph = traced(model)
    assert graph.done == 19
    x = torch.randn(4, 3, 32, 32)
    with torch.inference_mode():
        assert torch.equal(graph(x), model(x))
