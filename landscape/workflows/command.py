"""What the commands share: ``Result``, the base of their results (``record()``: plain JSON values), and
``fields_of``, the parameters that fill one configuration.

Each module of ``workflows`` runs one command from its ``Params`` (``run(params)``, ``workflows.params``)
and returns a result dataclass; ``cli`` parses flags into those parameters, ``api`` takes keywords.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import numpy as np


def fields_of(params: dict, cls) -> dict:
    """The parameters that are fields of the configuration dataclass ``cls``."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in params.items() if k in names}


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
