"""Request fields that choose how ZeRO-3 runs (``--zero3-impl`` and DeepSpeed's ZeRO-3 sizes), shared by the
analyze and memory requests."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from distcalc.zero3_config import DeepSpeedZero3, Zero3Impl
from distcalc.errors import ConfigError


class Zero3Fields(BaseModel):
    """``zero3_impl`` and the ``ds_*`` sizes (elements; DeepSpeed v0.16.5 defaults, :class:`DeepSpeedZero3`)."""

    model_config = ConfigDict(defer_build=True)  # a mixin of the request models, never validated itself

    zero3_impl: Zero3Impl = Field(Zero3Impl.FSDP, description="ZeRO-3 as fsdp (per block) or deepspeed runs it")
    ds_prefetch_bucket_size: float = Field(5e7, ge=0, description="DeepSpeed stage3_prefetch_bucket_size (elements)")
    ds_max_live_parameters: float = Field(1e9, ge=0, description="DeepSpeed stage3_max_live_parameters (elements)")
    ds_max_reuse_distance: float = Field(1e9, ge=0, description="DeepSpeed stage3_max_reuse_distance (elements)")
    ds_reduce_bucket_size: float = Field(5e8, ge=1, description="DeepSpeed reduce_bucket_size (elements)")
    ds_param_persistence_threshold: float = Field(1e5, ge=0, description="DeepSpeed stage3_param_persistence_"
                                                  "threshold (elements)")
    ds_overlap_comm: bool = Field(True, description="DeepSpeed overlap_comm")
    ds_contiguous_gradients: bool = Field(True, description="DeepSpeed contiguous_gradients")

    def deepspeed_zero3(self, pp: int) -> DeepSpeedZero3 | None:
        """The DeepSpeed ZeRO-3 configuration of ``--zero3-impl deepspeed`` (None for FSDP); DeepSpeed runs
        ZeRO-3 without pipeline parallelism (``deepspeed/runtime/pipe/engine.py``: "ZeRO-2 and ZeRO-3 are
        incompatible with pipeline parallelism")."""
        if self.zero3_impl is not Zero3Impl.DEEPSPEED:
            return None
        if pp > 1:
            raise ConfigError(f"--zero3-impl deepspeed needs pp=1 (pp={pp}): DeepSpeed ZeRO-3 is incompatible "
                              "with pipeline parallelism")
        return DeepSpeedZero3(prefetch_bucket_elements=int(self.ds_prefetch_bucket_size),
                              max_live_parameters=int(self.ds_max_live_parameters),
                              max_reuse_distance_elements=int(self.ds_max_reuse_distance),
                              reduce_bucket_elements=max(int(self.ds_reduce_bucket_size), 1),
                              param_persistence_threshold_elements=int(self.ds_param_persistence_threshold),
                              overlap_comm=self.ds_overlap_comm, contiguous_gradients=self.ds_contiguous_gradients)
