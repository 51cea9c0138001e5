"""Per-source summaries of a case set whose cases come from several sources (``ValidationCase.group``).

For each source and quantity (the case's ``unit``: ``s`` step time, ``GiB`` peak memory): rows listed,
rows run, mean |error|, max |error|, signed mean error (the bias), and, where another tool published its
prediction of the same rows, that tool's mean |error| over the same rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass

from distcalc.validation.base import SkippedCase, ValidationCase

OVERALL = "all sources"
ROW_UNIT = "s"  # the quantity every compared row has (step time)


@dataclass(frozen=True)
class GroupSummary:
    """Error statistics of one source (``group``) for one quantity (``unit``); errors are relative."""

    group: str
    unit: str
    rows: int          # rows listed for this source (run + not expressible)
    runnable: int      # rows compared
    mean_abs_error: float
    max_abs_error: float
    signed_mean_error: float
    other_tool: str = ""
    other_tool_rows: int = 0
    other_tool_mean_abs_error: float | None = None
    ours_on_other_tool_rows: float | None = None  # our mean |error| over the rows the other tool predicted

    def to_dict(self) -> dict[str, object]:
        """JSON form."""
        return asdict(self)


def _summary(group: str, unit: str, cases: list[ValidationCase], rows: int) -> GroupSummary:
    errors = [c.error for c in cases]
    other = [c for c in cases if c.other_tool_error is not None]
    n = len(errors)
    return GroupSummary(
        group=group, unit=unit, rows=rows, runnable=n,
        mean_abs_error=sum(abs(e) for e in errors) / n if n else 0.0,
        max_abs_error=max((abs(e) for e in errors), default=0.0),
        signed_mean_error=sum(errors) / n if n else 0.0,
        other_tool=other[0].other_tool if other else "", other_tool_rows=len(other),
        other_tool_mean_abs_error=sum(abs(c.other_tool_error) for c in other) / len(other) if other else None,
        ours_on_other_tool_rows=sum(abs(c.error) for c in other) / len(other) if other else None,
    )


def group_summaries(cases: list[ValidationCase], skipped: list[SkippedCase], unit: str) -> list[GroupSummary]:
    """One :class:`GroupSummary` per source for the cases of ``unit``, in first-seen order, then the overall
    line. ``rows`` counts a source's rows: compared (one step-time case each) and not expressible."""
    by_group: dict[str, list[ValidationCase]] = defaultdict(list)
    row_count: dict[str, int] = defaultdict(int)
    for case in cases:
        row_count[case.group] += case.unit == ROW_UNIT  # every compared row has one step-time case
        if case.unit == unit:
            by_group[case.group].append(case)
    for skip in skipped:
        by_group.setdefault(skip.group, [])
        row_count[skip.group] += 1
    summaries = [_summary(g, unit, cs, row_count[g]) for g, cs in by_group.items()]
    everything = [c for cs in by_group.values() for c in cs]
    summaries.append(_summary(OVERALL, unit, everything, sum(row_count.values())))
    return summaries
