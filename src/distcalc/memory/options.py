"""User-settable memory-model options, with their defaults stated."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from distcalc.zero3_config import DeepSpeedZero3
from distcalc.memory.states import Recipe
from distcalc.memory.te_dummy_wgrad import DummyWgrad
from distcalc.software import ContextParallelAlgorithm
from distcalc.units import MIB


class MemoryOptions(BaseModel):
    """Options of the memory model beyond the parallel configuration.

    Defaults and why:

    * ``recipe`` ``mixed``: 2 + 4 + 4 + 8 = 18 bytes per parameter (Megatron-LM default, Korthikanti et al.).
    * ``comm_buffer_bytes`` 512 MiB per GPU: NCCL communicator buffers. NCCL allocates ``NCCL_BUFFSIZE``
      (default 4 MiB) per channel per peer connection (NCCL docs, Environment Variables); a GPU in TP, DP and
      PP communicators with up to 32 channels on NVLink holds a few hundred MiB. Stated assumption, not measured.
    * ``cuda_context_bytes`` 512 MiB per GPU: CUDA context, cuBLAS/cuDNN workspaces and kernels loaded
      (outside PyTorch's allocator; a few hundred MiB on A100/H100 with lazy loading). Stated assumption.
    * ``allocator_reserve_fraction`` 0.05: memory the PyTorch caching allocator reserves but cannot hand
      out (fragmentation; ``torch.cuda.memory_reserved()`` − ``memory_allocated()``), as a fraction of
      everything else. Stated assumption.
    * ``zero3_prefetch_layers`` 1: under ZeRO-3 the weights of this many layers are all-gathered in full
      (16-bit) at a time, on top of the shards.
    * ``step_buffer_bytes_per_parameter`` 0 and ``step_bucket_bytes`` 0: tensors an optimizer step allocates
      after the pipeline has freed its activations — per parameter of this GPU's optimizer shard, and one
      gradient bucket. The caching allocator cannot serve them from the freed activation blocks when they are
      larger, so they add segments to the reserved pool (reserved and device bases; on the allocated basis they
      count against the model states alone). DeepSpeed's ZeRO-1/2 optimizer:
      :func:`distcalc.memory.stacks.stack_memory_options`.
    * ``zero_shard_size`` 0: ZeRO-3 shards the model states over the whole dp·cp group; k > 1 is HSDP (shard
      within groups of k ranks, replicate across them; :mod:`distcalc.analyze.hsdp`): ZeRO-3 states divide by k.
    * ``deepspeed_zero3`` None: ZeRO-3 buffers as FSDP holds them (``zero3_prefetch_layers``). A
      :class:`distcalc.deepspeed_zero3.DeepSpeedZero3` replaces them with DeepSpeed's: parameters gathered up to
      ``stage3_max_live_parameters`` (at least the blocks kept for backward and the block being computed), the
      contiguous IPG bucket and one flattened ReduceScatter bucket, and the persistent parameters held whole
      (:func:`distcalc.deepspeed_zero3.stage_buffer_bytes`), in the buffers line.
    * ``attention_score_buffer`` False: the stack's non-flash attention computes its raw scores into a
      persistent per-process buffer (Megatron-LM's ``GlobalMemoryBuffer``,
      :func:`distcalc.memory.activations.attention_score_buffer_bytes`), held on top of the activations
      whenever flash attention is off; stacks that allocate the scores per call free them within the layer.
    * ``te_dummy_wgrad`` ``none``: Transformer Engine 2.3+ with gradient-accumulation fusion keeps one cached
      16-bit dummy weight gradient per distinct weight shape of its linears for the life of the process
      (:mod:`distcalc.memory.te_dummy_wgrad`); ``linear`` (TE 2.3–2.9) or ``linear-and-grouped`` (2.10+, MoE
      experts too) adds them as a persistent line.
    * ``moe_token_factor`` 1.0: balanced routing (analyze passes its capacity factor or load imbalance:
      :func:`distcalc.analyze.options.moe_slot_factor`).
    * ``cp_algorithm`` ``ring``: how context parallelism exchanges K,V; PyTorch's ring (``torch-allgather``,
      ``torch-alltoall``) holds its rotated K,V and FP32 gradient buffers during a layer's attention
      (:mod:`distcalc.memory.torch_cp`), in the buffers line; the other algorithms add no buffer here.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: Recipe = Field(Recipe.MIXED, description="precision recipe for model states")
    comm_buffer_bytes: int = Field(512 * MIB, ge=0, description="NCCL communication buffers per GPU, bytes")
    cuda_context_bytes: int = Field(512 * MIB, ge=0, description="CUDA context and library workspaces, bytes")
    allocator_reserve_fraction: float = Field(0.05, ge=0, lt=1, description="allocator fragmentation reserve")
    zero3_prefetch_layers: int = Field(1, ge=0, description="layers all-gathered at once under ZeRO-3")
    step_buffer_bytes_per_parameter: float = Field(0.0, ge=0, description="bytes per optimizer-shard parameter "
                                                   "allocated by the optimizer step")
    step_bucket_bytes: int = Field(0, ge=0, description="gradient bucket allocated at the optimizer step, bytes")
    zero_shard_size: int = Field(0, ge=0, description="HSDP: ZeRO-3 states sharded over groups of this many DP "
                                 "ranks (0: the whole dp·cp group)")
    deepspeed_zero3: DeepSpeedZero3 | None = Field(None, description="ZeRO-3 buffers as DeepSpeed holds them "
                                                   "(None: zero3_prefetch_layers gathered layers)")
    attention_score_buffer: bool = Field(False, description="non-flash attention scores in a persistent "
                                         "global buffer (Megatron-LM GlobalMemoryBuffer)")
    te_dummy_wgrad: DummyWgrad = Field(DummyWgrad.NONE, description="Transformer Engine's cached dummy weight "
                                       "gradients (one per distinct linear weight shape)")
    moe_token_factor: float = Field(1.0, gt=0, le=64, description="MoE routed slots of the busiest EP rank per "
                                    "mean routed token (capacity factor, or dropless load imbalance)")
    cp_algorithm: ContextParallelAlgorithm = Field(ContextParallelAlgorithm.RING, description="context-parallel "
                                                   "algorithm (PyTorch's holds K,V and FP32 gradient buffers)")
