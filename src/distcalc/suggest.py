""""Did you mean" for a mistyped name (a preset, a unit): the closest valid names by difflib's ratio."""

from __future__ import annotations

import difflib
from typing import Iterable

#: difflib similarity below which a name is not suggested (difflib.get_close_matches' own default).
CUTOFF = 0.6


def close_names(name: str, choices: Iterable[str], limit: int = 3) -> list[str]:
    """Up to ``limit`` names of ``choices`` closest to ``name`` (case-insensitive), best first."""
    by_lower = {str(c).lower(): str(c) for c in choices}
    hits = difflib.get_close_matches(str(name).strip().lower(), list(by_lower), n=limit, cutoff=CUTOFF)
    return [by_lower[h] for h in hits]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` (or ``'x' or 'y'``), or ``""`` when nothing is close."""
    hits = close_names(name, choices)
    if not hits:
        return ""
    return " (did you mean " + " or ".join(repr(h) for h in hits) + "?)"
