"""Run the CLI in-process for a web request: the request's fields as command-line options."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from distcalc.cli import app

runner = CliRunner()


def cli_args(command: str, request: dict[str, Any]) -> list[str]:
    """``{"tp": 8, "sequence_parallel": True, "kind": "all-reduce"}`` → ``[command, all-reduce, --tp, 8,
    --sequence-parallel]``."""
    args = [command]
    if "kind" in request:
        args.append(request["kind"])
    for name, value in request.items():
        if name == "kind":
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            args.append(flag if value else flag.replace("--", "--no-", 1))
        else:
            args += [flag, str(value)]
    return args


def cli(command: str, request: dict[str, Any]) -> tuple[int, Any, str]:
    """Exit code, parsed ``--json`` output (None on error) and the stderr line."""
    result = runner.invoke(app, cli_args(command, request) + ["--json"])
    payload = json.loads(result.stdout) if result.exit_code == 0 else None
    return result.exit_code, payload, result.stderr.strip()
