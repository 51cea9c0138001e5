"""The GPU compute presets (``presets/compute.yaml``): reading one GPU's entry and the per-dtype figures
:func:`distcalc.compute.device.load_device` builds a :class:`~distcalc.compute.device.DeviceCompute` from —
the dense peak FLOP/s of a training dtype, the measured power-limited rate, the fused-attention kernel a
preset names for its dropout overhead, and the optional measured rates.

Pure look-ups of the shipped table; the kernel time models that use them are in :mod:`distcalc.compute.device`
(where each preset field is explained and cited).
"""

from __future__ import annotations

import functools
from enum import Enum
from typing import Any

from distcalc.errors import ConfigError
from distcalc.precision import Precision
from distcalc.preset_files import read_presets


@functools.lru_cache(maxsize=1)
def _load_table() -> dict[str, Any]:
    return read_presets("compute.yaml")


def compute_preset_entry(name: str) -> dict[str, Any]:
    """The ``presets/compute.yaml`` entry of a GPU preset ({} when it has none)."""
    return dict(_load_table()["gpus"].get(name) or {})


def compute_preset_names() -> list[str]:
    """GPU names with compute-efficiency presets."""
    return sorted(_load_table()["gpus"])


class DropoutKernel(str, Enum):
    """The fused attention kernel whose in-kernel dropout overhead a GPU preset takes (``compute.yaml``
    ``attention_dropout_kernel``: what TransformerEngine's ``DotProductAttention`` runs on it by default; the
    overheads and their measurements are in :mod:`distcalc.compute.attention`)."""

    FLASH2 = "flash2"
    CUDNN_SM90 = "cudnn-sm90"
    CUDNN_SM100 = "cudnn-sm100"


def parse_dropout_kernel(name: str, value: Any) -> DropoutKernel | None:
    """The :class:`DropoutKernel` that preset ``name`` gives as ``value`` (None where it gives none);
    a kernel without a measured overhead is refused."""
    if value is None:
        return None
    try:
        return DropoutKernel(value)
    except ValueError:
        raise ConfigError(f"compute preset {name!r}: attention_dropout_kernel {value!r} is not valid; valid: "
                          f"{', '.join(k.value for k in DropoutKernel)}") from None


def dropout_kernel(name: str) -> DropoutKernel | None:
    """The ``attention_dropout_kernel`` of GPU preset ``name`` (None where it has none: not measured)."""
    return parse_dropout_kernel(name, compute_preset_entry(name).get("attention_dropout_kernel"))


def optional_float(entry: dict[str, Any], key: str) -> float | None:
    """``entry[key]`` as a float, None where the preset does not give it."""
    value = entry.get(key)
    return None if value is None else float(value)


def power_limit(entry: dict[str, Any], dtype: Any) -> float:
    """Measured sustained FLOP/s for ``dtype`` (fp16 shares bf16's tensor-core rate); inf where unmeasured."""
    limits = entry.get("power_limited_flops_per_s") or {}
    key = str(getattr(dtype, "value", dtype)).lower()
    value = limits.get(key, limits.get("bf16") if key == "fp16" else None)
    return float(value) if value is not None else float("inf")


def training_precision(dtype: Any) -> Precision:
    """The :class:`~distcalc.precision.Precision` of a dtype name (a training precision; others are refused)."""
    try:
        return Precision(str(getattr(dtype, "value", dtype)).lower())
    except ValueError:
        raise ConfigError(f"dtype {dtype!r} is not a training precision; valid: "
                          f"{', '.join(p.value for p in Precision)}") from None


def peak_for_dtype(gpu: Any, dtype: str) -> float:
    """The dense tensor-core peak FLOP/s of ``gpu`` (a :class:`distcalc.hardware.GpuSpec`) for ``dtype``."""
    peaks = gpu.peak_flops_per_s
    key = getattr(dtype, "value", dtype)
    if isinstance(peaks, dict):
        for candidate in (key, str(key).lower()):
            if candidate in peaks:
                return float(peaks[candidate])
        raise ConfigError(f"GPU {gpu.name!r} has no peak FLOP/s for dtype {key!r}; known: {', '.join(peaks)}")
    return float(peaks)
