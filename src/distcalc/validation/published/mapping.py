"""How a published run is described to distcalc: model, cluster, parallel configuration and options.

This module is the documentation of how a user describes a real run. Every rule reads a column of the row
(``data/validation/published_runs/README.md`` explains them) and says what it becomes; a row distcalc cannot
express raises :class:`NotExpressible` with the reason, and the harness lists it — nothing is dropped.

Rules, column by column:

* Model: the row's own sizes (hidden, layers, heads, KV heads, head width, FFN, vocab). ``gated_mlp`` true →
  SwiGLU with RMSNorm and no biases (Llama family); false → GELU MLP with LayerNorm and biases (GPT-2/3,
  Megatron GPT, BLOOM). FlagPerf's Megatron script keeps Megatron's defaults (``assumptions`` column: learned
  positions, tied embeddings, biased linears), so a row whose assumptions say "biased linears" gets biases —
  and dropout: the same script (``training/benchmarks/llama3_8B/megatron/pretrain_llama3.sh``) passes no
  ``--hidden-dropout``/``--attention-dropout`` either, so Megatron's defaults (0.1 each, ``arguments.py``) run.
  ``dropout`` true → 0.1 hidden, attention and embedding dropout (Megatron's default; its embedding dropout is
  the hidden dropout, ``language_model.py``). Sources that document keeping Megatron's dropout defaults
  although their rows' ``dropout`` column says false (:data:`MEGATRON_DROPOUT_SOURCES`: BigScience's tr11
  README, "The default Megatron-LM dropout settings are inherited") get the same. MoE rows: ``moe_detail`` is
  parsed for experts, top-k, expert width, shared width, dense layers and MLA ranks.
* Cluster: the GPU preset of ``gpu`` in its usual system (:data:`CLUSTER_OF_GPU`), with the inter-node
  fabric the ``cluster_network`` column names where it differs from that system (:data:`NETWORK_OVERRIDES`).
* Parallel configuration: tp/pp/dp/cp/ep/vpp, micro-batch (printed or the row's ``assumed_micro_batch``),
  global batch, sequence length, recompute (``not printed`` → none: the NeMo/Megatron-Bridge performance
  recipes of these sizes run without recomputation; selective with ``recompute_detail`` "op-level" →
  ``selective-op``, torchtitan's op-level selective AC), sequence parallelism, flash attention (``unknown`` →
  on), ZeRO: ``fsdp`` → ZeRO-3; Megatron's distributed optimizer → ``distributed_optimizer``; DeepSpeed
  ZeRO-1 → ``zero`` 1. The schedule named in ``config_details`` (Zero Bubble rows) or interleaved when
  vpp > 1. "first and last PP stage hold one layer fewer" → ``account_for_embedding_and_loss``.
* Precision: ``fp16``/``bf16``; ``fp8`` with the label the source printed (``FP8-CS`` current scaling and
  delayed scaling → ``fp8``; ``FP8-MX`` → ``mxfp8``; ``NVFP4`` → ``nvfp4``) when distcalc has that dtype.
* Options: ``dp_comm_overlap`` → ``overlap_grad_reduce`` and ``overlap_param_gather``; NeMo's
  ``tp_comm_overlap`` "per recipe" (TransformerEngine userbuffers) → ``tp_comm_overlap`` (each collective
  of a sequence-parallel layer beside its GEMM) and ``tp_overlap_efficiency`` 1 for the rest; NeMo and
  Megatron-Bridge overlap pipeline P2P (``overlap_p2p_comm``) → ``pipeline_p2p_overlap``; "CP comm type
  a2a" (Megatron ``--cp-comm-type a2a``, Ulysses-style) → ``cp_algorithm`` ulysses; torchtitan → PyTorch's ring
  attention with its default AllGather rotater (``torch-allgather``; ``torch-alltoall`` where the row names that
  rotate method); else TransformerEngine's ring attention;
  Megatron-Bridge's performance recipes reduce gradients in bf16 (``grad_reduce_in_fp32`` false): gradient
  buffer, its zeroing and its DP/FSDP collectives at 2 B per element, 16-bit gradients in the model states
  (:mod:`distcalc.validation.published.bridge`, which also says what stays off on those rows).
  NeMo containers 24.01–24.07 → ``attention_kernel`` flash2: NeMo-Framework-Launcher of those releases sets
  ``NVTE_FUSED_ATTN: 0`` for every training job (``launcher_scripts/conf/config.yaml``, "Disable cudnn FA until
  we've tested it more"; added 2024-02-13, in tags 24.01–24.07, removed 2024-08-29 "enable fused attention"),
  so TransformerEngine runs the FlashAttention-2 package instead of cuDNN attention.
  torchtitan and IBM fms-fsdp (the 2024 FSDP blog's runs, before its torch.compile follow-up) →
  ``elementwise_kernels`` eager (PyTorch-eager RMSNorm, SwiGLU and RoPE); the Zero Bubble fork (``framework``
  "sail-sg zero-bubble") → ``elementwise_kernels`` megatron-local: its code asserts ``--transformer-impl local``
  for zero-bubble schedules (``megatron/arguments.py`` at tag zero-bubble-v0.1.0), whose linears add the QKV bias
  and reduce bias gradients in kernels of their own (:mod:`distcalc.compute.layer`); so do all Megatron-LM stacks
  without TransformerEngine (:func:`legacy_megatron`; SC21 code: ``F.linear`` on PyTorch 1.8 adds a 3-D input's
  bias apart; 285068c8: ``output = output + bias``, ``grad_output.sum(dim=0)``). Their fp16 runs reduce fp16
  gradients (``grad_reduce_bytes`` 2: local DDP keeps the parameter dtype unless
  ``--accumulate-allreduce-grads-in-fp32``, which only bf16 forces and the SC21 scripts do not pass; PyTorch DDP
  reduces ``param.grad``); with local DDP (the Zero Bubble fork) the fused weight-gradient GEMMs accumulate into
  that fp16 ``main_grad`` (``main_grad_dtype`` fp16, :func:`~distcalc.validation.published.stack_kernels.main_grad_dtype`).
  Their flash attention predates FlashAttention-2: 1.x (:data:`~distcalc.validation.published.stack_kernels.FLASH1_STACKS`);
  FSDP2 → ``fsdp_sharding`` per-parameter (its AllGather copy-out and ReduceScatter copy-in kernels); FSDP1
  (``config_details`` "FSDP1") → flat-parameter (autograd concatenates each unit's flat gradient); fms-fsdp's
  7B → HSDP within the node (``fsdp_shard_size`` = GPUs per node: fms-fsdp's README benchmark table at the
  blog's date, :mod:`distcalc.validation.published.pytorch_stacks`), its larger models FULL_SHARD; the PyTorch-native loops
  (torchtitan, fms-fsdp) step ``torch.optim.AdamW`` (foreach) after ``clip_grad_norm_`` and free gradients
  instead of zeroing them (``optimizer_bytes_per_parameter`` 96, ``grad_buffer_zero_bytes_per_parameter`` 0);
  "SDPA flash" (torchtitan, IBM fms-fsdp) → ``attention_kernel`` flash2 too: PyTorch SDPA's flash backend is the
  FlashAttention-2 kernel.
  DeepSpeed's ZeRO optimizer (``framework`` Megatron-DeepSpeed, ZeRO 1/2) reduces its 16-bit gradients in
  16 bit (``grad_reduce_bytes`` 2). Megatron-DeepSpeed in bf16 with ZeRO 0 runs DeepSpeed's ``BF16_Optimizer``
  ("ZERO_STAGE=0 # important: bf16 must use z0! it implements its own zero stage 1 equivalent", BigScience
  tr11-176B-ml.slurm): optimizer states partitioned over DP (``zero`` 1), fp32 gradients all-reduced
  (``allreduce_sharded_gradients``) and accumulated into fp32 after every micro-batch
  (:data:`BF16_OPTIMIZER_ACCUMULATION_BYTES`).
* Memory options (:func:`distcalc.memory.stack_memory_options`): DeepSpeed ZeRO-1/2 keeps 16-bit gradients
  (recipe ``mixed-16bit-grads``), its BF16 optimizer bf16 gradients plus fp32 accumulators
  (``deepspeed-bf16``); a stack on CUDA older than 11.7 (:data:`CUDA_OF_SOURCE`) has the eager CUDA context;
  a run that recomputes activations or gathers FSDP/ZeRO-3 units per layer carries GMLake's allocator
  fragmentation (only the reserved and nvidia-smi bases count it); every run holds the NCCL buffers of the
  communicators its TP/CP/DP/PP/EP layout needs on its cluster (:mod:`distcalc.memory.nccl_buffers`: channel
  buffers per communicator, NVLS buffers on NVSwitch-SHARP nodes; only the nvidia-smi basis counts them); a
  stack on Transformer Engine 2.3+ (:data:`TE_OF_SOURCE`) keeps TE's cached dummy weight gradients.

Megatron-DeepSpeed (the BLOOM sweep): :mod:`distcalc.validation.published.deepspeed` says which of its kernels and
passes the rules above price, and what stays off and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from distcalc.analyze import AnalyzeOptions
from distcalc.analyze.optimizer_passes import step_pass_updates
from distcalc.analyze.options import TORCH_FOREACH_ADAMW_BYTES_PER_PARAMETER
from distcalc.cluster import ClusterSpec, load_cluster, load_link
from distcalc.errors import DistcalcError
from distcalc.memory import MemoryOptions, stack_memory_options
from distcalc.memory.nccl_buffers import nccl_buffer_bytes
from distcalc.memory.te_dummy_wgrad import te_dummy_wgrad_mode
from distcalc.model import ModelSpec
from distcalc.parallel import ParallelConfig, Precision, Recompute, Schedule, validate_for_model
from distcalc.software import MainGradDtype
from distcalc.validation.published.bridge import bridge_analyze_updates, bridge_memory_updates
from distcalc.validation.published.deepspeed import (AUTOGRAD_ACCUMULATION_BYTES, BF16_OPTIMIZER_ACCUMULATION_BYTES,
                                                     autograd_grad_accumulation, deepspeed_bf16_optimizer,
                                                     deepspeed_zero)
from distcalc.validation.published.pytorch_stacks import (cp_algorithm, fsdp_shard_size, fsdp_sharding,
                                                         pytorch_native)
from distcalc.validation.published.rows import PublishedRun
from distcalc.validation.published.stack_kernels import (MEGATRON_GRAD_CHECK_BYTES, MEGATRON_GRAD_PRESCALE_BYTES,
                                                         async_tp_backward, attention_kernel, attention_score_buffer, cross_entropy_kernel,
                                                         elementwise_kernels, legacy_dp_wrapper, legacy_megatron,
                                                         main_grad_dtype,
                                                         megatron_core, megatron_launched, moe_aux_loss,
                                                         moe_router_group_limited)
from distcalc.validation.published.systems import CLUSTER_OF_GPU, GPU_OVERRIDE, NETWORK_OVERRIDES

# CUDA release of a source's software stack, where the source states it or its date bounds it.
CUDA_OF_SOURCE: dict[str, tuple[int, int]] = {
    # BigScience tr11 (BLOOM model card, "Software": PyTorch 1.11 w/ CUDA 11.5); the 2022-02-21 sweep predates
    # CUDA 11.7 (May 2022), the first release with lazy module loading, in any case
    "BLOOM_prequel_sweep_2022-02-21": (11, 5),
}

# Transformer Engine release of a source's stack, where the source states it (memory: TE's cached dummy weight
# gradients, distcalc.memory.te_dummy_wgrad; the stack fuses weight-gradient accumulation, Megatron's default)
TE_OF_SOURCE: dict[str, tuple[int, int]] = {
    # MooreThreads/SimuMax@4dcaae5 docs/b200/b200_real_repro_guide.md: "TransformerEngine: 2.11.0+c188b533"
    "SimuMax_B200_v1.2_2026": (2, 11),
}

# Sources whose runs kept Megatron-LM's dropout defaults (``--hidden-dropout`` and ``--attention-dropout`` 0.1;
# Megatron's embedding dropout is the hidden dropout) although the row's ``dropout`` column says false.
MEGATRON_DROPOUT_SOURCES: dict[str, str] = {
    # BigScience tr11-176B-ml/README.md: "The default Megatron-LM dropout settings are inherited:
    # --attention-dropout 0.1 --hidden-dropout default=0.1" (tr11-176B-ml.slurm passes neither flag)
    "BLOOM_prequel_sweep_2022-02-21": "tr11-176B-ml README: Megatron-LM dropout defaults inherited",
}

# Schedule labels printed by the sources → distcalc schedule names, most faithful first.
SCHEDULE_OF_LABEL: dict[str, tuple[str, ...]] = {
    "1F1B": ("1f1b",),
    "1F1B-I": ("interleaved",),
    "ZB-1p": ("zb-h1", "zero-bubble"),   # ZB-1p: automatic schedule with 1F1B's memory; ZB-H1 is its handcrafted form
    "ZB-2p": ("zb-2p", "zb-h2"),         # ZB-2p: automatic schedule, memory limit 2p·M_B; zb-2p fills it
    "ZB-V": ("zb-v",),
}

# Precision label → distcalc dtype names (first one distcalc has wins).
DTYPE_OF_LABEL: dict[str, tuple[str, ...]] = {
    "fp16": ("fp16",), "bf16": ("bf16",), "fp8": ("fp8",), "FP8-CS": ("fp8",), "FP8-DS": ("fp8",),
    "FP8-MX": ("mxfp8",), "MXFP8": ("mxfp8",), "NVFP4": ("nvfp4",),
}


class NotExpressible(DistcalcError):
    """A published run distcalc cannot describe faithfully; the message says what is missing."""


@dataclass(frozen=True)
class RunInputs:
    """Everything analyze and memory need for one published run, and the assumptions the mapping made."""

    spec: ModelSpec
    cluster: ClusterSpec
    config: ParallelConfig
    options: AnalyzeOptions
    assumptions: tuple[str, ...] = field(default=())
    memory_options: MemoryOptions = field(default_factory=MemoryOptions)


def _first_valid(enum: type, names: tuple[str, ...], what: str, label: str):
    for name in names:
        try:
            return enum(name)
        except ValueError:
            continue
    raise NotExpressible(f"{what} {label!r} is not modelled (would be {' or '.join(names)})")


def _moe_fields(detail: str, ffn: int) -> dict[str, object]:
    """ModelSpec MoE/MLA fields from ``moe_detail``: experts and top-k are required ("160 experts top-6");
    the expert width ("moe_ffn 1536"), shared width ("shared 3072"), leading dense layers ("layer 1 dense
    (ffn 12288)" / "dense_layers=1 (ffn 18432)") and MLA ranks are read where printed; an expert printed
    without its own width has the row's ``ffn`` (Mixtral-style), no shared experts, no dense layers."""

    def number(pattern: str, default: int | None = None) -> int:
        match = re.search(pattern, detail)
        if match is None:
            if default is None:
                raise NotExpressible(f"moe_detail not understood (no {pattern!r}): {detail[:60]!r}")
            return default
        return int(next(g for g in match.groups() if g is not None))

    experts, top_k = number(r"(\d+) experts"), number(r"top-?(\d+)")
    expert_ffn = number(r"moe_ffn (\d+)", ffn)
    shared = number(r"shared (\d+)", 0)
    fields: dict[str, object] = dict(
        num_local_experts=experts, num_experts_per_tok=top_k, moe_intermediate_size=expert_ffn,
        n_shared_experts=max(1, shared // expert_ffn) if shared else 0, shared_expert_intermediate_size=shared or None,
        first_k_dense_replace=number(r"layer (\d+) dense|dense_layers=(\d+)", 0),
        intermediate_size=number(r"ffn (\d+)\)", ffn),
    )
    if "MLA" in detail:
        fields.update(q_lora_rank=number(r"q_lora (\d+)"), kv_lora_rank=number(r"kv_lora (\d+)"),
                      qk_nope_head_dim=number(r"qk_head (\d+)"), qk_rope_head_dim=number(r"rope (\d+)"),
                      v_head_dim=number(r"v_head (\d+)"))
    return fields


def megatron_default_dropout(run: PublishedRun) -> bool:
    """Whether the row ran Megatron's default dropout (0.1) although its ``dropout`` column does not say so: a
    script that keeps Megatron's argument defaults (FlagPerf, "biased linears" in ``assumptions``) or a source
    that documents inheriting them (:data:`MEGATRON_DROPOUT_SOURCES`)."""
    return "biased linears" in run.assumptions or run.source in MEGATRON_DROPOUT_SOURCES


def model_spec(run: PublishedRun) -> ModelSpec:
    """The row's model (see the module docstring for the rules)."""
    gpt_style = not run.gated_mlp
    megatron_defaults = "biased linears" in run.assumptions  # a script that keeps Megatron's argument defaults
    biases = gpt_style or megatron_defaults
    dropout = 0.1 if run.dropout or megatron_default_dropout(run) else 0.0
    fields: dict[str, object] = dict(
        name=run.case_id, model_type="llama" if run.gated_mlp else "gpt2", hidden_size=run.hidden,
        num_hidden_layers=run.layers, num_attention_heads=run.heads, num_key_value_heads=run.kv_heads,
        head_dim=run.head_dim, intermediate_size=run.ffn, vocab_size=run.vocab,
        max_position_embeddings=run.seq_len, tie_word_embeddings=run.tied_embeddings,
        hidden_act="gelu" if gpt_style else "silu", gated_mlp=run.gated_mlp,
        norm_type="layernorm" if gpt_style else "rmsnorm", attention_qkv_bias=biases, attention_out_bias=biases,
        mlp_bias=biases, position_embedding=run.pos_emb or "rope", attention_dropout=dropout,
        hidden_dropout=dropout, embedding_dropout=dropout,
        source=run.source,
    )
    if run.moe_detail:
        fields.update(_moe_fields(run.moe_detail, run.ffn))
    return ModelSpec(**fields)


def cluster_spec(run: PublishedRun) -> ClusterSpec:
    """The row's cluster: the GPU's usual system, with the fabric the row names."""
    name = CLUSTER_OF_GPU.get(run.gpu)
    if name is None:
        raise NotExpressible(f"no cluster preset for GPU {run.gpu!r}")
    try:
        cluster = load_cluster(name, gpu=GPU_OVERRIDE.get(run.gpu))
    except DistcalcError as exc:
        raise NotExpressible(f"cluster preset {name!r} for GPU {run.gpu!r} is missing") from exc
    for phrase, link, nics in NETWORK_OVERRIDES:
        if phrase in run.cluster_network:
            cluster = cluster.model_copy(update={"inter": load_link(link), "nics_per_node": nics})
    return cluster


def _recompute(run: PublishedRun) -> tuple[Recompute, str | None]:
    if run.recompute.lower() == "selective" and "op-level" in run.recompute_detail:
        return Recompute.SELECTIVE_OP, None  # torchtitan's op-level selective AC (distcalc.op_checkpoint)
    for value in Recompute:  # "full", "selective (op-level)", ...
        if run.recompute.lower().startswith(value.value):
            return value, None
    return Recompute.NONE, f"recompute {run.recompute!r} -> none"


def parallel_config(run: PublishedRun) -> tuple[ParallelConfig, list[str]]:
    """The row's parallel configuration and the assumptions made for it."""
    assumed: list[str] = []
    recompute, note = _recompute(run)
    if note:
        assumed.append(note)
    if run.micro_batch is None:
        raise NotExpressible("micro-batch size not stated")
    if run.micro_batch_assumed:
        assumed.append(f"micro_batch {run.micro_batch} (source's assumption)")
    schedule = None
    if run.schedule_label:
        schedule = _first_valid(Schedule, SCHEDULE_OF_LABEL.get(run.schedule_label, ()), "schedule",
                                run.schedule_label)
    dtype = _first_valid(Precision, DTYPE_OF_LABEL.get(run.precision_label, (run.precision,)), "precision",
                         run.precision_label)
    if run.flash_attention is None:
        assumed.append("flash attention on (not stated)")
    if run.source in MEGATRON_DROPOUT_SOURCES and not run.dropout:
        assumed.append(f"dropout 0.1 ({MEGATRON_DROPOUT_SOURCES[run.source]})")
    if run.ep > 1 and not run.moe_detail:
        raise NotExpressible(f"ep {run.ep} without an MoE description")
    chunks = run.pp * (run.vpp or 1)
    split = "stage hold one layer fewer" in run.assumptions
    if run.layers % chunks and (run.layers + 2) % chunks == 0:
        # Megatron refuses an uneven split unless the embedding and the loss take a layer slot each
        # (Megatron-Core --account-for-{embedding,loss}-in-pipeline-split, as NeMo's Llama 3.1 405B recipe).
        split = True
        assumed.append(f"embedding and loss take a layer slot each ({run.layers} layers on pp*vpp = {chunks})")
    config = ParallelConfig(
        gpus=run.gpus, tp=run.tp, pp=run.pp, dp=run.dp, cp=run.cp, ep=run.ep, vpp=run.vpp or 1,
        zero=3 if run.fsdp else 1 if deepspeed_bf16_optimizer(run) else (
            run.zero_stage if not run.distributed_optimizer else 0),
        distributed_optimizer=bool(run.distributed_optimizer) and not run.fsdp,
        sequence_parallel=bool(run.sequence_parallel) and run.tp > 1, recompute=recompute,
        micro_batch=run.micro_batch, global_batch=run.global_batch, seq_len=run.seq_len, schedule=schedule,
        dtype=dtype, flash_attention=run.flash_attention is not False,
        account_for_embedding_and_loss=split,
    )
    return config, assumed


def memory_options(run: PublishedRun, config: ParallelConfig, cluster: ClusterSpec) -> MemoryOptions:
    """What the row's software stack adds to memory (:mod:`distcalc.memory.stacks`), with the NCCL buffers
    of the communicators its parallel layout holds on its cluster (:mod:`distcalc.memory.nccl_buffers`)."""
    bf16_optimizer = deepspeed_bf16_optimizer(run)
    nccl = nccl_buffer_bytes(config.tp, config.pp, config.dp, config.cp, config.ep, cluster.gpus_per_node,
                             cluster.intra.name, tied_embeddings=run.tied_embeddings,
                             megatron_core=megatron_core(run), fp8=config.dtype.low_precision)
    return stack_memory_options(
        deepspeed_zero=deepspeed_zero(run) or bf16_optimizer, fp32_grad_accumulation=bf16_optimizer,
        cuda_version=CUDA_OF_SOURCE.get(run.source),
        irregular_allocations=config.recompute is not Recompute.NONE or config.zero_stage == 3,
        nccl_buffer_bytes=nccl, base=MemoryOptions(zero_shard_size=fsdp_shard_size(run),
                           attention_score_buffer=attention_score_buffer(run), cp_algorithm=cp_algorithm(run)),
        sixteen_bit_main_grad=main_grad_dtype(run) is MainGradDtype.FP16,
    ).model_copy(update={**bridge_memory_updates(run),
                         "te_dummy_wgrad": te_dummy_wgrad_mode(TE_OF_SOURCE.get(run.source))})


def analyze_options(run: PublishedRun, config: ParallelConfig) -> AnalyzeOptions:
    """The software behaviour the row's framework and flags describe."""
    nemo = "NeMo" in run.framework or "Megatron-Bridge" in run.framework
    overlap = run.dp_comm_overlap is not False
    # FSDP reduce dtype: what the row prints ("reduce fp32": torchtitan's MixedPrecisionPolicy), else IBM
    # fms-fsdp's bfSixteen policy (fms_fsdp/policies/mixed_precision.py: param and reduce dtype bf16);
    # DeepSpeed's ZeRO-1/2 optimizer reduces the 16-bit param.grad through a 16-bit bucket (stage_1_and_2.py)
    fms_bf16 = run.fsdp and "fms-fsdp" in run.framework and "reduce fp32" not in run.config_details
    fp16_grads = run.precision == "fp16" and legacy_megatron(run)  # local/PyTorch DDP in the param dtype
    reduce_bytes = 2 if fms_bf16 or deepspeed_zero(run) or fp16_grads else 4
    bf16_optimizer = deepspeed_bf16_optimizer(run)
    options = AnalyzeOptions(
        overlap_grad_reduce=overlap, overlap_param_gather=overlap,
        tp_overlap_efficiency=1.0 if run.tp_comm_overlap == "per recipe" else 0.0,
        tp_comm_overlap=run.tp_comm_overlap == "per recipe",
        tp_async_backward=async_tp_backward(run),  # NCCL backward TP collectives beside their GEMMs
        pipeline_p2p_overlap=nemo, distributed_optimizer=config.distributed_optimizer,
        cp_algorithm=cp_algorithm(run),  # TE ring, Megatron a2a (Ulysses) or PyTorch's ring (torchtitan)
        grad_reduce_bytes=reduce_bytes, allreduce_sharded_gradients=bf16_optimizer,
        zero_reduce_to_owners=deepspeed_zero(run),  # ZeRO-1/2 reduce per owner (analyze.zero_reduce)
        grad_accumulation_bytes_per_parameter=BF16_OPTIMIZER_ACCUMULATION_BYTES if bf16_optimizer else (
            AUTOGRAD_ACCUMULATION_BYTES if autograd_grad_accumulation(run) else 0.0),
        # torchtitan's 2024 Llama presets run eager PyTorch (train_configs/llama3_8b.toml: norm_type "rmsnorm",
        # not "fused_rmsnorm"; no compile); IBM's fms-fsdp runs of the 2024 FSDP blog ran without torch.compile
        # (its follow-up, pytorch.org/blog/maximizing-training-throughput, added compile to those same runs:
        # "torch.compile improves training MFU between 10% and 23%"), so their RMSNorm/SwiGLU/RoPE are eager too
        elementwise_kernels=elementwise_kernels(run),
        # FSDP2 (torchtitan's fully_shard) shards per parameter and copies around every collective; FSDP1
        # (IBM fms-fsdp) gathers into one FlatParameter per unit and concatenates its gradient from the views';
        # Megatron-FSDP's gradients accumulate in its buffers
        fsdp_sharding=fsdp_sharding(run),
        attention_kernel=attention_kernel(run),
        main_grad_dtype=main_grad_dtype(run),
        grad_check_bytes_per_parameter=MEGATRON_GRAD_CHECK_BYTES if megatron_launched(run) and run.precision != "fp16"
        else 0.0,
        grad_prescale_bytes_per_parameter=MEGATRON_GRAD_PRESCALE_BYTES if megatron_launched(run) else 0.0,
        cross_entropy=cross_entropy_kernel(run),
        # Megatron-LM@23e00ed (core_r0.14.0 branch), the only pinned-commit mcore rows: its AllToAll dispatcher
        # sends the routing probabilities in their own AllToAll (moe/token_dispatcher.py, token_dispatch)
        moe_dispatch_probs=megatron_launched(run),
        moe_router_group_limited=moe_router_group_limited(run), moe_aux_loss=moe_aux_loss(run),
        # PyTorch-native loops step torch.optim.AdamW (foreach) after clip_grad_norm_ and free the gradients
        # (TORCH_FOREACH_ADAMW_BYTES_PER_PARAMETER); fms-fsdp's 7B ran HSDP (FMS_FSDP_HSDP_VARIANTS)
        **(dict(optimizer_bytes_per_parameter=TORCH_FOREACH_ADAMW_BYTES_PER_PARAMETER,
                grad_buffer_zero_bytes_per_parameter=0.0) if pytorch_native(run) else {}),
        fsdp_shard_size=fsdp_shard_size(run),
    )
    wrapper = legacy_dp_wrapper(run)  # Megatron-LM's own fp16/bf16 optimizer and DDP passes (analyze.optimizer_passes)
    if wrapper is not None:
        options = options.model_copy(update=step_pass_updates(options.optimizer_bytes_per_parameter,
                                                               run.precision == "fp16", float(reduce_bytes), wrapper))
    return options.model_copy(update=bridge_analyze_updates(run))  # Megatron-Bridge's bf16 gradients


# Columns a row must state for distcalc to describe it.
REQUIRED_COLUMNS = ("hidden", "layers", "heads", "ffn", "vocab", "seq_len", "gpus", "global_batch")


def run_inputs(run: PublishedRun) -> RunInputs:
    """Map one published run; raises :class:`NotExpressible` with the reason where distcalc cannot."""
    missing = [column for column in REQUIRED_COLUMNS if getattr(run, column) is None]
    if missing:
        raise NotExpressible(f"not stated: {', '.join(missing)}")
    try:
        spec = model_spec(run)
        cluster = cluster_spec(run)
        config, assumed = parallel_config(run)
        validate_for_model(config, spec)
        options = analyze_options(run, config)
        memory = memory_options(run, config, cluster)
        if options.fsdp_shard_size:  # from the source's repository, not the row: say so in the case note
            assumed.append(f"HSDP, shard group {options.fsdp_shard_size} (fms-fsdp README: 7b HSDP)")
    except NotExpressible:
        raise
    except ValueError as exc:  # a configuration distcalc refuses (ConfigError, pydantic): say so, one line
        raise NotExpressible(str(exc).splitlines()[0]) from exc
    return RunInputs(spec, cluster, config, options, tuple(assumed), memory)
