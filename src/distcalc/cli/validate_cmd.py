"""``distcalc validate``: compare predictions with the published numbers shipped in the package."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from distcalc.cli.common import JsonOption, emit_json, handle_errors
from distcalc.errors import ConfigError
from distcalc.validation import CASE_SETS, CaseSet, SkippedCase, ValidationCase
from distcalc.validation.summary import GroupSummary, group_summaries
from distcalc.render.tables.validate import print_case_set

# Quantities summarised per source when a set's cases carry a group: (unit, JSON key, title).
SUMMARY_QUANTITIES = (("s", "step_time", "step time"), ("GiB", "peak_memory", "peak memory"))


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


def register(app: typer.Typer) -> None:
    """Add the ``validate`` command."""

    @app.command("validate")
    @handle_errors
    def validate(
        set_names: Annotated[Optional[list[str]], typer.Option("--set", help="case set to run (repeatable)")] = None,
        json_output: JsonOption = False,
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
                per_quantity = _summaries(cases, skipped)
                summaries = [(title, per_quantity[key]) for _, key, title in SUMMARY_QUANTITIES
                             if per_quantity.get(key)]
                print_case_set(case_set, cases, skipped, summaries, gaps.get(case_set.name) or [])
        if strict and not all_passed:
            raise typer.Exit(1)
