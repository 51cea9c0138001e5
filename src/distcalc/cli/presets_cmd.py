"""``distcalc presets``: the shipped model, GPU and cluster presets (the web page's pickers use the same
object from ``/api/presets``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from distcalc.cli.common import console, emit_json, handle_errors
from distcalc.jobs.presets import presets_payload
from distcalc.units import format_size


def register(app: typer.Typer) -> None:
    """Add the ``presets`` command."""

    @app.command("presets")
    @handle_errors
    def presets_command(
        json_output: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    ) -> None:
        """List the model, GPU and cluster presets."""
        data = presets_payload()
        if json_output:
            emit_json(data)
            return
        models = Table(title="models")
        for column in ("name", "parameters", "layers", "heads", "hidden", "MoE"):
            models.add_column(column)
        for m in data["models"]:
            models.add_row(m["name"], f"{m['parameters'] / 1e9:.1f}B", str(m["num_hidden_layers"]),
                           str(m["num_attention_heads"]), str(m["hidden_size"]), "yes" if m["moe"] else "")
        console.print(models)
        gpus = Table(title="GPUs")
        for column in ("name", "memory", "description"):
            gpus.add_column(column)
        for g in data["gpus"]:
            gpus.add_row(g["name"], format_size(g["memory_bytes"]), g["description"])
        console.print(gpus)
        clusters = Table(title="clusters")
        for column in ("name", "GPU", "GPUs/node", "intra", "inter"):
            clusters.add_column(column)
        for c in data["clusters"]:
            clusters.add_row(c["name"], c["gpu"], str(c["gpus_per_node"]), c["intra"]["link"],
                             c["inter"]["link"] if c["inter"] else "-")
        console.print(clusters)
