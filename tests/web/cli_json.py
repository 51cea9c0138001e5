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


#: The CLI's exit code when the configuration does not fit in GPU memory (its --json still printed); the API
#: answers 200 with ``fits`` false.
EXIT_DOES_NOT_FIT = 3


def cli(command: str, request: dict[str, Any]) -> tuple[int, Any, str]:
    """Exit code (a configuration that does not fit counts as 0, as the API's 200), parsed ``--json`` output
    (None on error) and the stderr line. The CLI's ``settings`` (where each value came from: command line, run
    file, default) describe how its input was typed and are left out; the API has no such record."""
    result = runner.invoke(app, cli_args(command, request) + ["--json"])
    code = 0 if result.exit_code == EXIT_DOES_NOT_FIT else result.exit_code
    payload = json.loads(result.stdout) if code == 0 else None
    if isinstance(payload, dict):
        payload.pop("settings", None)
    return code, payload, result.stderr.strip()
