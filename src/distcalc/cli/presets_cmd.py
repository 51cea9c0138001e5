"""``distcalc presets [models|gpus|clusters|links]``: the shipped presets with their key numbers and sources
(the web page's pickers use the same object from ``/api/presets``)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from distcalc.cli.common import JsonOption, emit_json, handle_errors
from distcalc.jobs.presets import presets_payload
from distcalc.render.tables.presets import print_presets


def register(app: typer.Typer) -> None:
    """Add the ``presets`` command."""

    @app.command("presets")
    @handle_errors
    def presets_command(
        kind: Annotated[Optional[str], typer.Argument(
            help="models, gpus, clusters or links [default: all four]", show_default=False)] = None,
        json_output: JsonOption = False,
    ) -> None:
        """List the model, GPU, cluster and link presets with their key numbers and sources."""
        data = presets_payload(kind)
        if json_output:
            emit_json(data)
            return
        print_presets(data)
