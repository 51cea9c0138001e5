"""The fields of a parallel training configuration: names, types, units, defaults, bounds and descriptions,
written once.

:class:`~distcalc.parallel.ParallelConfig` adds the resolution of the derived defaults and the validity rules
(NumPy predicates, :mod:`distcalc.parallel_rules`); the command line's options
(:mod:`distcalc.cli.config_options`) and the run file's defaults (:mod:`distcalc.run_file`) are derived from
these fields. This module does not import NumPy, so ``distcalc analyze --help`` does not pay for it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from distcalc.errors import ConfigError
from distcalc.modes import Recompute, Schedule
from distcalc.precision import Precision


def require_positive(**degrees: Any) -> None:
    """Refuse the first degree (or count) below 1, naming it: ``pp(0) must be >= 1``."""
    for name, value in degrees.items():
        if value is not None and int(value) < 1:
            raise ConfigError(f"{name}({value}) must be >= 1")


class ParallelFields(BaseModel):
    """The fields of :class:`~distcalc.parallel.ParallelConfig` (degrees, ZeRO, recomputation, schedule, batch,
    precision), each with its unit and description; ``derived_default`` names a default that depends on
    other fields. Never validated itself (``defer_build``: no validator is built for it), so that reading
    the fields costs no schema generation; :class:`~distcalc.parallel.ParallelConfig` builds its own."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False, defer_build=True)

    gpus: int | None = Field(None, gt=0, description="total GPUs",
                              json_schema_extra={"derived_default": "tp·pp·cp·dp"})
    tp: int = Field(1, gt=0, description="tensor-parallel degree (GPUs)")
    pp: int = Field(1, gt=0, description="pipeline-parallel degree (stages)")
    dp: int | None = Field(None, gt=0, description="data-parallel degree (GPUs)",
                            json_schema_extra={"derived_default": "gpus/(tp·pp·cp)"})
    cp: int = Field(1, gt=0, description="context-parallel degree (GPUs splitting the sequence for attention)")
    ep: int = Field(1, gt=0, description="expert-parallel degree (GPUs; divides dp·cp)")
    vpp: int = Field(1, gt=0, description="interleaved model chunks per pipeline stage")
    zero: int = Field(0, ge=0, le=3,
                      description="ZeRO stage over the dp·cp group: 0, 1 (optimizer), 2 (+grads), 3 (+params)")
    distributed_optimizer: bool = Field(False, description="Megatron distributed optimizer (= ZeRO-1 sharding)")
    sequence_parallel: bool = Field(False, description="Megatron sequence parallelism in the TP group")
    recompute: Recompute = Field(Recompute.NONE, description="activation recomputation")
    micro_batch: int = Field(1, gt=0, description="sequences per micro-batch (b)")
    global_batch: int | None = Field(None, gt=0, description="sequences per optimizer step",
                                      json_schema_extra={"derived_default": "micro-batch·dp·2pp"})
    seq_len: int = Field(4096, gt=0, description="tokens per sequence (s)")
    schedule: Schedule | None = Field(None, description="pipeline schedule", json_schema_extra={
        "derived_default": "interleaved when vpp > 1, else 1f1b"})
    dtype: Precision = Field(Precision.BF16, description="compute precision")
    flash_attention: bool = Field(True, description="fused attention that never stores the s×s scores")
    account_for_embedding_and_loss: bool = Field(
        False, description="the embedding and the output layer + loss each take one layer's slot in the pipeline "
                           "split: the first and the last stage hold one transformer layer fewer (Megatron-Core "
                           "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split; "
                           "Llama 3 405B: 126 layers on pp 16)")
    first_stage_layers: int | None = Field(
        None, gt=0, description="transformer layers on the first pipeline stage (vpp 1; Megatron-Core "
                                "--decoder-first-pipeline-num-layers); the other stages share the rest evenly")
    last_stage_layers: int | None = Field(
        None, gt=0, description="transformer layers on the last pipeline stage (Megatron-Core "
                                "--decoder-last-pipeline-num-layers; DeepSeek-V3: 61 layers on pp 16 as "
                                "4 + 14×4 + 1)")
