"""``distcalc validate``: compare predictions with the published numbers shipped in the package."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from distcalc.cli.common import console, emit_json, handle_errors
from distcalc.errors import ConfigError
from distcalc.validation import CASE_SETS, CaseSet, OpenGap, SkippedCase, ValidationCase
from distcalc.validation.summary import GroupSummary, group_summaries

# Quantities summarised per source when a set's cases carry a group: (unit, JSON key, title).
SUMMARY_QUANTITIES = (("s", "step_time", "step time"), ("GiB", "peak_memory", "peak memory"))


def _format_error(case: ValidationCase) -> tuple[str, str]:
    if case.error_kind == "relative":
        return f"{100 * case.error:+.3f} %", f"{100 * case.tolerance:.2f} %"
    return f"{case.error:+.3f}", f"{case.tolerance:g}"


def _select(names: list[str] | None) -> list[CaseSet]:
    if not names:
        return list(CASE_SETS.values())
    unknown = [n for n in names if n not in CASE_SETS]
    if unknown:
        raise ConfigError(f"unknown case set {unknown[0]!r}; valid: {', '.join(CASE_SETS)}")
    return [CASE_SETS[n] for n in names]


def _summaries(cases: list[ValidationCase], skipped: list[SkippedCase]) -> dict[str, list[GroupSummary]]:
    """Per-source summaries of a set whose cases carry a group (empty otherwise)."""
    if not any(c.group for c in cases):
        return {}
    return {key: group_summaries(cases, skipped, unit) for unit, key, _ in SUMMARY_QUANTITIES
            if any(c.unit == unit for c in cases)}


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


def register(app: typer.Typer) -> None:
    """Add the ``validate`` command."""

    @app.command("validate")
    @handle_errors
    def validate(
        set_names: Annotated[Optional[list[str]], typer.Option("--set", help="case set to run (repeatable)")] = None,
        json_output: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
        strict: Annotated[bool, typer.Option(help="exit 1 if any case fails")] = False,
    ) -> None:
        """Run the validation case sets: predicted vs published, error, tolerance, pass/fail per case."""
        results = [(case_set, case_set.run(), case_set.skipped() if case_set.skipped else [])
                   for case_set in _select(set_names)]
        gaps = {cs.name: cs.open_gaps() for cs, _, _ in results if cs.open_gaps}
        all_passed = all(c.passed for _, cases, _ in results for c in cases)
        if json_output:
            sets = []
            for cs, cases, skipped in results:
                entry = {"name": cs.name, "description": cs.description, "source": cs.source,
                         "cases": [c.to_dict() for c in cases],
                         "max_abs_error": max((abs(c.error) for c in cases), default=0.0),
                         "passed": all(c.passed for c in cases)}
                summaries = _summaries(cases, skipped)
                if summaries:
                    entry["summary"] = {key: [s.to_dict() for s in rows] for key, rows in summaries.items()}
                if cs.skipped:
                    entry["not_compared"] = [s.to_dict() for s in skipped]
                if cs.name in gaps:
                    entry["open_gaps"] = [g.to_dict() for g in gaps[cs.name]]
                sets.append(entry)
            emit_json({"sets": sets, "passed": all_passed})
        else:
            for case_set, cases, skipped in results:
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
                per_quantity = _summaries(cases, skipped)
                for _, key, title in SUMMARY_QUANTITIES:
                    summaries = per_quantity.get(key)
                    if summaries:
                        console.print(_summary_table(case_set.name, title, summaries))
                if skipped:
                    console.print(_skipped_table(case_set.name, skipped))
                if gaps.get(case_set.name):
                    console.print(_gaps_table(case_set.name, gaps[case_set.name]))
        if strict and not all_passed:
            raise typer.Exit(1)
