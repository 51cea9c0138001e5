"""Text view of ``distcalc validate``: per case set, the case table (predicted, published, error, tolerance,
pass/fail), the count within tolerance, the per-source summaries, the rows not compared and the open gaps."""

from __future__ import annotations

from typing import Sequence

from rich.table import Table

from distcalc.render.console import console
from distcalc.validation import CaseSet, OpenGap, SkippedCase, ValidationCase
from distcalc.validation.summary import GroupSummary


def _format_error(case: ValidationCase) -> tuple[str, str]:
    if case.error_kind == "relative":
        return f"{100 * case.error:+.3f} %", f"{100 * case.tolerance:.2f} %"
    return f"{case.error:+.3f}", f"{case.tolerance:g}"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f} %"


def _summary_table(name: str, title: str, summaries: list[GroupSummary]) -> Table:
    table = Table(title=f"{name}: {title} per source (relative error)")
    for column in ("source", "rows", "runnable", "mean |err|", "max |err|", "signed mean", "other tool",
                   "its mean |err|", "ours, same rows"):
        table.add_column(column, justify="left" if column in ("source", "other tool") else "right",
                         no_wrap=column == "source")
    for s in summaries:
        ran = s.runnable > 0
        table.add_row(s.group, str(s.rows), str(s.runnable), _pct(s.mean_abs_error if ran else None),
                      _pct(s.max_abs_error if ran else None), f"{100 * s.signed_mean_error:+.1f} %" if ran else "",
                      s.other_tool, _pct(s.other_tool_mean_abs_error), _pct(s.ours_on_other_tool_rows),
                      end_section=s is summaries[-2])
    return table


def _skipped_table(name: str, skipped: list[SkippedCase]) -> Table:
    table = Table(title=f"{name}: rows not compared, with the reason")
    for column in ("case", "source", "reason"):
        table.add_column(column, no_wrap=column == "case")
    for skip in skipped:
        table.add_row(skip.case, skip.group, skip.reason)
    return table


def _gaps_table(name: str, gaps: list[OpenGap]) -> Table:
    table = Table(title=f"{name}: sources outside the targets, with what is known")
    for column in ("source", "quantity", "mean |err|", "signed mean", "known"):
        table.add_column(column, justify="right" if "err" in column or "mean" in column else "left",
                         no_wrap=column == "source")
    for gap in gaps:
        table.add_row(gap.group, gap.quantity.replace("_", " "), _pct(gap.mean_abs_error),
                      f"{100 * gap.signed_mean_error:+.1f} %", gap.known)
    return table


def print_case_set(case_set: CaseSet, cases: list[ValidationCase], skipped: list[SkippedCase],
                   summaries: Sequence[tuple[str, list[GroupSummary]]], gaps: list[OpenGap]) -> None:
    """Every table of one case set; ``summaries`` is (quantity title, per-source rows) in print order."""
    table = Table(title=f"{case_set.name}: {case_set.description}", caption=case_set.source)
    for column in ("case", "predicted", "published", "unit", "error", "tolerance", "result"):
        table.add_column(column, justify="left" if column in ("case", "unit") else "right",
                         no_wrap=column == "case", min_width=len(column))
    for case in cases:
        error, tolerance = _format_error(case)
        result = "[green]pass[/green]" if case.passed else "[red]FAIL[/red]"
        table.add_row(case.case, f"{case.predicted:.5g}", f"{case.published:.5g}", case.unit, error,
                      tolerance, result)
    console.print(table)
    passed = sum(c.passed for c in cases)
    console.print(f"{case_set.name}: {passed}/{len(cases)} within tolerance\n")
    for title, rows in summaries:
        console.print(_summary_table(case_set.name, title, rows))
    if skipped:
        console.print(_skipped_table(case_set.name, skipped))
    if gaps:
        console.print(_gaps_table(case_set.name, gaps))
