"""Result files of ``distcalc bench``: schema, hardware/version record, naming and loading.

A result file is one JSON object::

    {"schema": "distcalc.bench/1", "theme": "collectives" | "gemm" | "training",
     "created": ISO-8601 time, "hardware": {...}, "versions": {...},
     "backend": "gloo", "world_size": 4, "config": {... every option of the run ...},
     "results": [ rows ]}

Rows of a ``collectives`` file carry ``collective``, ``tier``, ``group_size``, ``size_bytes`` (M in the NCCL /
nccl-tests convention, docs/design.md §2), ``time_s`` (median over trials), ``p99_time_s``, ``trials``,
``trial_times_s``, ``algbw_bytes_per_s`` and ``busbw_bytes_per_s``. Rows of a ``gemm`` file carry the GEMM
name, ``m``, ``n``, ``k``, ``flops``, ``time_s``, ``p99_time_s`` and ``flops_per_s``.

The default file name is ``bench-<theme>-<hardware>-<yyyymmdd>.json`` where ``<hardware>`` is the host name
and the device (``cpu`` or the GPU model), e.g. ``bench-collectives-myhost-cpu-20250101.json``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import socket
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from distcalc.errors import BenchError
from distcalc.inputs import PATH_CHARS, excerpt, read_data_file

SCHEMA = "distcalc.bench/1"
THEMES = ("collectives", "gemm", "training")


class CollectiveRow(BaseModel):
    """One measured (collective, tier, size) point of a sweep."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, strict=True)

    collective: str = Field(description="collective name as on the CLI, e.g. 'all-reduce'")
    tier: Literal["intra", "inter"] = Field("intra", description="network tier the group spans: 'intra' (one "
                                           "node) or 'inter'")
    group_size: int = Field(ge=1, description="ranks in the measured group (N)")
    size_bytes: int = Field(gt=0, description="M in the NCCL convention, bytes")
    time_s: float = Field(gt=0, description="median time of one call over the trials, seconds")
    p99_time_s: float = Field(gt=0, description="99th percentile of the trial times, seconds")
    trials: int = Field(ge=1, description="number of timed calls")
    trial_times_s: list[float] = Field(default_factory=list, description="every timed call, seconds")
    algbw_bytes_per_s: float = Field(gt=0, description="M / time_s, bytes per second")
    busbw_bytes_per_s: float = Field(ge=0, description="algbw × the nccl-tests bus factor, bytes per second")


class GemmRow(BaseModel):
    """One measured GEMM shape (m×k) · (k×n)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, strict=True)

    name: str = Field(description="which GEMM of the layer, e.g. 'qkv', 'mlp-up'")
    tokens: int = Field(gt=0, description="b·s, the rows of the activation matrix")
    m: int = Field(gt=0)
    n: int = Field(gt=0)
    k: int = Field(gt=0)
    flops: float = Field(gt=0, description="2·m·n·k floating-point operations")
    time_s: float = Field(gt=0, description="median time over trials, seconds")
    p99_time_s: float = Field(gt=0, description="99th percentile time, seconds")
    trials: int = Field(ge=1)
    flops_per_s: float = Field(gt=0, description="flops / time_s")


class ResultFile(BaseModel):
    """The common envelope of every bench result file."""

    model_config = ConfigDict(extra="allow")

    schema_: str = Field(SCHEMA, alias="schema")
    theme: str
    created: str
    hardware: dict[str, Any]
    versions: dict[str, Any]
    backend: str | None = None
    world_size: int = 1
    config: dict[str, Any]
    results: list[dict[str, Any]]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware_info(device: str = "cpu") -> dict[str, Any]:
    """Describe the machine: host, CPU model and count, and the GPU (name, memory) when ``device`` is CUDA."""
    info: dict[str, Any] = {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "device": device,
    }
    if device.startswith("cuda"):
        import torch

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        info.update(gpu=props.name, gpu_memory_bytes=int(props.total_memory), gpu_count=torch.cuda.device_count())
    return info


def versions_info(backend: str | None = None) -> dict[str, Any]:
    """Versions of python, torch, CUDA and NCCL (where present) and distcalc itself."""
    import distcalc

    info: dict[str, Any] = {"python": platform.python_version(), "distcalc": distcalc.__version__}
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        if backend == "nccl" and torch.cuda.is_available():
            info["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except ImportError:
        pass
    return info


def hardware_tag(hardware: dict[str, Any]) -> str:
    """``<host>-<device>``: the host name and ``cpu`` or the GPU model, slugged for a file name."""
    device = hardware.get("gpu") if str(hardware.get("device", "cpu")).startswith("cuda") else "cpu"
    return f"{_slug(str(hardware.get('host', 'host')))}-{_slug(str(device))}"


def default_filename(theme: str, hardware: dict[str, Any], when: _dt.date | None = None) -> str:
    """``bench-<theme>-<hardware tag>-<yyyymmdd>.json``."""
    day = (when or _dt.date.today()).strftime("%Y%m%d")
    return f"bench-{theme}-{hardware_tag(hardware)}-{day}.json"


def make_result_file(
    theme: str,
    results: list[dict[str, Any]],
    config: dict[str, Any],
    *,
    backend: str | None,
    world_size: int,
    device: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the envelope (hardware, versions, configuration) around ``results``."""
    payload: dict[str, Any] = {
        "schema": SCHEMA,
        "theme": theme,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hardware": hardware_info(device),
        "versions": versions_info(backend),
        "backend": backend,
        "world_size": world_size,
        "config": config,
        "results": results,
    }
    payload.update(extra or {})
    return payload


def result_path(theme: str, output: str | Path | None) -> Path:
    """Where a result file goes, checked before the run (:func:`distcalc.outputs.check_output_path`):
    ``output``, or :func:`default_filename` in the current folder. Folders are never created."""
    from distcalc.outputs import JSON_SUFFIXES, check_output_path

    chosen = output if output else default_filename(theme, {"host": socket.gethostname(), "device": "cpu"})
    return check_output_path(chosen, "--output", JSON_SUFFIXES, BenchError)


def write_result_file(payload: dict[str, Any], output: str | Path | None = None) -> Path:
    """Write ``payload`` to ``output`` (default: :func:`default_filename` in the current directory)."""
    from distcalc.outputs import write_text

    path = Path(output) if output else Path(default_filename(payload["theme"], payload["hardware"]))
    path = result_path(payload["theme"], path)
    return write_text(path, json.dumps(payload, indent=2) + "\n", "--output", BenchError)


ROW_MODELS: dict[str, type[BaseModel]] = {"collectives": CollectiveRow, "gemm": GemmRow}


def _validation_message(path: str | Path, error: ValidationError, prefix: str = "") -> str:
    first = error.errors()[0]
    where = prefix + ".".join(str(x) for x in first.get("loc", ()))
    return (f"results file {excerpt(str(path), PATH_CHARS)} is not a distcalc bench file: field {where}: "
            f"{first['msg']} (got {excerpt(first.get('input'))})")


def load_result_file(path: str | Path) -> ResultFile:
    """Read and validate a result file (size cap, strict JSON, envelope and every row of a collectives or
    gemm sweep: positive finite times, sizes and rates); :class:`BenchError` names the file and the field."""
    data = read_data_file(path, "results file", error=BenchError, json_only=True)
    try:
        parsed = ResultFile.model_validate(data)
    except ValidationError as error:
        raise BenchError(_validation_message(path, error)) from None
    if parsed.theme not in THEMES:
        raise BenchError(f"results file {excerpt(str(path), PATH_CHARS)} has theme {excerpt(parsed.theme)}; "
                         f"valid: {', '.join(THEMES)}")
    row_model = ROW_MODELS.get(parsed.theme)
    for index, row in enumerate(parsed.results if row_model else []):
        try:
            row_model.model_validate(row)  # type: ignore[union-attr]
        except ValidationError as error:
            raise BenchError(_validation_message(path, error, f"results[{index}].")) from None
    return parsed
