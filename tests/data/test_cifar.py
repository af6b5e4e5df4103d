"""CIFAR-10/100 from local folders in the standard "python version" format.

The folders are built here, tiny (4 images per batch), with the files written
byte for byte as Python 2's cPickle wrote the originals (protocol 2, ``str``
keys and data, numpy arrays through ``numpy.core.multiarray._reconstruct``).
"""

import pickle
import struct

import h5py
import numpy as np
import pytest
import torch

from landscape.data.cifar import NORMALIZATION, class_names, load_cifar
from landscape.errors import InputError, UsageError
from landscape.io.direction_file import read as read_directions
from landscape.io.surface_file import read as read_surface
from landscape.models import build_model
from landscape.provenance import sha256_tensors

from conftest import run

PER_BATCH = 4

# --- writing files as Python 2 did ------------------------------------------------------------------------------


def _py2(obj) -> bytes:
    """Protocol-2 opcodes of ``obj`` as cPickle emitted them; ``bytes`` stands for a Python 2 ``str``."""
    if obj is None:
        return b"N"
    if obj is False:
        return b"\x89"
    if isinstance(obj, int):
        if 0 <= obj < 256:
            return b"K" + bytes([obj])
        if 0 <= obj < 65536:
            return b"M" + struct.pack("<H", obj)
        return b"J" + struct.pack("<i", obj)
    if isinstance(obj, bytes):
        return (b"U" + bytes([len(obj)]) if len(obj) < 256 else b"T" + struct.pack("<I", len(obj))) + obj
    if isinstance(obj, tuple):
        return b"(" + b"".join(map(_py2, obj)) + b"t"
    if isinstance(obj, list):
        return b"](" + b"".join(map(_py2, obj)) + b"e"
    if isinstance(obj, dict):
        return b"}(" + b"".join(_py2(k) + _py2(v) for k, v in obj.items()) + b"u"
    if isinstance(obj, np.ndarray) and obj.dtype == np.uint8:
        dtype = b"cnumpy\ndtype\n" + _py2((b"u1", 0, 1)) + b"R" + _py2((3, b"|", None, None, None, -1, -1, 0)) + b"b"
        return (
            b"cnumpy.core.multiarray\n_reconstruct\n"
            + b"cnumpy\nndarray\n"
            + _py2((0,))
            + _py2(b"b")
            + b"\x87R"
            + b"("
            + _py2(1)
            + _py2(obj.shape)
            + dtype
            + _py2(False)
            + _py2(obj.tobytes())
            + b"tb"
        )
    raise TypeError(type(obj))


def _write(path, obj, python2=True):
    path.write_bytes(b"\x80\x02" + _py2(obj) + b"." if python2 else pickle.dumps(obj, protocol=2))


def _rows(rng, n):
    return rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)


def make_cifar10(root, python2=True):
    """``root/cifar-10-batches-py`` with 5 x 4 training and 4 test images; returns the rows and labels written."""
    rng = np.random.default_rng(1)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    written = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        rows, labels = _rows(rng, PER_BATCH), [int(v) for v in rng.integers(0, 10, PER_BATCH)]
        _write(
            folder / name,
            {
                b"batch_label": name.encode(),
                b"labels": labels,
                b"data": rows,
                b"filenames": [b"img_%d.png" % i for i in range(PER_BATCH)],
            },
            python2,
        )
        written[name] = (rows, labels)
    _write(
        folder / "batches.meta",
        {
            b"num_cases_per_batch": PER_BATCH,
            b"num_vis": 3072,
            b"label_names": [
                b"airplane",
                b"automobile",
                b"bird",
                b"cat",
                b"deer",
                b"dog",
                b"frog",
                b"horse",
                b"ship",
                b"truck",
            ],
        },
        python2,
    )
    return folder, written


def make_cifar100(root):
    rng = np.random.default_rng(2)
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    written = {}
    for name, n in (("train", 6), ("test", 3)):
        rows, fine = _rows(rng, n), [int(v) for v in rng.integers(20, 100, n)]
        coarse = [v // 5 for v in fine]  # < 20: never equal to a fine label
        _write(
            folder / name,
            {
                b"filenames": [b"x.png"] * n,
                b"batch_label": name.encode(),
                b"fine_labels": fine,
                b"coarse_labels": coarse,
                b"data": rows,
            },
        )
        written[name] = (rows, fine)
    _write(
        folder / "meta",
        {
            b"fine_label_names": [b"apple"] + [b"class_%d" % i for i in range(1, 100)],
            b"coarse_label_names": [b"group_%d" % i for i in range(20)],
        },
    )
    return folder, written


@pytest.fixture
def cifar10(tmp_path):
    return make_cifar10(tmp_path)


def _train_rows(written):
    return np.concatenate([written[f"data_batch_{i}"][0] for i in range(1, 6)])


def _train_labels(written):
    return sum((written[f"data_batch_{i}"][1] for i in range(1, 6)), [])


# --- reading ----------------------------------------------------------------------------------------------------


def test_cifar10_shapes_dtypes_and_batch_order(cifar10, tmp_path):
    _, written = cifar10
    train, test = load_cifar("cifar10", str(tmp_path))
    assert train.inputs.shape == (5 * PER_BATCH, 3, 32, 32) and test.inputs.shape == (PER_BATCH, 3, 32, 32)
    assert train.inputs.dtype == test.inputs.dtype == torch.float32
    assert train.targets.dtype == test.targets.dtype == torch.int64
    assert train.targets.tolist() == _train_labels(written)  # data_batch_1..5 in order
    assert test.targets.tolist() == written["test_batch"][1]
    assert train.is_classification


def test_normalization_of_one_pixel_by_hand(tmp_path):
    folder, written = make_cifar10(tmp_path)
    rows, labels = written["data_batch_2"]
    rows[3, 1024 + 2 * 32 + 7] = 200  # image 3 of batch 2, green, row 2, column 7
    _write(folder / "data_batch_2", {b"data": rows, b"labels": labels})
    train, _ = load_cifar("cifar10", str(folder))
    # (200/255 - 123.0/255) / (62.1/255) = (200 - 123.0) / 62.1
    assert train.inputs[PER_BATCH + 3, 1, 2, 7].item() == pytest.approx((200 - 123.0) / 62.1, rel=1e-6)
    # the reference code's constants, and every value against the same formula in float64
    assert NORMALIZATION["cifar10"] == ((125.3, 123.0, 113.9), (63.0, 62.1, 66.7))
    mean, std = (np.array(c).reshape(1, 3, 1, 1) for c in NORMALIZATION["cifar10"])
    expected = (_train_rows(written).reshape(-1, 3, 32, 32) - mean) / std
    assert np.allclose(train.inputs.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_raw_data_is_only_scaled_to_unit_range_in_both_splits(cifar10, tmp_path):
    _, written = cifar10
    train, test = load_cifar("cifar10", str(tmp_path), raw=True)
    assert torch.equal(train.inputs, torch.from_numpy(_train_rows(written)).float().div(255).view(-1, 3, 32, 32))
    assert torch.equal(test.inputs, torch.from_numpy(written["test_batch"][0]).float().div(255).view(-1, 3, 32, 32))
    assert 0 <= train.inputs.min() and train.inputs.max() <= 1


def test_parent_folder_and_batches_folder_give_the_same_data(cifar10, tmp_path):
    folder, _ = cifar10
    a_train, a_test = load_cifar("cifar10", str(tmp_path))
    b_train, b_test = load_cifar("cifar10", str(folder))
    assert torch.equal(a_train.inputs, b_train.inputs) and torch.equal(a_test.targets, b_test.targets)


def test_python3_pickles_are_read_too(tmp_path):
    _, written = make_cifar10(tmp_path, python2=False)
    train, _ = load_cifar("cifar10", str(tmp_path), raw=True)
    assert train.targets.tolist() == _train_labels(written)
    assert class_names("cifar10", str(tmp_path))[9] == "truck"


def test_cifar100_reads_fine_labels_and_names(tmp_path):
    _, written = make_cifar100(tmp_path)
    train, test = load_cifar("cifar100", str(tmp_path))
    assert train.inputs.shape == (6, 3, 32, 32) and test.inputs.shape == (3, 3, 32, 32)
    assert train.targets.tolist() == written["train"][1] and test.targets.tolist() == written["test"][1]
    names = class_names("cifar100", str(tmp_path / "cifar-100-python"))
    assert len(names) == 100 and names[0] == "apple"
    pixel = int(written["test"][0][2, 2048])  # image 2, blue, row 0, column 0
    # CIFAR-100's own training-set statistics, blue channel: mean 112.4, std 70.4 (on 0..255)
    assert test.inputs[2, 2, 0, 0].item() == pytest.approx((pixel - 112.4) / 70.4, rel=1e-5, abs=1e-6)


def test_class_names_of_cifar10(cifar10, tmp_path):
    assert class_names("cifar10", str(tmp_path))[:3] == ["airplane", "automobile", "bird"]


# --- files that cannot be used ----------------------------------------------------------------------------------


def _input_error(name, path, *fragments):
    with pytest.raises(InputError) as caught:
        load_cifar(name, str(path))
    message = str(caught.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_missing_folder(tmp_path):
    message = _input_error("cifar10", tmp_path / "nowhere")
    assert message == (
        f"CIFAR-10 folder {tmp_path / 'nowhere'} not found: expected cifar-10-batches-py/ "
        "with data_batch_1..5, test_batch, batches.meta"
    )


def test_folder_without_the_files(tmp_path):
    _input_error(
        "cifar100",
        tmp_path,
        str(tmp_path),
        "no cifar-100-python/ inside",
        "lacks train, test, meta",
        "expected cifar-100-python/ with train, test, meta",
    )


def test_missing_batch_file(cifar10, tmp_path):
    folder, _ = cifar10
    (folder / "data_batch_3").unlink()
    _input_error("cifar10", tmp_path, str(folder), "lacks data_batch_3:", "data_batch_1..5")


def test_file_that_is_not_a_pickle(cifar10, tmp_path):
    folder, _ = cifar10
    (folder / "data_batch_4").write_bytes(b"<html>404 Not Found</html>\n")
    _input_error("cifar10", tmp_path, str(folder / "data_batch_4"), "is not a CIFAR pickle")


def test_pickle_with_wrong_keys(cifar10, tmp_path):
    folder, _ = cifar10
    _write(folder / "test_batch", {b"images": np.zeros((2, 3072), np.uint8), b"labels": [0, 1]})
    _input_error("cifar10", tmp_path, str(folder / "test_batch"), "b'data'")


def test_cifar10_batch_in_a_cifar100_folder_has_the_wrong_keys(tmp_path):
    folder, _ = make_cifar100(tmp_path)
    _write(folder / "train", {b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 1]})
    _input_error("cifar100", tmp_path, str(folder / "train"), "b'fine_labels'")


@pytest.mark.parametrize(
    "data, labels, fragment",
    [
        (np.zeros((2, 1024), np.uint8), [0, 1], "expected uint8 (N, 3072)"),
        (np.zeros((2, 3072), np.float32), [0, 1], "expected uint8 (N, 3072)"),
        (np.zeros((2, 3072), np.uint8), [0, 1, 2], "2 images but 3 labels"),
        (np.zeros((2, 3072), np.uint8), [0, 10], "expected 0..9"),
        (np.zeros((2, 3072), np.uint8), [b"cat", b"dog"], "not a list of integers"),
    ],
)
def test_malformed_contents(cifar10, tmp_path, data, labels, fragment):
    folder, _ = cifar10
    _write(folder / "data_batch_5", {b"data": data, b"labels": labels}, python2=False)
    _input_error("cifar10", tmp_path, str(folder / "data_batch_5"), fragment)


def test_broken_meta_file(cifar10, tmp_path):
    folder, _ = cifar10
    _write(folder / "batches.meta", {b"label_names": [b"cat"]})
    _input_error("cifar10", tmp_path, str(folder / "batches.meta"), "not a list of 10 names")


def test_a_pickle_that_would_run_code_is_refused(cifar10, tmp_path):
    folder, _ = cifar10
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (folder / "test_batch").write_bytes(pickle.dumps({b"data": Payload()}))
    _input_error("cifar10", tmp_path, "is not a CIFAR pickle", "refusing to load")
    assert not marker.exists()


def test_unknown_name_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="'cifar20'"):
        load_cifar("cifar20", str(tmp_path))


# The acceptance run: ResNet-56 from a reference-style checkpoint on a CIFAR-10 folder, under MPI,
# train and test surfaces, then the same on a reference-format direction file.
@pytest.mark.mpi
def test_resnet56_on_a_cifar10_folder_under_mpi(tmp_path):
    make_cifar10(tmp_path / "data")
    torch.manual_seed(1)  # not the initial weights landscape itself would draw (seed 0)
    model = build_model("resnet56")
    torch.save(
        {"state_dict": {f"module.{k}": v for k, v in model.state_dict().items()}, "epoch": 300, "acc": 93.1},
        tmp_path / "model_300.t7",
    )  # as the reference code saves a DataParallel model
    common = [
        "--model",
        "resnet56",
        "--model_file",
        str(tmp_path / "model_300.t7"),
        "--dataset",
        "cifar10",
        "--datapath",
        str(tmp_path / "data"),
        "--x=-1:1:3",
        "--y=-1:1:3",
        "--xnorm",
        "filter",
        "--xignore",
        "biasbn",
        "--ynorm",
        "filter",
        "--yignore",
        "biasbn",
        "--threads",
        "1",
    ]
    proc = run("plot_surface", [*common, "--surf_file", str(tmp_path / "r56.h5")], ranks=2, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = read_surface(str(tmp_path / "r56.h5"))
    assert s.done.all() and set(s.values) == {"train_loss", "train_acc", "test_loss", "test_acc"}
    assert s.attrs["dataset"] == "cifar10" and s.run["ranks"] == 2
    assert s.attrs["origin_sha256"] == sha256_tensors(model.state_dict())  # the checkpoint's weights, unwrapped

    # the same directions written as the reference code does: tensors "0".."n-1" in parameter order
    d = read_directions(str(tmp_path / "r56.directions.h5"))
    axes = [{k: v.numpy() for k, v in d.x.items()}, {k: v.numpy() for k, v in d.y.items()}]
    with h5py.File(tmp_path / "ref_dirs.h5", "w") as f:
        for group, axis in zip(("xdirection", "ydirection"), axes):
            g = f.create_group(group)
            for i, (name, _) in enumerate(model.named_parameters()):
                g.create_dataset(str(i), data=axis[name])
    proc = run(
        "plot_surface",
        [*common, "--dir_file", str(tmp_path / "ref_dirs.h5"), "--surf_file", str(tmp_path / "r56_ref.h5")],
        ranks=2,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = read_surface(str(tmp_path / "r56_ref.h5"))
    assert all(np.array_equal(s.values[q], r.values[q]) for q in s.values)
