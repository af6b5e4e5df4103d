"""Numbers in words checked against a results file: every decimal number and percentage of a text must be
one of the file's values, rounded as printed (a percentage: a fraction times 100), so that a finding
typed by hand cannot drift from the record it cites."""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"(?<![\w.])([+−-]?\d+\.\d+|[+−-]?\d+(?=\s?%))")


def values(record) -> list[float]:
    """Every number in a JSON record, nested anywhere."""
    if isinstance(record, bool):
        return []
    if isinstance(record, (int, float)):
        return [float(record)] if math.isfinite(record) else []
    if isinstance(record, dict):
        return [v for item in record.values() for v in values(item)]
    if isinstance(record, list):
        return [v for item in record for v in values(item)]
    return []


def _matches(text: str, v: float, percent: bool) -> bool:
    shown = float(text.replace("−", "-"))
    for candidate in (100 * v, v) if percent else (v,):
        decimals = len(text.split(".")[1]) if "." in text else 0
        if round(candidate, decimals) == shown or (shown and f"{candidate:.3g}" == f"{shown:.3g}"):
            return True
        digits = len(text.lstrip("+−-").replace(".", "").lstrip("0"))
        if shown and digits and f"{candidate:.{digits}g}" == f"{shown:.{digits}g}":
            return True
    return False


def unfounded(text: str, record) -> list[str]:
    """The decimal numbers and percentages of ``text`` that no value of ``record`` gives, as printed."""
    pool = values(record)
    missing = []
    for match in NUMBER.finditer(text):
        token = match.group(1)
        percent = text[match.end() : match.end() + 2].lstrip().startswith("%")
        if not any(_matches(token, v, percent) or _matches(token, -v, percent) for v in pool):
            missing.append(token)
    return missing
