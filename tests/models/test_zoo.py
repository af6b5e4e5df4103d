"""The CIFAR model zoo: every reference name builds a model whose checkpoints load without renaming.

Where the expectations come from: the reference code of Li et al. 2018,
GitHub tomgoldstein/loss-landscape --
``cifar10/model_loader.py`` (dict ``models``: name -> constructor, commit 0d3788e),
``cifar10/models/resnet.py`` (``ResNet``, ``ResNet_cifar``, ``WResNet_cifar``,
``BasicBlock[_noshortcut]``, ``Bottleneck[_noshortcut]`` and the factories
``ResNet20`` ... ``WRN110_4_noshort``, commit 0d3788e),
``cifar10/models/vgg.py`` (``VGG('VGG9')``, commit 9109c86) and
``cifar10/models/densenet.py`` (``DenseNet121``, commit 57daf5a).
Those definitions were transcribed into a scratch file outside this repository
and run under torch 2.13; the tables below are what *they* produced: the
``state_dict`` listing (key, shape, in order), its size, its digest, and the
logits of seeded weights.  Nothing here was generated from ``landscape.models.zoo``.
"""

import hashlib
from collections import OrderedDict

import pytest
import torch

from landscape.io.checkpoint import load_into
from landscape.models import ModelConfig, load_model
from landscape.models.zoo import REGISTRY

pytestmark = pytest.mark.usefixtures("one_thread")  # small models: threads only add overhead


def on_meta(name, **kw):
    # Structure-only checks build on the meta device: no memory, no init, milliseconds even for ResNet-152.
    with torch.device("meta"):
        return REGISTRY[name](**kw)


def listing(model):
    """``key shape`` per state_dict entry, in order; ``-`` for 0-d buffers (``num_batches_tracked``)."""
    return [f"{k} {'x'.join(map(str, v.shape)) or '-'}" for k, v in model.state_dict().items()]


def n_params(model):
    return sum(p.numel() for p in model.parameters())


# name -> (state_dict entries, parameter scalars, sha256[:16] of "\n".join(listing)),
# computed from the reference's model_loader.models[name]() as described above.
# ResNet-20/56/110 come out at 0.27 M / 0.86 M / 1.73 M: slightly above He et al.'s
# 0.27/0.85/1.7 M because the reference projects with 1x1 conv + BN (option B)
# where He et al. zero-pad (option A).
REFERENCE = {
    "densenet121": (722, 6956298, "565139824b15f832"),
    "resnet101": (626, 42512970, "d2c321cf8bab6ef5"),
    "resnet101_noshort": (602, 39736394, "c0d0af6853310095"),
    "resnet110": (668, 1730714, "292be443092cfd85"),
    "resnet110_noshort": (656, 1727962, "d09e37a551a459e2"),
    "resnet152": (932, 58156618, "0a897e3208e23ff8"),
    "resnet152_noshort": (908, 55380042, "a0f94c456182bbe5"),
    "resnet18": (122, 11173962, "67e8b477f5bfe1f5"),
    "resnet18_noshort": (104, 11000138, "f98ec01fef802026"),
    "resnet20": (128, 272474, "295eedf09d8de0c8"),
    "resnet20_noshort": (116, 269722, "a2e819c21d895507"),
    "resnet32_noshort": (188, 464154, "734f5fabfa607ff1"),
    "resnet34": (218, 21282122, "9ad0bd47b33f5644"),
    "resnet34_noshort": (200, 21108298, "c036698be16d4780"),
    "resnet44_noshort": (260, 658586, "e5254386d8bdc1c5"),
    "resnet50": (320, 23520842, "c91abd302df0b5c0"),
    "resnet50_16_noshort": (296, 755802, "fc08c0d786232a55"),
    "resnet50_noshort": (296, 20744266, "6a8b48ed44baef2c"),
    "resnet56": (344, 855770, "640385eec521c94a"),
    "resnet56_noshort": (332, 853018, "ec1ee164d25e896c"),
    "vgg9": (58, 2789706, "3ca604cca27d509c"),
    "wrn110_2_noshort": (656, 6893482, "92bbe85b04ad3691"),
    "wrn110_4_noshort": (656, 27537226, "4011d2fd83732672"),
    "wrn56_2": (344, 3412394, "eb2ceb6f2802b9a1"),
    "wrn56_2_noshort": (332, 3401770, "63363607c59764d6"),
    "wrn56_4": (344, 13628234, "22e52e0dc2095f96"),
    "wrn56_4_noshort": (332, 13586506, "074e66449b8a920e"),
    "wrn56_8": (344, 54470282, "6a0d74f86d5f3257"),
    "wrn56_8_noshort": (332, 54304906, "5f31ecaa4797ad8d"),
}
NAMES = sorted(REFERENCE)

# Complete listings of the two smallest families, readable: "<prefix> BN <c>" stands for
# the five BatchNorm entries weight, bias, running_mean, running_var (c) and num_batches_tracked (-).
VGG9 = """
features.0.weight 64 3 3 3
features.0.bias 64
features.1 BN 64
features.3.weight 64 64 3 3
features.3.bias 64
features.4 BN 64
features.7.weight 128 64 3 3
features.7.bias 128
features.8 BN 128
features.10.weight 128 128 3 3
features.10.bias 128
features.11 BN 128
features.14.weight 256 128 3 3
features.14.bias 256
features.15 BN 256
features.17.weight 256 256 3 3
features.17.bias 256
features.18 BN 256
features.20.weight 256 256 3 3
features.20.bias 256
features.21 BN 256
fc.0.weight 256 4096
fc.0.bias 256
fc.1 BN 256
classifier.weight 10 256
classifier.bias 10
"""


def _resnet20_block(stage, i, cin, c, project):
    p = f"layer{stage}.{i}"
    lines = [f"{p}.conv1.weight {c} {cin} 3 3", f"{p}.bn1 BN {c}", f"{p}.conv2.weight {c} {c} 3 3", f"{p}.bn2 BN {c}"]
    return lines + ([f"{p}.shortcut.0.weight {c} {cin} 1 1", f"{p}.shortcut.1 BN {c}"] if project else [])


RESNET20 = "\n".join(
    ["conv1.weight 16 3 3 3", "bn1 BN 16"]
    + _resnet20_block(1, 0, 16, 16, False)
    + _resnet20_block(1, 1, 16, 16, False)
    + _resnet20_block(1, 2, 16, 16, False)
    + _resnet20_block(2, 0, 16, 32, True)
    + _resnet20_block(2, 1, 32, 32, False)
    + _resnet20_block(2, 2, 32, 32, False)
    + _resnet20_block(3, 0, 32, 64, True)
    + _resnet20_block(3, 1, 64, 64, False)
    + _resnet20_block(3, 2, 64, 64, False)
    + ["linear.weight 10 64", "linear.bias 10"]
)


def expand(compact):
    out = []
    for line in compact.strip().splitlines():
        key, *shape = line.split()
        if shape[0] == "BN":
            c = shape[1]
            out += [f"{key}.{s} {c}" for s in ("weight", "bias", "running_mean", "running_var")]
            out.append(f"{key}.num_batches_tracked -")
        else:
            out.append(f"{key} {'x'.join(shape)}")
    return out


def test_registry_holds_every_name_of_the_reference_model_loader():
    assert sorted(REGISTRY) == NAMES


@pytest.mark.parametrize("name, compact", [("vgg9", VGG9), ("resnet20", RESNET20)])
def test_complete_listing_of_small_models(name, compact):
    assert listing(on_meta(name)) == expand(compact)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_matches_the_reference(name):
    entries, params, digest = REFERENCE[name]
    model = on_meta(name)
    lines = listing(model)
    assert (len(lines), n_params(model)) == (entries, params)
    assert hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16] == digest


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith("_noshort") and n[:-8] in REFERENCE])
def test_noshort_lacks_exactly_the_projection_shortcuts(name):
    # In the reference the no-shortcut blocks have no `shortcut` attribute at all, so a _noshort
    # state_dict is its twin's minus every `.shortcut.` key (identity skips carry no keys anyway).
    twin = listing(on_meta(name[:-8]))
    assert listing(on_meta(name)) == [line for line in twin if ".shortcut." not in line]
    assert len(twin) > len(listing(on_meta(name)))


@pytest.mark.parametrize("name", NAMES)
def test_num_classes_changes_only_the_classifier(name):
    ten, hundred = listing(on_meta(name)), listing(on_meta(name, num_classes=100))
    changed = [(a, b) for a, b in zip(ten, hundred) if a != b]
    assert len(ten) == len(hundred)
    head = "classifier" if name == "vgg9" else "linear"
    assert [a.split()[0] for a, _ in changed] == [f"{head}.weight", f"{head}.bias"]
    assert [b.split()[1].split("x")[0] for _, b in changed] == ["100", "100"]


@pytest.mark.parametrize("name", NAMES)
def test_forward_gives_one_logit_per_class(name):
    model = REGISTRY[name](100).eval()  # num_classes may be passed positionally
    with torch.no_grad():
        assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 100)


# Logits of image 0 for seeded float64 weights (every parameter, in state_dict order, drawn as
# 0.1 * randn from Generator().manual_seed(0), then the (2,3,32,32) input from the same generator),
# BatchNorm in training mode -- computed by the reference models.  They pin the forward pass:
# e.g. the reference's Bottleneck_noshortcut has no final ReLU, and DenseNet concatenates [new, old].
REFERENCE_LOGITS = {
    "vgg9": [
        0.1682041271,
        0.08651093575,
        0.1703771698,
        -0.01178072048,
        0.07485903176,
        -0.1142447403,
        0.2284835484,
        -0.258330075,
        0.3569149654,
        -0.1157653189,
    ],
    "resnet20": [
        -0.0752506579,
        0.1731054594,
        -0.161739761,
        0.2093197066,
        0.07185218284,
        -0.2866320196,
        -0.2080264936,
        -0.1032955959,
        -0.3325269373,
        -0.5213862008,
    ],
    "resnet20_noshort": [
        -0.1714067272,
        -0.1368003355,
        0.1137984051,
        0.2100316916,
        0.02492881772,
        0.08811759715,
        -0.1550165154,
        -0.1450832494,
        0.1656311074,
        0.002355800745,
    ],
    "resnet18": [
        -0.07034299432,
        0.5383235019,
        0.09183896328,
        -0.07804250149,
        -0.3083297753,
        -0.1610636423,
        -0.2549296268,
        -0.09621665601,
        -0.1688647454,
        0.192630666,
    ],
    "resnet50_noshort": [
        -0.04326509078,
        0.3845450073,
        0.01021783371,
        -0.5248893236,
        -0.2705255721,
        -0.2899916564,
        -0.007987924916,
        0.2831870918,
        0.4717378166,
        -0.2125034179,
    ],
    "densenet121": [
        0.2378959732,
        -0.2535884356,
        -0.005495044585,
        -0.1648793007,
        -0.2980677622,
        0.3026805714,
        -0.1027329129,
        0.2506002885,
        0.2294262662,
        -0.102559337,
    ],
}


@pytest.mark.parametrize("name", sorted(REFERENCE_LOGITS))
def test_forward_matches_the_reference(name):
    model = REGISTRY[name]().double().train()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.1)
        out = model(torch.randn(2, 3, 32, 32, generator=g, dtype=torch.float64))
    torch.testing.assert_close(out[0], torch.tensor(REFERENCE_LOGITS[name], dtype=torch.float64), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["vgg9", "resnet56", "resnet56_noshort", "wrn56_2", "densenet121"])
def test_a_reference_style_checkpoint_loads_into_the_zoo_model(name, tmp_path):
    # The reference's main.py saves {'state_dict', 'epoch', 'acc'} as model_<epoch>.t7 from a
    # DataParallel model (module. prefixes); landscape must give back the same network.
    torch.manual_seed(0)
    trained = REGISTRY[name]().eval()
    path = tmp_path / "model_300.t7"
    torch.save(
        {"state_dict": {f"module.{k}": v for k, v in trained.state_dict().items()}, "epoch": 300, "acc": 93.1}, path
    )
    loaded = load_model(ModelConfig(name), 10, str(path), seed=1).eval()  # another seed: other initial weights
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), trained(x), rtol=0, atol=0)


def test_a_checkpoint_of_pytorch_before_0_4_1_loads_with_a_note():
    # The paper's checkpoints predate BatchNorm's `num_batches_tracked` counters.
    source = REGISTRY["resnet20"]()
    legacy = OrderedDict((k, v) for k, v in source.state_dict().items() if not k.endswith("num_batches_tracked"))
    assert len(legacy) == 128 - 21
    target = REGISTRY["resnet20"]()
    notes = load_into(target, legacy, "model_300.t7")
    assert len(notes) == 1 and "no BatchNorm num_batches_tracked counters" in notes[0] and "21 layers" in notes[0]
    assert all(torch.equal(target.state_dict()[k], v) for k, v in legacy.items())
