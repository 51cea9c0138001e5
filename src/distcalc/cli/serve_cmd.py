"""``distcalc serve``: the calculator as a local web page (needs the ``web`` extra)."""

from __future__ import annotations

from typing import Annotated

import typer

from distcalc.cli.common import handle_errors


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command."""

    @app.command("serve")
    @handle_errors
    def serve_command(
        host: Annotated[str, typer.Option(help="address to bind; anything but loopback is reachable from "
                                               "other machines")] = "127.0.0.1",
        port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port (0: any free port)")] = 8000,
    ) -> None:
        """Serve the calculator page and its JSON API (docs at /docs) on HOST:PORT."""
        from distcalc.web.server import serve  # function-local: the web extra is optional

        serve(host, port)
