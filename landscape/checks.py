"""The checks every configuration shares: whole numbers, numbers in a range, one of a few choices.

Each returns the value when it can be used and raises ``ConfigError`` (``field=value: expected ...``)
otherwise, the value shown as Python writes it, so that the string ``"10"`` is not mistaken for 10.
A ``bool`` is never a number here, though Python counts it as one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

from .errors import ConfigError

SEED_MAX = 2**63 - 1  # the largest seed torch.manual_seed and every generator here take
BATCH_MAX = 2**31 - 1  # more samples than any data set a batch is drawn from
WHOLE = re.compile(r"[+-]?[0-9]{1,30}")


def json_loads(text: str | bytes):
    """``json.loads`` for text from a file or a flag: JSON nested too deeply for Python's parser (20,000
    brackets) is a ``ValueError`` like any other malformed JSON, never a ``RecursionError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def is_whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def as_whole(value) -> int | None:
    """A whole number as a file writes it: an int, an integral finite float (JSON's 16.0) or a string of
    digits (CSV's "16"); None for anything else (a bool, 2.5, "16x", inf)."""
    if is_whole(value):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and WHOLE.fullmatch(value.strip()):
        return int(value.strip())
    return None


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def whole(field: str, value, least: int = 1, most: int | None = None, expected: str | None = None) -> int:
    """``value`` if it is a whole number from ``least`` to ``most`` (no upper bound: None)."""
    if is_whole(value) and value >= least and (most is None or value <= most):
        return value
    if expected is None:
        if most is not None:
            expected = f"a whole number from {least} to {most}"
        elif least == 1:
            expected = "a positive whole number"
        else:
            expected = f"a whole number >= {least}"
    raise ConfigError(field, value, expected, literal=True)


def number(
    field: str,
    value,
    above: float | None = None,
    below: float | None = None,
    least: float | None = None,
    expected: str | None = None,
) -> float:
    """``value`` if it is a finite number ``> above``, ``< below`` and ``>= least`` (each bound optional)."""
    fits = (
        is_number(value)
        and (above is None or value > above)
        and (below is None or value < below)
        and (least is None or value >= least)
    )
    if fits:
        return value
    if expected is None:
        if above == 0 and below is None and least is None:
            expected = "a positive number"
        elif above is not None and below is not None:
            expected = f"a number strictly between {above:g} and {below:g}"
        else:
            parts = [f"> {above:g}" if above is not None else "", f">= {least:g}" if least is not None else ""]
            parts.append(f"< {below:g}" if below is not None else "")
            bounds = " and ".join(p for p in parts if p)
            expected = f"a number {bounds}" if bounds else "a finite number"
    raise ConfigError(field, value, expected, literal=True)


def one_of(field: str, value, choices: Iterable[str]) -> str:
    """``value`` if it is one of ``choices``."""
    choices = tuple(choices)
    if value in choices:
        return value
    raise ConfigError(field, value, f"one of {', '.join(choices)}")
