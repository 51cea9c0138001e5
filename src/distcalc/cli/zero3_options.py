"""CLI options that choose how ZeRO-3 runs (``--zero3-impl``, DeepSpeed's ZeRO-3 sizes), shared by
``analyze`` and ``memory``; fields of :class:`distcalc.jobs.zero3.Zero3Fields`."""

from __future__ import annotations

from typing import Annotated

import typer

from distcalc.zero3_config import DEFAULTS, Zero3Impl

_PANEL = "ZeRO-3 implementation"
#: DeepSpeed's own defaults, the options' defaults (one definition: :class:`DeepSpeedZero3`'s fields)
DS_DEFAULTS = DEFAULTS

FsdpShardSizeOption = Annotated[int, typer.Option(
    min=0, rich_help_panel=_PANEL, help="HSDP: shard ZeRO-3 over groups of this many DP ranks and replicate across "
                                       "them (FSDP1 HYBRID_SHARD: GPUs per node); 0: FULL_SHARD")]
Zero3ImplOption = Annotated[Zero3Impl, typer.Option(
    rich_help_panel=_PANEL, help="ZeRO-3 as fsdp (PyTorch FSDP / Megatron-FSDP: one gather and reduce-scatter per "
                                 "block) or deepspeed runs it (per-submodule gathers, its prefetch, release and "
                                 "bucket sizes: --ds-*; needs pp=1)")]
DsPrefetchBucketOption = Annotated[float, typer.Option(
    min=0, rich_help_panel=_PANEL, help="DeepSpeed stage3_prefetch_bucket_size, elements")]
DsMaxLiveOption = Annotated[float, typer.Option(
    min=0, rich_help_panel=_PANEL, help="DeepSpeed stage3_max_live_parameters, elements")]
DsReuseDistanceOption = Annotated[float, typer.Option(
    min=0, rich_help_panel=_PANEL, help="DeepSpeed stage3_max_reuse_distance, elements")]
DsReduceBucketOption = Annotated[float, typer.Option(
    min=1, rich_help_panel=_PANEL, help="DeepSpeed reduce_bucket_size, elements")]
DsPersistenceOption = Annotated[float, typer.Option(
    min=0, rich_help_panel=_PANEL, help="DeepSpeed stage3_param_persistence_threshold, elements")]
DsOverlapCommOption = Annotated[bool, typer.Option(rich_help_panel=_PANEL, help="DeepSpeed overlap_comm")]
DsContiguousOption = Annotated[bool, typer.Option(rich_help_panel=_PANEL, help="DeepSpeed contiguous_gradients")]
