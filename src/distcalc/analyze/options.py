"""Options of the step-time model beyond the parallel configuration, with their defaults and reasons."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from distcalc.analyze.contention import OVERLAP_COMPUTE_SLOWDOWN
from distcalc.calibration import Calibration
from distcalc.software import (AttentionKernel, ContextParallelAlgorithm, CrossEntropyKernel, ElementwiseKernels,
                               FsdpSharding, MainGradDtype)
from distcalc.zero3_config import DeepSpeedZero3
from distcalc.variability import DEFAULT_GPU_SPEED_CV


#: HBM bytes per parameter of one PyTorch ``torch.optim.AdamW`` step in its default ``foreach``
#: implementation (``_multi_tensor_adamw``, capturable off; PyTorch 2.2-2.4 ``torch/optim/adamw.py``) on fp32
#: parameters, gradients and states, each ``_foreach_*`` op reading and writing whole tensors: weight decay
#: ``mul_(p)`` 8, ``lerp_(m, g)`` 12, ``mul_(v)`` 8, ``addcmul_(v, g, g)`` 16, ``sqrt(v)`` 8, ``div_`` 8,
#: ``add_(eps)`` 8, ``addcdiv_(p, m, denom)`` 16 = 84; plus ``clip_grad_norm_`` (``_foreach_norm`` reads g: 4;
#: ``_foreach_mul_`` scales g: 8) = 96. Gradients are freed, not zeroed (``zero_grad(set_to_none=True)``, the
#: default since PyTorch 2.0), so a PyTorch-native stack also has no gradient-buffer zeroing.
TORCH_FOREACH_ADAMW_BYTES_PER_PARAMETER = 96.0


class AnalyzeOptions(BaseModel):
    """Software behaviour the step time depends on. Defaults describe Megatron-LM (Megatron-Core) runs:

    * ``rank_order`` ``tp-cp-dp-pp``: Megatron's rank layout, TP innermost (docs/design.md §5).
    * ``overlap_grad_reduce`` True: gradient ReduceScatter/AllReduce overlapped with the backward pass of the
      last micro-batch (Megatron-Core ``--overlap-grad-reduce``); ``overlap_param_gather`` True: the
      distributed optimizer's parameter AllGather overlapped with the next forward. Set both False for
      2022-era Megatron-LM (``train_step`` all-reduces gradients after the backward pass).
    * ``tp_overlap_efficiency`` 0: fraction of the *overlappable* backward TP collectives (see
      :mod:`distcalc.traffic`) actually hidden behind GEMMs. Without TransformerEngine userbuffers
      (``--tp-comm-overlap``) NCCL kernels compete with the GEMMs for SMs and HBM bandwidth; Korthikanti et
      al. 2022 Table 4 shows the backward pass paying for most of its TP collectives (11.9 ms backward vs 7.7 ms
      forward for 2× the FLOPs), so nothing is hidden by default; the part NCCL's asynchronous launch does
      hide is ``tp_async_backward``.
    * ``tp_comm_overlap`` False: TransformerEngine userbuffers (Megatron-Core / NeMo ``--tp-comm-overlap``)
      pair each of a sequence-parallel layer's ten TP collectives with one GEMM (ring exchange, pipeline or bulk)
      and take 1 or 16 SMs from it meanwhile (:mod:`distcalc.analyze.tp_overlap`); replaces ``tp_overlap_efficiency`` for
      dense sequence-parallel layers.
    * ``tp_async_backward`` True: the backward TP collectives that have a GEMM of their own layer to run beside
      (input-gradient AllReduce; with SP the input re-gather and the input-gradient ReduceScatter) are launched
      asynchronously through NCCL, as Megatron-Core's ``ColumnParallelLinear`` does by default
      (``allreduce_dgrad = world_size > 1 and not sequence_parallel``; with SP the ``async_op=True`` gather and
      reduce-scatter of ``LinearWithGradAccumulationAndAsyncCommunication``) and TransformerEngine's linears do:
      39 % of their time hidden, the rest paid as slower GEMMs (:mod:`distcalc.analyze.tp_async`, from Lee et al.
      2025's averages). False describes synchronous stacks (Megatron-LM's SC21 code, Megatron-DeepSpeed).
    * ``grad_reduce_bytes`` 4: Megatron-LM keeps fp32 ``main_grad`` buffers and reduces them in fp32 for
      bf16 training (``arguments.py``: bf16 ⇒ ``accumulate_allreduce_grads_in_fp32``); 2 for bf16 reduction.
    * ``optimizer_bytes_per_parameter`` 38: HBM traffic of one mixed-precision Adam step per parameter held
      by this rank's optimizer (apex/TE multi-tensor kernels): gradient-norm read 4, Adam read g, p, m, v
      16 and write p, m, v 12, fp32→16-bit parameter copy 4 + 2.
    * ``grad_buffer_zero_bytes_per_parameter`` 4: Megatron-Core zeroes the WHOLE fp32 ``main_grad`` buffer
      of every local parameter each step (``DistributedDataParallel.zero_grad_buffer`` →
      ``_ParamAndGradBuffer.reset`` → ``grad_data.zero_()``), also under the distributed optimizer, whose
      shard covers only 1/d of it; charged on every parameter the rank holds, not on its optimizer shard.
    * ``grad_check_bytes_per_parameter`` 0: Megatron-Core checks every gradient bucket for NaN/Inf before the
      DP collective (``check_for_nan_in_grad``, on by default: ``--no-check-for-nan-in-loss-and-grad`` turns it
      off; ``_ParamAndGradBucketGroup.check_grads`` computes ``bucket.grad_data.norm(p=2)``): 4 B (read the
      fp32 ``main_grad``) per parameter of the local gradient buffer each step. 0 describes a stack without it.
    * ``grad_prescale_bytes_per_parameter`` 0: Megatron-Core scales the gradients by 1/(DP·CP) before summing
      them (``start_grad_sync``: ``bucket.grad_data *= bucket.gradient_scaling_factor`` unless
      ``--ddp-average-in-collective``): 8 B (read + write fp32) per parameter of the local gradient buffer
      each step, only where the DP·CP group has more than one rank (the factor is 1 otherwise).
    * ``cross_entropy`` ``unfused``: Megatron-Core's vocab-parallel cross-entropy; ``native-fused`` /
      ``te-fused``: ``--cross-entropy-loss-fusion`` with ``--cross-entropy-fusion-impl native`` / ``te``
      (:mod:`distcalc.compute.loss`).
    * ``allreduce_sharded_gradients`` False: with the optimizer states partitioned (ZeRO-1 / distributed
      optimizer), the gradients are reduce-scattered. True describes DeepSpeed's ``BF16_Optimizer``
      (``deepspeed/runtime/bf16_optimizer.py``: ``get_grads_for_reduction`` hands the engine its full fp32
      accumulators to all-reduce, then it all-gathers the updated bf16 parameters): AllReduce + AllGather.
    * ``zero_reduce_to_owners`` False: the ZeRO-1/2 gradient reduction is one ReduceScatter. True describes
      DeepSpeed's ZeRO-1/2 optimizer, which issues one Reduce per partition owner (``average_tensor``): n/(n − 1)
      times the ReduceScatter's time (:mod:`distcalc.analyze.zero_reduce`).
    * ``grad_accumulation_bytes_per_parameter`` 0: HBM bytes per parameter and micro-batch that an optimizer
      moves outside the backward kernels. DeepSpeed's ``BF16_Optimizer`` adds every micro-batch's bf16
      gradients into its fp32 accumulators (``update_hp_grads``: an fp32 copy of the gradient, read 2 + write
      4, then the add, read 4 + 4 + write 4 = 18 B); counted in ``optimizer_s``, m times per step, at the
      optimizer step's bandwidth.
    * ``pipeline_scatter_gather`` True: Megatron sends 1/t of the boundary activation per TP rank and
      all-gathers it over NVLink (Narayanan et al. 2021 §4.1).
    * ``pipeline_p2p_overlap`` False: the schedule's Send/Recv are blocking (Megatron-LM 1F1B), so they sit
      on each micro-batch's critical path.
    * ``overlap_compute_slowdown`` 0.189: fraction by which compute slows while an overlapped collective
      runs beside it (NCCL kernels take SMs and HBM bandwidth; Lee et al. 2025, arXiv:2507.03114, average
      over GPT/Llama layers on A100/H100/MI250/MI210). Applied to the compute every overlapped collective
      hides behind: ZeRO-3/FSDP's per-unit gathers and reduce-scatters (:mod:`distcalc.analyze.fsdp`), the
      DP gradient reduction and parameter gather when overlapped, CP ring attention's K/V passes; 0
      describes free overlap. Not applied to TP userbuffers overlap (its own SM budget, ``tp_overlap_efficiency``)
      nor to pipeline Send/Recv.
    * ``gpu_speed_cv`` 0.0148: coefficient of variation σ of per-GPU compute speed. A synchronous step runs
      its compute at the pace of the slowest of its N GPUs, ``1 + σ·E[max of N standard normals]`` times
      the median GPU's time (:mod:`distcalc.variability`; σ from Sinha et al. 2022's 8 % spread across the
      GPUs of a cluster). 0 describes identical GPUs.
    * ``calibration`` None: a :class:`distcalc.calibration.Calibration` (``distcalc calibrate``). Its
      collective fits replace α and η·B of every measured tier, per collective kind, with no η on top
      (:mod:`distcalc.analyze.comm`); its GEMM fit replaces the device's efficiency curve
      (:func:`distcalc.calibration.calibrated_device`). Not part of the JSON dump of the options (the
      report has its own ``calibration`` summary).
    * ``elementwise_kernels`` ``fused``: Megatron/TE fused kernels; ``eager`` prices the RMSNorm, SwiGLU and
      RoPE of a PyTorch-eager Llama as their composite ops (:class:`ElementwiseKernels`).
    * ``attention_kernel`` ``fused``: the GPU preset's fused attention (cuDNN / FlashAttention-3 class, what
      TransformerEngine selects by default); ``flash2`` the FlashAttention-2 package, which TE runs when cuDNN
      attention is switched off (``NVTE_FUSED_ATTN=0``, NeMo-Framework-Launcher 24.01–24.07;
      :mod:`distcalc.compute.attention`); ``flash1`` FlashAttention 1.x, the flash kernel of stacks older than
      July 2023 (Megatron-LM's ``--use-flash-attn`` at 285068c8), on the GA100 presets.
    * ``fsdp_sharding`` ``flat``: ZeRO-3 gathers into and reduces from flat buffers (Megatron-FSDP);
      ``flat-parameter`` (FSDP1, DeepSpeed ZeRO-3) adds the gradient concatenation into the flat parameter's
      gradient, ``per-parameter`` (FSDP2, torchtitan) its copy-out and copy-in kernels (:class:`FsdpSharding`).
    * ``fsdp_shard_size`` 0: ZeRO-3/FSDP shards over the whole DP group (FSDP ``FULL_SHARD``). k > 1 describes
      HSDP — parameters, gradients and optimizer states sharded over groups of k consecutive DP ranks and
      replicated across the dp/k groups (FSDP1 ``ShardingStrategy.HYBRID_SHARD``: the GPUs of one node; FSDP2
      ``fully_shard`` on a 2-D (replicate, shard) mesh): per-unit AllGather / ReduceScatter in the shard group,
      an AllReduce of each gradient shard over the replicate group beside them, and the optimizer step on
      1/k of the parameters (:mod:`distcalc.analyze.fsdp`). Must divide dp·cp; only ZeRO-3 uses it.
    * ``deepspeed_zero3`` None: ZeRO-3 as PyTorch FSDP / Megatron-FSDP runs it (one gather and reduce-scatter
      per block). A :class:`distcalc.deepspeed_zero3.DeepSpeedZero3` prices it as DeepSpeed runs it instead:
      per-submodule gathers with its prefetch, release (``stage3_max_reuse_distance``) and persistence policy,
      bucketed gradient ReduceScatter and gradient copies (:mod:`distcalc.analyze.deepspeed_zero3`); it
      replaces ``fsdp_sharding``. Not in the JSON dump of the options (the overlaps line names it).
    * ``moe_router_group_limited`` False, ``moe_aux_loss`` False: the router as Megatron-Core runs it by
      default, plain top-k and no auxiliary loss (``--moe-aux-loss-coeff`` defaults to 0). True: the
      group-limited selection (DeepSeek's device/node-limited routing) and the aux / sequence-aux loss add
      their kernels (:func:`distcalc.compute.moe.router_kernel_counts`); the capacity mask's kernels run
      whenever the expert inputs are capacity-bound (``moe_load_imbalance`` None).
    * ``moe_dispatch_probs`` False: the routing probabilities stay on the token's own rank (Megatron-Core up to
      ``core_v0.12``). True: Megatron-Core ``core_v0.13.0`` onward dispatches them to the experts in an AllToAll
      of their own beside the tokens', and their gradients back (:func:`distcalc.traffic.ep_layer_messages`).
    * ``collective_model`` ``alpha-beta``: ``nccl`` prices AllReduce/ReduceScatter/AllGather/Broadcast/Reduce
      with NCCL's own tuning model per group (:mod:`distcalc.analyze.nccl_pricing`); opt-in, excluded from
      the JSON dump so default reports are unchanged.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rank_order: str = Field("tp-cp-dp-pp", description="rank layout, innermost dimension first")
    overlap_grad_reduce: bool = Field(True, description="overlap DP gradient reduction with backward")
    overlap_param_gather: bool = Field(True, description="overlap distributed-optimizer AllGather with forward")
    tp_overlap_efficiency: float = Field(0.0, ge=0, le=1, description="hidden fraction of overlappable TP comm")
    tp_comm_overlap: bool = Field(False, description="TE userbuffers: each SP collective pipelined with its GEMM")
    tp_async_backward: bool = Field(True, description="backward TP collectives run asynchronously (NCCL) beside "
                                    "their GEMMs, partly hidden (Megatron-LM >= 2021-08, TransformerEngine)")
    grad_reduce_bytes: int = Field(4, ge=1, description="bytes per gradient element in DP reduction")
    param_gather_bytes: int = Field(2, ge=1, description="bytes per parameter in ZeRO/dist-opt AllGather")
    optimizer_bytes_per_parameter: float = Field(38.0, ge=0, description="HBM bytes per parameter per step")
    grad_buffer_zero_bytes_per_parameter: float = Field(
        4.0, ge=0, description="HBM bytes per local parameter to zero the gradient buffer each step")
    grad_check_bytes_per_parameter: float = Field(
        0.0, ge=0, description="HBM bytes per local parameter of the NaN check of the gradients before DP sync")
    grad_prescale_bytes_per_parameter: float = Field(
        0.0, ge=0, description="HBM bytes per local parameter of the 1/(DP·CP) gradient scaling before DP sync")
    cross_entropy: CrossEntropyKernel = Field(CrossEntropyKernel.UNFUSED,
                                              description="loss kernels: unfused, native-fused or te-fused")
    allreduce_sharded_gradients: bool = Field(False, description="all-reduce gradients although the optimizer "
                                              "is sharded (DeepSpeed BF16_Optimizer)")
    zero_reduce_to_owners: bool = Field(False, description="ZeRO-1/2 gradients reduced by one Reduce per partition "
                                        "owner (DeepSpeed) instead of one ReduceScatter")
    grad_accumulation_bytes_per_parameter: float = Field(0.0, ge=0, description="HBM bytes per parameter per "
                                                         "micro-batch for gradient accumulation outside backward")
    pipeline_scatter_gather: bool = Field(True, description="Megatron scatter/gather of P2P activations")
    pipeline_p2p_overlap: bool = Field(False, description="P2P hidden behind compute")
    cp_algorithm: ContextParallelAlgorithm = Field(ContextParallelAlgorithm.RING, description="ring, ulysses, "
                                                   "all-gather, torch-allgather or torch-alltoall")
    moe_capacity_factor: float = Field(1.0, gt=0, description="MoE token capacity factor: expert inputs padded "
                                       "to it (AllToAll, expert GEMMs, permute)")
    moe_router_group_limited: bool = Field(False, description="MoE router selects experts within the top "
                                           "groups first (--moe-router-num-groups / --moe-router-group-topk)")
    moe_aux_loss: bool = Field(False, description="MoE auxiliary load-balancing loss computed "
                               "(--moe-aux-loss-coeff > 0)")
    moe_dispatch_probs: bool = Field(False, description="MoE AllToAll dispatcher sends the routing probabilities "
                                     "in an AllToAll of their own (Megatron-Core >= 0.13)")
    moe_load_imbalance: float | None = Field(None, ge=1, description="dropless MoE routing: routed tokens of the "
                                             "busiest EP rank / the mean (None: capacity-bound, padded)")
    distributed_optimizer: bool = Field(False, description="Megatron distributed optimizer (ZeRO-1 sharding)")
    overlap_compute_slowdown: float = Field(OVERLAP_COMPUTE_SLOWDOWN, ge=0, lt=1,
                                            description="compute slowdown while an overlapped collective runs")
    gpu_speed_cv: float = Field(DEFAULT_GPU_SPEED_CV, ge=0, le=0.5,
                                description="σ of per-GPU compute speed (slowest-GPU wait)")
    elementwise_kernels: ElementwiseKernels = Field(ElementwiseKernels.FUSED,
                                                    description="fused (Megatron/TE) or eager (PyTorch) elementwise ops")
    fsdp_sharding: FsdpSharding = Field(FsdpSharding.FLAT, description="ZeRO-3 flat buffers (Megatron-FSDP), "
                                        "FSDP1 flat parameter (gradient concatenation) or per-parameter sharding "
                                        "with copy kernels (FSDP2)")
    fsdp_shard_size: int = Field(0, ge=0, description="HSDP: ZeRO-3 shard group of this many DP ranks, replicated "
                                 "across groups (0: FULL_SHARD over the whole DP group)")
    attention_kernel: AttentionKernel = Field(AttentionKernel.FUSED,
                                              description="fused (cuDNN/FA3-class), flash2 (FlashAttention-2) or "
                                                          "flash1 (FlashAttention 1.x)")
    main_grad_dtype: MainGradDtype = Field(MainGradDtype.FP32, description="main_grad buffer the weight-gradient "
                                           "GEMM accumulates into: fp32, or fp16 (Megatron-LM fp16 without "
                                           "--accumulate-allreduce-grads-in-fp32)")
    deepspeed_zero3: DeepSpeedZero3 | None = Field(None, exclude=True, description="ZeRO-3 as DeepSpeed runs it "
                                                   "(None: per-block FSDP)")
    calibration: Calibration | None = Field(None, exclude=True, description="measured α/B and GEMM efficiency")
    collective_model: str = Field("alpha-beta", exclude=True, pattern="^(alpha-beta|nccl)$",
                                  description="alpha-beta (default) or nccl: NCCL's tuning model prices collectives")


def moe_slot_factor(options: AnalyzeOptions) -> float:
    """Routed token slots of the busiest EP rank per mean routed token: the capacity factor when expert inputs
    are padded to capacity (tokens over it dropped), the load imbalance with dropless routing. Default 1.0:
    balanced, as the published MoE benchmarks run (padded to capacity 1 in SimuMax's B200 runs; Megatron-Bridge's
    performance summary forces balanced routing for its MoE numbers)."""
    return options.moe_capacity_factor if options.moe_load_imbalance is None else options.moe_load_imbalance
