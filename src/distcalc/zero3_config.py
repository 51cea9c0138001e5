"""Which framework runs ZeRO-3, and DeepSpeed ZeRO-3's own knobs (sizes in elements, DeepSpeed's defaults).

The settings alone (no NumPy), for the command line's options and the request models; what they imply for the
parameters gathered, kept and bucketed is :mod:`distcalc.deepspeed_zero3`'s.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class Zero3Impl(str, Enum):
    """Which framework's ZeRO-3 the step-time model follows: PyTorch FSDP / Megatron-FSDP (one gather and one
    reduce-scatter per block, :mod:`distcalc.analyze.fsdp`) or DeepSpeed (:class:`DeepSpeedZero3`)."""

    FSDP = "fsdp"
    DEEPSPEED = "deepspeed"


class DeepSpeedZero3(BaseModel):
    """DeepSpeed ZeRO-3's own knobs, in parameter elements, defaults as in DeepSpeed v0.16.5
    ``deepspeed/runtime/zero/config.py`` (``DeepSpeedZeroConfig``) and its docs (deepspeed.ai/docs/config-json,
    "ZeRO optimizations for FP16 training"). ``defer_build``: its validator is built when a run first asks for
    DeepSpeed, not when the command line reads the defaults (:data:`DEFAULTS`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    prefetch_bucket_elements: int = Field(50_000_000, ge=0, description="stage3_prefetch_bucket_size: elements "
                                          "prefetched per fetch (default 5e7)")
    max_live_parameters: int = Field(1_000_000_000, ge=0, description="stage3_max_live_parameters: gathered or "
                                     "in-flight elements that bound prefetching (default 1e9)")
    max_reuse_distance_elements: int = Field(1_000_000_000, ge=0, description="stage3_max_reuse_distance: a "
                                             "parameter reused within this many trace elements is kept (1e9)")
    reduce_bucket_elements: int = Field(500_000_000, ge=1, description="reduce_bucket_size: gradient elements "
                                        "per ReduceScatter bucket (default 5e8)")
    param_persistence_threshold_elements: int = Field(100_000, ge=0, description="stage3_param_persistence_"
                                                      "threshold: smaller parameters are never partitioned (1e5)")
    overlap_comm: bool = Field(True, description="gradient ReduceScatter on a side stream (ZeRO-3 default: on)")
    contiguous_gradients: bool = Field(True, description="copy gradients into the flat IPG bucket (default on)")


#: DeepSpeed's defaults, the fields' own (not validated: building the validator is left to the first run that
#: asks for DeepSpeed).
DEFAULTS = DeepSpeedZero3.model_construct()
