"""A command as a function: one set of parameters, named as the command line's flags name them, whose
defaults are those of the configurations they fill (``surface.config.SurfaceJob``'s parts, ``Recipe``, ...).

Each module of ``workflows`` runs one command from a dict of the parameters given (``run(params)``) and
returns a result dataclass with ``record()``; ``cli`` parses flags into that dict, ``api`` takes keywords.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError


def fields_of(params: dict, cls) -> dict:
    """The parameters that are fields of the configuration dataclass ``cls``."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in params.items() if k in names}


def config_defaults(*configs) -> dict:
    """Each field's default in ``configs`` (dataclasses), by name; the first class that has it wins."""
    out = {}
    for cls in configs:
        for f in dataclasses.fields(cls):
            if f.name in out or not f.init:
                continue
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
    return out


def check_known(params: dict, known, command: str) -> None:
    """A keyword the command does not take is refused by name, not ignored."""
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise UsageError(
            f"{unknown[0]}: not a parameter of landscape {command}; expected one of {', '.join(sorted(known))}"
        )


def _plain(value):
    """A value as JSON holds it: numbers (NaN as null), strings, lists and dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


plain = _plain  # values as strict JSON holds them (NaN and infinities as null)


@dataclass(frozen=True)
class Result:
    """Base of the commands' results: ``record()`` is the result as plain JSON-able values (fields
    declared with ``repr=False``, such as arrays read back from files, are left out)."""

    def record(self) -> dict:
        return _plain(self)

    def json(self) -> str:
        return json.dumps(self.record(), indent=2)
