"""Accelerator specifications (memory, HBM bandwidth, dense peak FLOP/s per dtype) and their presets.

Presets live in ``presets/gpus.yaml``; each number there cites its datasheet. Peak FLOP/s are dense
(no structured sparsity). Sizes are bytes, rates bytes/s, FLOP/s per second (docs/design.md §2).
"""

from __future__ import annotations

from enum import Enum
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from distcalc.errors import ConfigError
from distcalc.preset_files import preset_entry, preset_names
from distcalc.units import parse_rate, parse_size


class GpuSpec(BaseModel):
    """One accelerator: memory capacity, HBM bandwidth and dense peak FLOP/s per dtype."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="preset name, e.g. h100-sxm")
    description: str = Field("", description="marketing name")
    memory_bytes: int = Field(gt=0, description="HBM capacity in bytes")
    hbm_bandwidth_bytes_per_s: float = Field(gt=0, description="HBM bandwidth in bytes/s")
    peak_flops_per_s: dict[str, float] = Field(description="dense peak FLOP/s by dtype (bf16, fp16, fp8, fp32, tf32)")
    source: str = Field("", description="datasheet the numbers come from")

    def peak_flops(self, dtype: str | Enum) -> float:
        """Dense peak FLOP/s for ``dtype``; :class:`ConfigError` naming the dtypes this device has."""
        key = str(dtype.value if isinstance(dtype, Enum) else dtype).lower()
        if key not in self.peak_flops_per_s:
            raise ConfigError(
                f"gpu {self.name!r} has no published dense peak for dtype {key!r}; "
                f"available: {', '.join(self.peak_flops_per_s)}"
            )
        return self.peak_flops_per_s[key]


def list_gpus() -> tuple[str, ...]:
    """Names of the shipped accelerator presets."""
    return preset_names("gpus.yaml")


@lru_cache(maxsize=None)
def load_gpu(name: str) -> GpuSpec:
    """The accelerator preset ``name`` (case-insensitive); :class:`ConfigError` listing valid names."""
    key, entry = preset_entry("gpus.yaml", "gpu", name)
    return GpuSpec(
        name=key,
        description=entry.get("description", ""),
        memory_bytes=parse_size(entry["memory"]),
        hbm_bandwidth_bytes_per_s=parse_rate(entry["hbm_bandwidth"]),
        peak_flops_per_s={k: float(v) for k, v in entry["peak_flops_per_s"].items()},
        source=entry.get("source", ""),
    )
