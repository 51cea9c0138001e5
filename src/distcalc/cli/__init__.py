"""The ``distcalc`` command line (typer). Each command lives in its own module with a ``register(app)``."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import typer

from distcalc.cli.checks import OneLineErrors

app = typer.Typer(
    cls=OneLineErrors,
    name="distcalc",
    help="Communication, memory and step-time calculator for distributed LLM training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

# Command modules, in the order their commands appear in --help.
COMMAND_MODULES = (
    "collective_cmd",
    "simulate_cmd",
    "memory_cmd",
    "analyze_cmd",
    "search_cmd",
    "bench_cmd",
    "validate_cmd",
    "presets_cmd",
    "serve_cmd",
)

for _name in COMMAND_MODULES:
    if importlib.util.find_spec(f"distcalc.cli.{_name}") is not None:
        importlib.import_module(f"distcalc.cli.{_name}").register(app)


def main() -> None:
    """Console-script entry point."""
    sys.exit(app())
