"""CIFAR-10 and CIFAR-100 from a local folder in the standard "python version" format.

Nothing is downloaded and torchvision is not needed.  The files are the pickles
published at https://www.cs.toronto.edu/~kriz/cifar.html: each data file holds a
dict with ``b'data'``, uint8 rows of 3,072 values (the 32x32 red, green and
blue planes, row-major), and a list of labels.  They were written by Python 2,
so they are read with ``encoding='bytes'`` and through an unpickler that only
rebuilds numpy arrays: a folder named by ``--datapath`` cannot run code.

The tensors match what the reference code (tomgoldstein/loss-landscape,
``dataloader.py``'s ``load_dataset``) feeds the model: ``ToTensor`` (scale to
[0, 1]) then ``Normalize`` with the constants below: the same float32
operations in the same order (not checked against torchvision, which this
project does not install); with ``raw=True``
(``--raw_data``) only the scaling, for the training *and* the test set.  No
augmentation: a loss surface is evaluated on a fixed data set.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError, UsageError
from .samples import Samples

# Per-channel mean and std of the training images, on the 0..255 scale.  CIFAR-10:
# the constants of the reference code (cifar10/dataloader.py and dataloader.py).
# CIFAR-100 (not in the reference): the same statistics of its own training set,
# as published alongside them (wide-resnet and its descendants).
NORMALIZATION = {
    "cifar10": ((125.3, 123.0, 113.9), (63.0, 62.1, 66.7)),
    "cifar100": ((129.3, 124.1, 112.4), (68.2, 65.4, 70.4)),
}

IMAGE_SHAPE = (3, 32, 32)
ROW = 3 * 32 * 32


@dataclass(frozen=True)
class _Layout:
    """Where one data set's files are and which keys they hold."""

    title: str
    folder: str  # the standard sub-folder name
    train: tuple[str, ...]
    test: str
    meta: str
    labels_key: bytes
    names_key: bytes
    classes: int

    @property
    def files(self) -> tuple[str, ...]:
        return (*self.train, self.test, self.meta)

    def expected(self) -> str:
        train = f"{self.train[0][:-1]}1..{len(self.train)}" if len(self.train) > 1 else self.train[0]
        return f"{self.folder}/ with {train}, {self.test}, {self.meta}"


LAYOUTS = {
    "cifar10": _Layout(
        "CIFAR-10",
        "cifar-10-batches-py",
        tuple(f"data_batch_{i}" for i in range(1, 6)),
        "test_batch",
        "batches.meta",
        b"labels",
        b"label_names",
        10,
    ),
    "cifar100": _Layout(
        "CIFAR-100", "cifar-100-python", ("train",), "test", "meta", b"fine_labels", b"fine_label_names", 100
    ),
}

# The only globals a CIFAR pickle needs: numpy's array and dtype reconstruction
# (``numpy.core`` as written by numpy 1 and Python 2, ``numpy._core`` by numpy 2),
# and ``_codecs.encode``, which protocol-2 pickles from Python 3 use for bytes.
_SAFE_GLOBALS = {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
    *((f"numpy.{core}.multiarray", name) for core in ("core", "_core") for name in ("_reconstruct", "scalar")),
    *((f"numpy.{core}.numeric", "_frombuffer") for core in ("core", "_core")),
}


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _SAFE_GLOBALS:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        return super().find_class(module, name)


def _unpickle(path: str, layout: _Layout) -> dict:
    try:
        with open(path, "rb") as f:
            obj = _ArrayUnpickler(f, encoding="bytes").load()
    except OSError as exc:
        raise InputError(f"{layout.title} file {path} cannot be read ({exc.strerror or exc})") from None
    except Exception as exc:  # noqa: BLE001 - any failure of a foreign pickle means "not this format"
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise InputError(
            f"{layout.title} file {path} is not a CIFAR pickle ({type(exc).__name__}: {reason}): "
            f"expected a pickled dict as in {layout.expected()}"
        ) from None
    if not isinstance(obj, dict):
        raise InputError(
            f"{layout.title} file {path} holds a {type(obj).__name__}: expected a pickled dict "
            f"as in {layout.expected()}"
        )
    return obj


def _require(obj: dict, keys: tuple[bytes, ...], path: str, layout: _Layout) -> None:
    missing = [k for k in keys if k not in obj]
    if missing:
        found = ", ".join(repr(k) for k in list(obj)[:8]) or "none"
        raise InputError(
            f"{layout.title} file {path} lacks the key(s) {', '.join(map(repr, missing))} "
            f"(found {found}): expected {' and '.join(map(repr, keys))}"
        )


def _read_batch(path: str, layout: _Layout) -> tuple[np.ndarray, np.ndarray]:
    """The uint8 rows ``(n, 3072)`` and int64 labels ``(n,)`` of one data file, checked."""
    obj = _unpickle(path, layout)
    _require(obj, (b"data", layout.labels_key), path, layout)
    data = obj[b"data"]
    if isinstance(data, (bytes, bytearray)) and len(data) % ROW == 0:
        data = np.frombuffer(data, dtype=np.uint8).reshape(-1, ROW)
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 2 and data.shape[1] == ROW):
        what = f"{data.dtype} {data.shape}" if isinstance(data, np.ndarray) else type(data).__name__
        raise InputError(f"{layout.title} file {path}: b'data' is {what}: expected uint8 (N, {ROW})")
    try:
        labels = np.asarray(obj[layout.labels_key])
    except ValueError:  # ragged
        labels = np.empty((0, 0))
    if labels.size == 0 and labels.ndim == 1:
        labels = labels.astype(np.int64)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise InputError(f"{layout.title} file {path}: {layout.labels_key!r} is not a list of integers")
    labels = labels.astype(np.int64, copy=False)
    if len(labels) != len(data):
        raise InputError(
            f"{layout.title} file {path} has {len(data)} images but {len(labels)} labels "
            f"in {layout.labels_key!r}: expected one label per image"
        )
    if len(labels) and (labels.min() < 0 or labels.max() >= layout.classes):
        raise InputError(
            f"{layout.title} file {path}: labels range over {labels.min()}..{labels.max()}: "
            f"expected 0..{layout.classes - 1}"
        )
    return data, labels


def _layout(name: str) -> _Layout:
    if name not in LAYOUTS:
        raise UsageError(f"CIFAR data set {name!r}: expected one of {', '.join(LAYOUTS)}")
    return LAYOUTS[name]


def locate(name: str, datapath: str) -> str:
    """The folder that holds the files: ``datapath`` itself or its standard sub-folder."""
    layout = _layout(name)
    path = os.path.abspath(os.path.expanduser(os.fspath(datapath)))
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"{layout.title} folder {path} is a file: expected a folder holding {layout.expected()}")
    if not os.path.isdir(path):
        raise InputError(f"{layout.title} folder {path} not found: expected {layout.expected()}")
    sub = os.path.join(path, layout.folder)
    folder = sub if os.path.isdir(sub) else path
    missing = [f for f in layout.files if not os.path.isfile(os.path.join(folder, f))]
    if missing:
        where = folder if folder == sub else f"{path} (no {layout.folder}/ inside)"
        raise InputError(f"{layout.title} folder {where} lacks {', '.join(missing)}: expected {layout.expected()}")
    return folder


def class_names(name: str, datapath: str) -> list[str]:
    """The class names from the meta file, in label order (fine labels for CIFAR-100)."""
    layout = _layout(name)
    path = os.path.join(locate(name, datapath), layout.meta)
    obj = _unpickle(path, layout)
    _require(obj, (layout.names_key,), path, layout)
    names = obj[layout.names_key]
    if not (
        isinstance(names, (list, tuple))
        and len(names) == layout.classes
        and all(isinstance(n, (bytes, str)) for n in names)
    ):
        raise InputError(f"{layout.title} file {path}: {layout.names_key!r} is not a list of {layout.classes} names")
    return [n.decode("utf-8", "replace") if isinstance(n, bytes) else n for n in names]


def _to_samples(batches: list[tuple[np.ndarray, np.ndarray]], name: str, raw: bool) -> Samples:
    """uint8 rows -> float32 images, in the reference's order of operations (see the module docstring).

    Each batch is converted straight into one preallocated float32 array: no
    concatenated uint8 copy, no per-image work.
    """
    images = np.empty((sum(len(b[1]) for b in batches), ROW), dtype=np.float32)
    start = 0
    for rows, _ in batches:
        images[start : start + len(rows)] = rows
        start += len(rows)
    inputs = torch.from_numpy(images).view(-1, *IMAGE_SHAPE).div_(255)  # ToTensor
    if not raw:
        mean, std = (
            torch.tensor([v / 255.0 for v in c], dtype=torch.float32).view(3, 1, 1) for c in NORMALIZATION[name]
        )
        inputs.sub_(mean).div_(std)  # torchvision's Normalize
    return Samples(inputs, torch.from_numpy(np.concatenate([b[1] for b in batches])))


def black(name: str, raw: bool = False) -> torch.Tensor:
    """The per-channel value of a black pixel (0 of 255) in the images ``load_cifar`` returns: what
    the standard augmentation pads with (torchvision pads before it normalizes)."""
    if raw:
        return torch.zeros(3)
    mean, std = (torch.tensor([v / 255.0 for v in c], dtype=torch.float32) for c in NORMALIZATION[name])
    return (0 - mean) / std


def load_cifar(name: str, datapath: str, raw: bool = False) -> tuple[Samples, Samples]:
    """Train and test split of ``name`` ("cifar10" or "cifar100") read from ``datapath``.

    ``datapath`` is the batches folder or its parent.  Images are float32
    ``(N, 3, 32, 32)``, scaled to [0, 1] and normalized per channel
    (``NORMALIZATION``), or only scaled with ``raw=True``; labels are int64 (fine
    labels for CIFAR-100).  The training batches are concatenated in file order.
    """
    layout = _layout(name)
    folder = locate(name, datapath)
    class_names(name, folder)  # a broken meta file is reported now, not after the surface was computed
    train = [_read_batch(os.path.join(folder, f), layout) for f in layout.train]
    test = [_read_batch(os.path.join(folder, layout.test), layout)]
    return _to_samples(train, name, raw), _to_samples(test, name, raw)
