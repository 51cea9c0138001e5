"""``distcalc presets [models|gpus|clusters|links]``: the shipped presets with their key numbers and sources."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from distcalc.cli.common import console, emit_json, handle_errors
from distcalc.errors import ConfigError
from distcalc.presets_catalog import PresetKind, preset_rows
from distcalc.suggest import did_you_mean


def _kind(text: str) -> PresetKind:
    valid = [k.value for k in PresetKind]
    key = text.strip().lower()
    if key not in valid:
        raise ConfigError(f"unknown preset family {text!r}{did_you_mean(key, valid)}; valid: {', '.join(valid)}")
    return PresetKind(key)


def register(app: typer.Typer) -> None:
    """Add the ``presets`` command."""

    @app.command("presets")
    @handle_errors
    def presets_command(
        kind: Annotated[Optional[str], typer.Argument(
            help="models, gpus, clusters or links [default: all four]", show_default=False)] = None,
        json_output: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    ) -> None:
        """List the model, GPU, cluster and link presets with their key numbers and sources."""
        kinds = [_kind(kind)] if kind is not None else list(PresetKind)
        tables = {k.value: preset_rows(k) for k in kinds}
        if json_output:
            emit_json(tables)
            return
        for name, rows in tables.items():
            table = Table(title=f"{name} ({len(rows)})", show_lines=False)
            table.add_column("name", no_wrap=True)
            table.add_column("key numbers")
            table.add_column("source")
            for row in rows:
                table.add_row(row["name"], row["key numbers"], row["source"])
            console.print(table)
