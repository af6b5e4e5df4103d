"""Evaluation data as tensors: ``Samples`` (inputs and targets) and the parts of them a job uses.

Data are turned into one pair of tensors per data set (train, test), once per
rank; evaluation then slices batches out of them, so nothing is decoded or
re-normalized per grid point.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import ConfigError, InputError, UsageError, describe


@dataclass
class Samples:
    """One data set: ``inputs[n]`` and ``targets[n]``."""

    inputs: torch.Tensor
    targets: torch.Tensor

    def __len__(self) -> int:
        return len(self.targets)

    @property
    def is_classification(self) -> bool:
        return not self.targets.is_floating_point()


@dataclass
class Data:
    """The training samples and, when the data set has them, the test samples."""

    name: str
    train: Samples
    test: Samples | None


def as_samples(obj, what: str) -> Samples:
    """``Samples`` from a pair of tensors or arrays ``(inputs, targets)``, a ``torch.utils.data.Dataset`` of
    ``(input, target)`` items, or an iterable of ``(inputs, targets)`` batches (a ``DataLoader``)."""
    arrays = (torch.Tensor, np.ndarray)
    if isinstance(obj, Samples):
        return obj
    if isinstance(obj, (tuple, list)) and len(obj) == 2 and all(isinstance(t, arrays) for t in obj):
        inputs, targets = (torch.as_tensor(t) for t in obj)
    elif isinstance(obj, torch.utils.data.Dataset):
        try:
            items = [obj[i] for i in range(len(obj))]
            inputs = torch.stack([torch.as_tensor(item[0]) for item in items])
            targets = torch.stack([torch.as_tensor(item[1]) for item in items])
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: one line naming it
            raise InputError(f"{what}: could not read (input, target) items from the Dataset ({exc})") from None
    elif isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        batches = list(obj)
        if not batches or not all(isinstance(b, (tuple, list)) and len(b) == 2 for b in batches):
            raise UsageError(f"{what}: expected (inputs, targets) batches, a Dataset or a pair of tensors")
        try:
            inputs = torch.cat([torch.as_tensor(b[0]) for b in batches])
            targets = torch.cat([torch.as_tensor(b[1]) for b in batches])
        except (RuntimeError, TypeError) as exc:
            raise UsageError(
                f"{what}: the batches cannot be joined into one tensor ({describe(exc)}); "
                "give batches whose shapes agree except along the first dimension"
            ) from None
    else:
        raise InputError(
            f"{what}: expected a torch.utils.data.Dataset, a pair of tensors (inputs, targets) or (inputs, "
            f"targets) batches, got {type(obj).__name__}"
        )
    if len(inputs) != len(targets):
        raise InputError(f"{what}: {len(inputs)} inputs but {len(targets)} targets")
    if len(targets) == 0:
        raise InputError(f"{what}: the data set is empty")
    for name, values in (("inputs", inputs), ("targets", targets)):
        if values.is_floating_point() or values.is_complex():
            bad = ~torch.isfinite(values.reshape(len(values), -1)).all(dim=1)
            if bool(bad.any()):
                raise InputError(
                    f"{what}: {int(bad.sum())} of its {len(values)} {name} hold NaN or infinite values (the first "
                    f"at sample {int(bad.nonzero()[0])}); expected finite numbers"
                )
    return Samples(inputs, targets)


def check_fits(model: torch.nn.Module, samples: Samples, model_name: str, data_name: str) -> torch.Tensor:
    """The model's outputs on the first two samples (the model in eval mode, then put back), or one line
    naming the model and the data set when it cannot take them.  Integer inputs are passed as they are
    (an embedding takes them); the line says so when a network of floats refuses them."""
    where = next(model.parameters(), None)
    inputs = samples.inputs[:2] if where is None else samples.inputs[:2].to(where.device)
    was_training = model.training
    try:
        with torch.no_grad():
            model.eval()
            return model(inputs)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: one line naming it
        kind = str(inputs.dtype).removeprefix("torch.")
        hint = (
            ""
            if inputs.is_floating_point()
            else f"; its inputs are {kind} and are given to the model as they are (an embedding takes them): "
            "a network of floats needs them converted to float in the data set's factory"
        )
        raise InputError(
            f"model {model_name} cannot take the inputs of dataset {data_name} ({kind}, each of shape "
            f"{tuple(inputs.shape[1:])}): {describe(exc)[:200]}{hint}"
        ) from None
    finally:
        model.train(was_training)


def chunk(samples: Samples, data_split: int, split_idx: int) -> Samples:
    """Chunk ``split_idx`` of ``data_split`` equal, contiguous chunks (``--data_split/--split_idx``).

    As in the reference (``dataloader.py``, written for Python 2's integer
    division): each chunk holds ``len // data_split`` samples, chunk ``i`` starts
    at ``i * (len // data_split)``, and the last ``len % data_split`` samples are
    in no chunk.  Equal chunks make the mean of the chunks' losses the loss of
    their union.
    """
    size = len(samples) // data_split
    if size == 0:
        raise ConfigError("data_split", data_split, f"at most the {len(samples)} samples to cut into chunks")
    start = size * split_idx
    return Samples(samples.inputs[start : start + size], samples.targets[start : start + size])


def subset(samples: Samples, n: int, seed: int) -> Samples:
    """A fixed random subset of ``n`` samples, drawn with ``seed``, kept in data-set order.

    The subset for ``n`` is contained in the subset for any larger ``n`` with the
    same seed (it is a prefix of one seeded permutation).
    """
    if not 1 <= n <= len(samples):
        raise ConfigError("train_subset", n, f"at most the {len(samples)} training samples")
    chosen = np.sort(np.random.default_rng(seed).permutation(len(samples))[:n])
    index = torch.from_numpy(chosen)
    return Samples(samples.inputs[index], samples.targets[index])
