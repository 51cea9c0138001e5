"""Shared CLI plumbing: error handling (exit 2, no traceback), JSON output, option parsers.

Every command module in ``distcalc.cli`` exposes ``register(app: typer.Typer)`` and renders only; the
computation lives in the library modules.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable, TypeVar

import typer
from rich.console import Console

from distcalc.errors import DistcalcError
from distcalc.inputs import shorten
from distcalc.jobs.base import parse_option, validation_item_message
from distcalc.jobs.jsonable import to_jsonable

# Piped output (README examples, CI logs) gets a wide fixed width instead of rich's 80-column default,
# so tables are not truncated to 'algor…'.
console = Console(width=None if sys.stdout.isatty() else 140)
error_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USAGE = 2


def fail(message: str) -> None:
    """Print ``error: message`` on stderr and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def handle_errors(function: F) -> F:
    """Decorator for command functions: a :class:`DistcalcError` (or pydantic validation error) becomes
    exit code 2 with a one-line message on stderr; never a traceback."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except DistcalcError as error:
            fail(str(error))
        except OSError as error:  # a file the user named cannot be read or written (disk full, no access)
            where = f"{error.filename}: " if getattr(error, "filename", None) else ""
            fail(f"{where}{error.strerror or error}")
        except ImportError as error:  # an optional extra is missing (matplotlib, torch)
            fail(f"{error}. Install the matching extra, e.g. pip install 'distcalc[plot]' or 'distcalc[bench]'")
        except Exception as error:  # pydantic.ValidationError without importing pydantic here
            if type(error).__name__ == "ValidationError":
                fail(_short_validation_message(error))
            raise

    return wrapper  # type: ignore[return-value]


def _short_validation_message(error: Exception) -> str:
    try:
        return shorten("; ".join(validation_item_message(item) for item in error.errors()), 500)  # type: ignore[attr-defined]
    except Exception:  # pragma: no cover - defensive
        return str(error).splitlines()[0]


#: A unit parser run on an option value, the option named in its error (kept under its CLI name).
parse_or_exit = parse_option


def emit_json(payload: Any) -> None:
    """Print one JSON object on stdout and nothing else."""
    sys.stdout.write(json.dumps(to_jsonable(payload), indent=2) + "\n")


def emit_report(report: Any, *, json_output: bool, plot: Any, render: Callable[[], None]) -> None:
    """Print a report: its ``to_dict()`` as JSON (with ``plot`` when a figure was written), or the rich view
    followed by where the figure went."""
    if json_output:
        payload = report.to_dict()
        if plot is not None:
            payload["plot"] = str(plot)
        emit_json(payload)
        return
    render()
    if plot is not None:
        console.print(f"plot written to {plot}")
