"""``distcalc validate``: compare predictions with the published numbers shipped in the package."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from distcalc.cli.common import console, emit_json, handle_errors
from distcalc.errors import ConfigError
from distcalc.validation import CASE_SETS, CaseSet, ValidationCase


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
        results = [(case_set, case_set.run()) for case_set in _select(set_names)]
        all_passed = all(c.passed for _, cases in results for c in cases)
        if json_output:
            emit_json({
                "sets": [{
                    "name": cs.name, "description": cs.description, "source": cs.source,
                    "cases": [c.to_dict() for c in cases],
                    "max_abs_error": max((abs(c.error) for c in cases), default=0.0),
                    "passed": all(c.passed for c in cases),
                } for cs, cases in results],
                "passed": all_passed,
            })
        else:
            for case_set, cases in results:
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
        if strict and not all_passed:
            raise typer.Exit(1)
