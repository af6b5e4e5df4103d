"""Reading trained weights from checkpoint files into a model.

Accepted layouts: a plain state_dict, ``{'state_dict': ...}`` (the reference
code's ``model_300.t7``) and ``{'model': ...}``; keys may carry the ``module.``
(DataParallel/DDP) or ``_orig_mod.`` (torch.compile) prefixes.  Files are read
with ``weights_only=True``: a checkpoint is untrusted input.
"""

from __future__ import annotations

import io
import os
import warnings
import zipfile

import torch

from ..errors import ConfigError, InputError, param
from ..plugins import ALLOW_RECORDED, canonical, check_recorded, factory_args
from .atomic import write_with
from .paths import readable_file

PREFIXES = ("module.", "_orig_mod.")


def read_state_dict(path: str, allow_pickle: bool = False, mmap: bool = False) -> dict[str, torch.Tensor]:
    """The state_dict in ``path``; ``allow_pickle`` permits full unpickling (trusted files only).  ``mmap``:
    tensors mapped from the file, read only where used (a zip archive of torch.save; others are loaded)."""
    path = readable_file(path, "checkpoint")
    if not _looks_like_torch_file(path):
        raise InputError(
            f"checkpoint {path} is not a torch file: expected a zip archive (torch.save) or a pickle "
            "(older torch, the reference code's .t7)"
        )
    try:
        with warnings.catch_warnings():  # torch warns about plain pickles; the error below says what matters
            warnings.simplefilter("ignore")
            try:
                obj = torch.load(path, map_location="cpu", weights_only=not allow_pickle, mmap=mmap or None)
            except RuntimeError:
                if not mmap:
                    raise
                obj = torch.load(path, map_location="cpu", weights_only=not allow_pickle)  # not a zip archive
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a bad file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "weights only load failed" in first.lower():
            raise InputError(
                f"checkpoint {path} holds Python objects besides tensors, which are not unpickled "
                "by default (a checkpoint can run code); if you trust the file, add --allow_pickle"
            ) from None
        raise InputError(f"checkpoint {path} cannot be read as a torch file of tensors ({first[:160]})") from None
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
            break
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise InputError(
            f"checkpoint {path} holds no state_dict (expected a dict of tensors, or one under 'state_dict' or 'model')"
        )
    return _unwrapped(obj)


def trained_on(path) -> dict:
    """What a ``landscape train`` checkpoint records it was trained on: ``{"model": ..., "dataset": ...,
    "num_classes": ...}`` (and ``model_args``, ``data_args`` where its factories took arguments) from its
    ``meta.identity`` (weights only, nothing unpickled), or ``{}`` for any other file — a checkpoint
    from elsewhere, or one that cannot be read (the loader's own checks speak then)."""
    if not isinstance(path, str) or not os.path.isfile(path) or not _looks_like_torch_file(path):
        return {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - any unreadable file: no record
        return {}
    meta = obj.get("meta") if isinstance(obj, dict) else None
    identity = meta.get("identity") if isinstance(meta, dict) else None
    if not isinstance(identity, dict) or not isinstance(identity.get("dataset"), str):
        return {}
    classes, model = identity.get("num_classes"), identity.get("model")
    args = {k: identity[k] for k in ("model_args", "data_args") if isinstance(identity.get(k), str)}
    return {
        "dataset": identity["dataset"],
        **({"model": model} if isinstance(model, str) else {}),
        **({"num_classes": classes} if isinstance(classes, int) else {}),
        **args,
    }


def with_recorded(params: dict, file_key: str = "model_file") -> dict:
    """``params`` with ``model``, ``num_classes``, ``model_args`` and (when no other ``dataset`` is given)
    ``dataset`` and ``data_args`` taken from what the ``landscape train`` checkpoint at ``params[file_key]``
    records, where they are not given.  A given model or model_args other than the recorded one is
    refused, both named; ``--data_args '{}'`` asks for the data set's factory without arguments.  A
    plug-in factory taken from the record is refused unless ``params[ALLOW_RECORDED]`` (``plugins.
    check_recorded``): a checkpoint is untrusted input, and its record must not choose code to run.  With
    no model given, a checkpoint that is missing or not a file says so (not that no model was given)."""
    if isinstance(params.get(file_key), str) and params.get("model") is None:
        readable_file(params[file_key], param(file_key))
    recorded = trained_on(params.get(file_key))
    given = params.get("model")
    if isinstance(given, str) and recorded.get("model") not in (None, given, canonical(given)):
        raise ConfigError(
            "model",
            given,
            f"{recorded['model']}, the model {params[file_key]} was trained as (or no --model: the checkpoint's own)",
        )
    args = params.get("model_args")
    if (
        "model" in recorded
        and args not in (None, "")
        and factory_args(args, "model_args") != recorded.get("model_args", "")
    ):
        raise ConfigError(
            "model_args",
            args,
            f"{recorded.get('model_args') or 'none'}, the arguments {params[file_key]} was built with "
            "(or no --model_args: the checkpoint's own)",
        )
    out = dict(params)
    keys = ("model", "num_classes", "model_args")
    dataset = params.get("dataset")
    if dataset is None or (isinstance(dataset, str) and canonical(dataset) == recorded.get("dataset")):
        keys += ("dataset", "data_args")  # the same data set: with its arguments, unless others are given
    for key in keys:
        if out.get(key) in (None, "") and key in recorded:
            out[key] = recorded[key]
    for key in ("model", "dataset"):  # a factory the checkpoint names runs only if the user names it too
        if out.get(key) is not params.get(key):
            check_recorded(out[key], key, f"checkpoint {params[file_key]}", allowed=bool(params.get(ALLOW_RECORDED)))
    return out


def _unwrapped(state: dict) -> dict:
    """Drop a wrapper's prefix (``module.``, ``_orig_mod.``) when every key carries it."""
    while state:
        prefix = next((p for p in PREFIXES if all(k.startswith(p) for k in state)), None)
        if prefix is None:
            return state
        state = {k[len(prefix) :]: v for k, v in state.items()}
    return state


def _looks_like_torch_file(path: str) -> bool:
    """A zip archive (torch.save since 1.6) or a pickle stream (older files, the reference's .t7)."""
    with open(path, "rb") as handle:
        head = handle.read(2)
    return zipfile.is_zipfile(path) or head[:1] == b"\x80"


COUNTER = "num_batches_tracked"


def load_into(model: torch.nn.Module, state: dict[str, torch.Tensor], source: str) -> list[str]:
    """Load ``state`` into ``model``; a mismatch names missing, unexpected and mis-shaped keys.

    BatchNorm's ``num_batches_tracked`` counters may be missing: PyTorch < 0.4.1,
    which saved the paper's published checkpoints, had none.  They count training
    steps and play no part in evaluation, so the model keeps its own.  Returns
    notes worth telling the user (once).
    """
    own = model.state_dict()
    counters = sorted(k for k in set(own) - set(state) if k.rsplit(".", 1)[-1] == COUNTER)
    missing = sorted(set(own) - set(state) - set(counters))
    extra = sorted(set(state) - set(own))
    wrong = sorted(
        f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}"
        for k in set(own) & set(state)
        if state[k].shape != own[k].shape
    )
    if missing or extra or wrong:
        parts = [
            f"{label}: {', '.join(names[:5])}" + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
            for label, names in (("missing", missing), ("unexpected", extra), ("mis-shaped", wrong))
            if names
        ]
        raise InputError(f"checkpoint {source} does not match the model; " + "; ".join(parts))
    model.load_state_dict({**state, **{k: own[k] for k in counters}})
    if counters:
        return [
            f"checkpoint {source} has no BatchNorm {COUNTER} counters (saved by PyTorch < 0.4.1?); "
            f"they do not affect evaluation, so the model's own are kept ({len(counters)} layers)"
        ]
    return []


def save(model: torch.nn.Module, path: str, record: dict | None = None, replace: bool = True) -> None:
    """Save as ``{'state_dict': ..., **record}``, the layout the reference code writes, whole or not at all
    (``atomic.write_with``: a partial file synced and renamed).  ``replace``: an older ``path`` is replaced;
    otherwise a file that appeared meanwhile is left as it is.  A write the system refuses (a full disk)
    is an input error naming ``path``, and no partial file is left."""
    buffer = io.BytesIO()  # torch writes into memory: a refused write is the file system's, told plainly
    torch.save({"state_dict": model.state_dict(), **(record or {})}, buffer)
    write_with(path, "checkpoint", lambda handle: handle.write(buffer.getbuffer()), replace=replace)
