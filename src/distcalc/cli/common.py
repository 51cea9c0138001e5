"""Shared CLI plumbing: error handling (exit 2, no traceback), JSON output, option parsers.

Every command module in ``distcalc.cli`` exposes ``register(app: typer.Typer)`` and renders only; the
computation lives in the library modules.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, TypeVar

import typer
from rich.console import Console

from distcalc.errors import DistcalcError
from distcalc.run_file import DEFAULTS, load_run_file
from distcalc.units import require_unit

# Piped output (README examples, CI logs) gets a wide fixed width instead of rich's 80-column default,
# so tables are not truncated to 'algor…'.
console = Console(width=None if sys.stdout.isatty() else 140)
error_console = Console(stderr=True)

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
        except ImportError as error:  # an optional extra is missing (matplotlib, torch)
            fail(f"{error}. Install the matching extra, e.g. pip install 'distcalc[plot]' or 'distcalc[bench]'")
        except Exception as error:  # pydantic.ValidationError without importing pydantic here
            if type(error).__name__ == "ValidationError":
                fail(_short_validation_message(error))
            raise

    return wrapper  # type: ignore[return-value]


def _short_validation_message(error: Exception) -> str:
    try:
        parts = []
        for item in error.errors():  # type: ignore[attr-defined]
            location = ".".join(str(x) for x in item.get("loc", ()))
            parts.append(f"{location}: {item.get('msg')} (got {item.get('input')!r})")
        return "; ".join(parts)
    except Exception:  # pragma: no cover - defensive
        return str(error).splitlines()[0]


def to_jsonable(value: Any) -> Any:
    """Convert dataclasses, pydantic models, enums, numpy scalars/arrays into plain JSON types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump())
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy
        return to_jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def emit_json(payload: Any) -> None:
    """Print one JSON object on stdout and nothing else."""
    sys.stdout.write(json.dumps(to_jsonable(payload), indent=2) + "\n")


_UNIT_KINDS = {"parse_rate": "rate", "parse_size": "size", "parse_size_range": "size"}


def parse_or_exit(parser: Callable[[str], Any], text: str, option: str) -> Any:
    """Run a unit parser on an option value; on error re-raise the same error type with the option named
    (``--size: invalid size '-1': ...``), which :func:`handle_errors` turns into exit code 2. A bare number too
    small to be bytes (``--bandwidth 400``) is refused (:func:`distcalc.units.require_unit`)."""
    try:
        kind = _UNIT_KINDS.get(getattr(parser, "__name__", ""))
        if kind is not None:
            require_unit(text, kind)
        return parser(text)
    except DistcalcError as error:
        raise type(error)(f"{option}: {error}") from None


def emit_report(report: Any, *, json_output: bool, plot: Any, render: Callable[[], None],
                extra: Optional[dict[str, Any]] = None) -> None:
    """Print a report: its ``to_dict()`` (plus ``extra`` keys) as JSON (with ``plot`` when a figure was
    written), or the rich view followed by where the figure went."""
    if json_output:
        payload = {**report.to_dict(), **(extra or {})}
        if plot is not None:
            payload["plot"] = str(plot)
        emit_json(payload)
        return
    render()
    if plot is not None:
        console.print(f"plot written to {plot}")


# --- shared options: one hardware vocabulary, run files, honest exit codes -------------------------------

#: Exit code of a report whose configuration does not fit in GPU memory (unless --allow-oom).
EXIT_OOM = 3
EXIT_CODES_HELP = "Exit codes: 0 ok; 2 bad input; 3 does not fit in GPU memory (unless --allow-oom)."


def _config_callback(ctx: typer.Context, value: Optional[Path]) -> Optional[Path]:
    """Eager ``--config``: the run file's values become the command's defaults (command-line flags win)."""
    if value is None:
        return value
    valid = [p.name for p in ctx.command.params if p.name and p.name != "config"]
    try:
        values = load_run_file(value, valid)
    except DistcalcError as error:
        raise typer.BadParameter(str(error), ctx=ctx, param_hint="--config") from None
    ctx.default_map = {**(ctx.default_map or {}), **values}
    return value


ConfigOption = Annotated[Optional[Path], typer.Option(
    "--config", is_eager=True, callback=_config_callback, rich_help_panel="output",
    help="run file (YAML): option names as keys, e.g. 'seq-len: 8192'; flags given here override it")]
ClusterOption = Annotated[Optional[str], typer.Option(
    "--cluster", rich_help_panel="cluster",
    help=f"cluster preset or YAML file (distcalc presets clusters) [default: {DEFAULTS.cluster}, or the first "
         "cluster hosting --gpu]")]
GpuOption = Annotated[Optional[str], typer.Option(
    "--gpu", rich_help_panel="cluster",
    help="GPU preset replacing the cluster's; refused when the cluster's in-node link is not the GPU's")]
AllowOomOption = Annotated[bool, typer.Option(
    "--allow-oom", rich_help_panel="output",
    help="exit 0 even when the configuration does not fit in GPU memory (the report still says so first)")]

FirstStageOption = Annotated[Optional[int], typer.Option(
    "--first-stage-layers", min=1, rich_help_panel="schedule",
    help="transformer layers on the first pipeline stage (vpp 1); the other stages share the rest evenly "
         "(Megatron-Core --decoder-first-pipeline-num-layers)")]
LastStageOption = Annotated[Optional[int], typer.Option(
    "--last-stage-layers", min=1, rich_help_panel="schedule",
    help="transformer layers on the last pipeline stage (Megatron-Core --decoder-last-pipeline-num-layers; "
         "DeepSeek-V3: 61 layers on pp 16 as 4 + 14×4 + 1)")]

_ORIGINS = {"COMMANDLINE": "command line", "DEFAULT_MAP": "run file", "ENVIRONMENT": "environment",
            "DEFAULT": "default", "PROMPT": "prompt"}


def setting_origins(ctx: typer.Context, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{name: {"value": v, "origin": "default" | "command line" | "run file"}}`` for the report header."""
    out = {}
    for name, value in values.items():
        source = ctx.get_parameter_source(name)
        out[name] = {"value": to_jsonable(value), "origin": _ORIGINS.get(getattr(source, "name", ""), "derived")}
    return out


def settings_line(settings: dict[str, dict[str, Any]]) -> str:
    """``settings: model llama3-8b (default) · gpus 256 (command line) · …``."""
    parts = [f"{name.replace('_', '-')} {entry['value']} ({entry['origin']})" for name, entry in settings.items()
             if entry["value"] is not None]
    return "settings: " + " · ".join(parts)


def print_line(text: str) -> None:
    """Print one header line unwrapped (``hardware: …``, ``settings: …``, ``does not fit: …``)."""
    console.print(text, soft_wrap=True)


def exit_if_oom(fits: Optional[bool], allow_oom: bool) -> None:
    """Exit with :data:`EXIT_OOM` when the report said the configuration does not fit (and no --allow-oom)."""
    if fits is False and not allow_oom:
        raise typer.Exit(EXIT_OOM)


def cluster_topology(cluster: Optional[str], gpu: Optional[str], gpus: int) -> tuple[Any, Any]:
    """(topology, hardware) for ``collective``/``simulate --cluster/--gpu``: N GPUs of the cluster as one
    NVSwitch node (N ≤ GPUs per node: a switch at the in-node link's η·B) or as nodes of g GPUs with one NIC
    share each (hierarchical: η·B in node, η·B of the NICs per GPU across nodes); α from the link presets."""
    from distcalc.hardware_choice import resolve_hardware
    from distcalc.topology import TopologyKind, make_topology

    hardware = resolve_hardware(cluster, gpu)
    c = hardware.cluster
    if c.intra_topology != "switch":
        raise DistcalcError(f"--cluster {c.name}: its in-node network is a {c.intra_topology}; give --topology "
                            f"{c.intra_topology} --shape … with the link numbers (distcalc presets links)")
    intra_b = c.intra.efficiency * c.intra.bandwidth_bytes_per_s
    if gpus <= c.gpus_per_node:
        return make_topology(TopologyKind.SWITCH, gpus, intra_b, c.intra.latency_s,
                             in_network_reduction=c.in_network_reduction), hardware
    if c.inter is None or c.nics_per_node == 0:
        raise DistcalcError(f"--gpus {gpus}: cluster {c.name} has no inter-node network and {c.gpus_per_node} "
                            "GPUs per node")
    inter_b = c.inter.efficiency * c.inter_bandwidth_per_gpu_bytes_per_s
    return make_topology(TopologyKind.HIERARCHICAL, gpus, intra_b, c.intra.latency_s, gpus_per_node=c.gpus_per_node,
                         inter_bandwidth_bytes_per_s=inter_b, inter_latency_s=c.inter.latency_s), hardware
