"""The light half of the CLI's shared plumbing: error handling (exit 2, no traceback), JSON output, the shared
options and run-file values, and :func:`run_body`.

Nothing here imports a renderer or a job, so a command module that declares its options with these names alone
starts fast: ``distcalc analyze --help`` reads the options and never imports rich's console, the step-time
model or NumPy. What prints through rich (:func:`distcalc.cli.common.emit_report`) is in :mod:`.common`.
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, TypeVar

import typer

from distcalc.cli.startup import collection_paused
from distcalc.errors import DistcalcError
from distcalc.inputs import shorten
from distcalc.jobs.messages import parse_option, validation_item_message
from distcalc.jobs.jsonable import to_jsonable
from distcalc.run_file import DEFAULTS, load_run_file
from distcalc.gpu_speed_cv import DEFAULT_GPU_SPEED_CV

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


def emit_json(payload: Any) -> None:
    """Print one JSON object on stdout and nothing else."""
    sys.stdout.write(json.dumps(to_jsonable(payload), indent=2) + "\n")


#: A unit parser run on an option value, the option named in its error (kept under its CLI name).
parse_or_exit = parse_option


# --- shared options: one hardware vocabulary, run files, honest exit codes -------------------------------

#: Exit code of a report whose configuration does not fit in GPU memory (unless --allow-oom).
EXIT_OOM = 3
EXIT_CODES_HELP = "Exit codes: 0 ok; 2 bad input; 3 does not fit in GPU memory (unless --allow-oom)."


ConfigOption = Annotated[Optional[Path], typer.Option(
    "--config", rich_help_panel="output",
    help="run file (YAML): option names as keys, e.g. 'seq-len: 8192' (the web page exports one); flags given "
         "here override it")]
ClusterOption = Annotated[Optional[str], typer.Option(
    "--cluster", rich_help_panel="cluster",
    help=f"cluster preset or YAML file (distcalc presets clusters) [default: {DEFAULTS.cluster}, or the first "
         "cluster hosting --gpu]")]
GpuOption = Annotated[Optional[str], typer.Option(
    "--gpu", rich_help_panel="cluster",
    help="GPU preset replacing the cluster's; refused when the cluster's in-node link is not the GPU's")]
GpuSpeedCvOption = Annotated[float, typer.Option(
    min=0.0, max=0.5, rich_help_panel="cluster", show_default=False,
    help="σ of per-GPU compute speed (fraction); the step waits for the slowest GPU (0: identical "
         f"GPUs) [default: {DEFAULT_GPU_SPEED_CV:.4f}]")]
CalibrationOption = Annotated[Optional[Path], typer.Option(
    "--calibration", rich_help_panel="cluster",
    help="calibration file from `distcalc calibrate`: measured α/B per collective and tier (replacing η·B) and "
         "GEMM efficiency")]
AllowOomOption = Annotated[bool, typer.Option(
    "--allow-oom", rich_help_panel="output",
    help="exit 0 even when the configuration does not fit in GPU memory (the report still says so first)")]
#: What ``--model`` accepts (``analyze``, ``memory``, ``search``).
MODEL_HELP = "model preset, config.json / YAML path, or a Hugging Face repo id in the local cache"
ModelOption = Annotated[str, typer.Option(rich_help_panel="model", help=MODEL_HELP)]


def json_option(panel: Optional[str] = None) -> Any:
    """Every command's ``--json`` switch (``panel``: the rich help panel of a command that groups its options)."""
    return Annotated[bool, typer.Option("--json", rich_help_panel=panel, help="print one JSON object")]


#: ``--json`` of a command whose options are not grouped in panels, and of one whose are (the output panel).
JsonOption = json_option()
PanelJsonOption = json_option("output")

def request_values(ctx: typer.Context, config: Optional[Path]) -> tuple[dict[str, Any], dict[str, str]]:
    """The command's parameter values with a run file's (``--config``) under the command line's, and where each
    came from (``command line``, ``run file``, ``default``). Values from the file go into the command's request
    model unconverted, so they are checked as the web API checks a request."""
    params = {k: v for k, v in ctx.params.items() if k != "config"}
    given = {k for k in params if getattr(ctx.get_parameter_source(k), "name", "DEFAULT") != "DEFAULT"}
    valid = [p.name for p in ctx.command.params if p.name and p.name != "config"]
    from_file = load_run_file(config, valid) if config is not None else {}
    values = {**params, **{k: v for k, v in from_file.items() if k not in given}}
    origins = {k: "command line" if k in given else "run file" if k in from_file else "default" for k in params}
    return values, origins


def setting_origins(values: dict[str, Any], origins: dict[str, str]) -> dict[str, dict[str, Any]]:
    """``{name: {"value": v, "origin": "default" | "command line" | "run file" | …}}`` for the report header."""
    return {name: {"value": to_jsonable(value), "origin": origins.get(name, "derived")}
            for name, value in values.items()}


def exit_if_oom(fits: Optional[bool], allow_oom: bool) -> None:
    """Exit with :data:`EXIT_OOM` when the report said the configuration does not fit (and no --allow-oom)."""
    if fits is False and not allow_oom:
        raise typer.Exit(EXIT_OOM)


def run_body(module: str, *args: Any) -> Any:
    """``distcalc.cli.<module>.run(*args)``: a command's work (its job and its rendering), loaded by name when
    the command runs, as :data:`distcalc.cli.COMMANDS` loads the command modules, so that declaring the
    command (``--help``, a usage error) imports neither."""
    with collection_paused():  # the command's job and renderer: imports only (distcalc.cli.startup)
        body = importlib.import_module(f"distcalc.cli.{module}")
    return body.run(*args)
