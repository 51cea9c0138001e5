"""Text view of ``distcalc presets``: one table per preset kind (name, key numbers, source)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from distcalc.presets_catalog import PresetKind
from distcalc.render.console import console


def print_presets(data: dict[str, list[dict[str, Any]]]) -> None:
    """The tables of a :func:`distcalc.jobs.presets.presets_payload` object, in :class:`PresetKind` order."""
    for name, rows in ((k.value, data[k.value]) for k in PresetKind if k.value in data):
        table = Table(title=f"{name} ({len(rows)})", show_lines=False)
        table.add_column("name", no_wrap=True)
        table.add_column("key numbers")
        table.add_column("source")
        for row in rows:
            table.add_row(row["name"], row["key numbers"], row["source"])
        console.print(table)
