"""Shared CLI plumbing: error handling (exit 2, no traceback), JSON output, option parsers.

Every command module in ``distcalc.cli`` exposes ``register(app: typer.Typer)``, parses its options, calls its
job and hands the typed result to :mod:`distcalc.render` (tables, figures); the computation lives in the
library modules. The consoles and header lines are :mod:`distcalc.render.console`'s, re-exported here, as are
the light names of :mod:`.base` (a command whose options need only those imports :mod:`.base` alone).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from distcalc.cli.base import (  # noqa: F401 (the commands' names)
    EXIT_CODES_HELP, EXIT_OOM, EXIT_USAGE, AllowOomOption, CalibrationOption, ClusterOption, ConfigOption, GpuOption,
    GpuSpeedCvOption, JsonOption, ModelOption, PanelJsonOption, emit_json, exit_if_oom, fail, handle_errors,
    parse_or_exit, request_values, setting_origins,
)
from distcalc.parallel_schema import ParallelFields
from distcalc.render.console import console, error_console, print_line, settings_line  # noqa: F401 (the commands' names)

#: what a left-out global batch becomes, as the schema documents it (``derived_default``)
GLOBAL_BATCH_DERIVED = ParallelFields.model_fields["global_batch"].json_schema_extra["derived_default"]


def mark_derived_origins(header: dict[str, dict[str, Any]], gpus_origin: Optional[str],
                         global_batch: Optional[int]) -> None:
    """The header's origins of the two layout values ``analyze`` and ``memory`` derive when left out: ``gpus``
    (``gpus_origin``: the cluster or the parallel degrees; None when given) and ``global_batch`` (None: the
    schema's derived default)."""
    if gpus_origin is not None:
        header["gpus"]["origin"] = gpus_origin
    if global_batch is None:
        header["global_batch"]["origin"] = GLOBAL_BATCH_DERIVED


def emit_report(payload: dict[str, Any], *, json_output: bool, plot: Any, render: Callable[[], None],
                extra: Optional[dict[str, Any]] = None) -> None:
    """Print a report: its ``--json`` object (plus ``extra`` keys, and ``plot`` when a figure was written), or
    the rich view followed by where the figure went."""
    if json_output:
        payload = {**payload, **(extra or {})}
        if plot is not None:
            payload["plot"] = str(plot)
        emit_json(payload)
        return
    render()
    if plot is not None:
        console.print(f"plot written to {plot}")


def print_link_hardware(request: Any, gpus: int, json_output: bool) -> None:
    """``collective``/``simulate``: the ``hardware:`` line of a ``--cluster``/``--gpu`` request (text mode),
    noting that links are priced at the bandwidth NCCL achieves (η·B)."""
    hardware = request.hardware(allow_files=True)
    if hardware is not None and not json_output:
        print_line(hardware.headline(gpus) + " (η·B: what NCCL achieves)")
