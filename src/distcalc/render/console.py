"""Where text output goes: the rich consoles (stdout, stderr) and the one-line header helpers every command's
text view shares (``hardware: …``, ``settings: …``, ``does not fit: …``)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

# Piped output (README examples, CI logs) gets a wide fixed width instead of rich's 80-column default,
# so tables are not truncated to 'algor…'.
console = Console(width=None if sys.stdout.isatty() else 140)
error_console = Console(stderr=True)


def settings_line(settings: dict[str, dict[str, Any]]) -> str:
    """``settings: model llama3-8b (default) · gpus 256 (command line) · …``."""
    parts = [f"{name.replace('_', '-')} {entry['value']} ({entry['origin']})" for name, entry in settings.items()
             if entry["value"] is not None]
    return "settings: " + " · ".join(parts)


def print_line(text: str) -> None:
    """Print one header line unwrapped (``hardware: …``, ``settings: …``, ``does not fit: …``)."""
    console.print(text, soft_wrap=True)
