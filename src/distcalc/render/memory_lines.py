"""The lines of a per-GPU memory breakdown as the ``memory`` table's rows and the ``memory --plot`` bar segments
show them: :data:`distcalc.memory.lines.SEGMENTS`, in that order, optional lines left out when zero."""

from __future__ import annotations

from typing import Any, Sequence

from distcalc.memory.lines import OPTIONAL_LINES, SEGMENTS

__all__ = ["OPTIONAL_LINES", "SEGMENTS", "stage_lines"]


def stage_lines(stages: Sequence[Any]) -> list[tuple[str, list[float]]]:
    """(label, bytes per stage) of every line of :data:`SEGMENTS` for ``stages`` (``StageMemory`` records), the
    optional lines left out where all are zero."""
    lines = []
    for label, fields in SEGMENTS:
        values = [sum(getattr(stage, field) for field in fields) for stage in stages]
        if label in OPTIONAL_LINES and not any(values):
            continue
        lines.append((label, values))
    return lines
