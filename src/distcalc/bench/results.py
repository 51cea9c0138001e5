"""Writing the result files of ``distcalc bench``: the hardware/version record, naming and the envelope.

The file format (envelope and rows) is :mod:`distcalc.measurements`, which calibration reads.
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
from typing import Any

from distcalc.errors import BenchError
from distcalc.measurements import SCHEMA


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
