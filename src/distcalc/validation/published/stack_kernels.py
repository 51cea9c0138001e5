"""Which kernels and passes each framework of the development set runs (the rules of
:mod:`distcalc.validation.published.mapping` that read the row's ``framework`` and ``config_details``): Megatron
stacks with or without TransformerEngine, the attention kernel of each stack, the loss implementation, and
Megatron-Core's own passes over the gradients. Each rule cites the code or page it reads."""

from __future__ import annotations

import re

from distcalc.analyze.optimizer_passes import StepPasses, megatron_step_passes
from distcalc.analyze.options import AttentionKernel, ElementwiseKernels
from distcalc.compute.loss import CrossEntropyKernel
from distcalc.software import DataParallelWrapper, MainGradDtype
from distcalc.validation.published.rows import PublishedRun


def megatron_core(run: PublishedRun) -> bool:
    """Whether the row's stack is built on Megatron-Core's ``parallel_state`` (Megatron-LM's mcore path, NeMo,
    Megatron-Bridge), whose process groups :mod:`distcalc.memory.nccl_buffers` counts."""
    framework = run.framework.lower()
    return any(name in framework for name in ("megatron-core", "nemo", "megatron-bridge"))


# NeMo releases whose launcher switched cuDNN attention off (module docstring): (year, month) inclusive.
NEMO_FLASH2_RELEASES = ((24, 1), (24, 7))


#: framework phrases of Megatron stacks that run TransformerEngine / Megatron-Core layers, not the local linears
TRANSFORMER_ENGINE_STACKS = ("TransformerEngine", "megatron-core", "mcore", "Megatron-Core", "NeMo")
#: stacks whose ``--use-flash-attn`` is FlashAttention 1.x (``flash_attn_unpadded_func``): Megatron-LM 285068c8
#: (2023-01-11, "Merge branch 'tridao-flashattn'"); FlashAttention-2 was released in July 2023
FLASH1_STACKS = ("Megatron-LM @285068c8",)


def legacy_megatron(run: PublishedRun) -> bool:
    """Whether the row ran Megatron-LM's own (pre-TransformerEngine) layers: a Megatron-LM framework that names
    neither TransformerEngine nor Megatron-Core (``--transformer-impl local`` was the default until 2023)."""
    return "Megatron-LM" in run.framework and not any(p in run.framework for p in TRANSFORMER_ENGINE_STACKS)


def elementwise_kernels(run: PublishedRun) -> ElementwiseKernels:
    """How the row's framework runs its elementwise kernels (module docstring): eager PyTorch for torchtitan
    and fms-fsdp, Megatron-LM local linears for Megatron-LM without TransformerEngine (the Zero Bubble fork,
    Narayanan 2021, MegaScale's baseline) and Megatron-DeepSpeed (BLOOM), else fused."""
    if "torchtitan" in run.framework or "fms-fsdp" in run.framework:
        return ElementwiseKernels.EAGER
    if "sail-sg zero-bubble" in run.framework or "Megatron-DeepSpeed" in run.framework or legacy_megatron(run):
        return ElementwiseKernels.MEGATRON_LOCAL
    return ElementwiseKernels.FUSED


#: Megatron-LM stacks that predate ``gradient_accumulation_fusion``: the weight-gradient GEMM (``F.linear``'s
#: autograd) writes a new fp16 ``param.grad`` (2 B) and autograd's ``AccumulateGrad`` adds the next micro-batch's
#: into it (read 2 + 2, write 2), 8 B per element as the fp32-accumulating GEMM is priced (the first micro-batch
#: of a step writes 2 B only: not distinguished). Checked in the SC21 code (NVIDIA/Megatron-LM@de7dc40f88:
#: ``megatron/mpu/layers.py`` ``F.linear``, no ``gradient_accumulation_fusion`` anywhere in ``megatron/``; local DDP
#: without contiguous buffers keeps ``param.grad``, :mod:`distcalc.analyze.optimizer_passes`)
UNFUSED_WGRAD_ACCUMULATION_STACKS = ("SC21",)


def main_grad_dtype(run: PublishedRun) -> MainGradDtype:
    """fp16 for an fp16 run of Megatron-LM's own layers with its local DDP (:func:`legacy_megatron`, not
    ``--DDP-impl torch``) that does not pass ``--accumulate-allreduce-grads-in-fp32``: the ``main_grad`` buffers
    then take the parameters' fp16 (``megatron/core/distributed/distributed_data_parallel.py``: ``dtype =
    torch.float if accumulate_allreduce_grads_in_fp32 else param.dtype``; ``megatron/arguments.py`` forces the
    flag only for bf16) and the fused weight-gradient GEMM accumulates with ``wgrad_gemm_accum_fp16``
    (``megatron/core/tensor_parallel/layers.py``), all at sail-sg/zero-bubble-pipeline-parallelism@93af65c,
    whose ``examples/pretrain_zero_bubble.sh`` passes ``--fp16`` and neither that flag nor
    ``--no-gradient-accumulation-fusion`` (fusion on by default; ``ColumnParallelLinear`` raises when its
    extension is missing, so the runs had it). PyTorch DDP (Narayanan
    2021's ``--DDP-impl torch``) has no ``main_grad``; bf16 and TransformerEngine stacks: fp32. Stacks in
    :data:`UNFUSED_WGRAD_ACCUMULATION_STACKS` keep the fp32 pricing (not checked in their code)."""
    fp16_local_ddp = (run.precision == "fp16" and legacy_megatron(run) and "DDP-impl torch" not in run.config_details
                      and "accumulate-allreduce-grads-in-fp32" not in run.config_details
                      and not any(stack in run.framework for stack in UNFUSED_WGRAD_ACCUMULATION_STACKS))
    return MainGradDtype.FP16 if fp16_local_ddp else MainGradDtype.FP32


def attention_kernel(run: PublishedRun) -> AttentionKernel:
    """FlashAttention-2 for the NeMo containers whose launcher set ``NVTE_FUSED_ATTN=0`` and for PyTorch SDPA's
    flash backend ("SDPA flash": FlashAttention-2 kernels), FlashAttention 1.x on :data:`FLASH1_STACKS`, else
    fused."""
    if "SDPA flash" in run.config_details:
        return AttentionKernel.FLASH2
    if any(stack in run.framework for stack in FLASH1_STACKS):
        return AttentionKernel.FLASH1
    match = re.search(r"\bNeMo (\d\d)\.(\d\d)", run.framework)
    if match and NEMO_FLASH2_RELEASES[0] <= (int(match[1]), int(match[2])) <= NEMO_FLASH2_RELEASES[1]:
        return AttentionKernel.FLASH2
    return AttentionKernel.FUSED


#: Megatron-LM stacks whose ``--DDP-impl local`` ran without contiguous gradient buffers: the SC21 code enables them
#: only with ``--accumulate-allreduce-grads-in-fp32`` (forced for bf16) or ``--use-contiguous-buffers-in-ddp``, and
#: ``examples/sc21/CONFIG.sh`` passes ``--fp16`` and neither (``megatron/arguments.py`` at de7dc40f88); later
#: Megatron-LM defaults to them (``--no-contiguous-buffers-in-local-ddp``, 285068c8)
COALESCED_LOCAL_DDP_STACKS = ("SC21",)


def legacy_dp_wrapper(run: PublishedRun) -> DataParallelWrapper | None:
    """The data-parallel wrapper of a stack of :func:`legacy_megatron` that steps Megatron-LM's own
    mixed-precision optimizer (:mod:`distcalc.analyze.optimizer_passes`): PyTorch DDP where the row's
    ``config_details`` says ``--DDP-impl torch``, local DDP without contiguous buffers on
    :data:`COALESCED_LOCAL_DDP_STACKS`, else local DDP with them. None for other stacks (Megatron-Core's launched
    passes are :data:`MEGATRON_GRAD_CHECK_BYTES` / :data:`MEGATRON_GRAD_PRESCALE_BYTES`; DeepSpeed and
    PyTorch-native loops step optimizers of their own)."""
    if not legacy_megatron(run):
        return None
    if "DDP-impl torch" in run.config_details:
        return DataParallelWrapper.TORCH_DDP
    if any(stack in run.framework for stack in COALESCED_LOCAL_DDP_STACKS):
        return DataParallelWrapper.LOCAL_COALESCED
    return DataParallelWrapper.LOCAL_BUFFERS


def legacy_step_passes(run: PublishedRun, grad_bytes: float) -> StepPasses | None:
    """The step passes of :func:`legacy_dp_wrapper`'s stacks: a loss scaler for fp16 (every ``--fp16`` run has
    one; the SC21 scripts pass ``--loss-scale 8192``, a constant scaler that still unscales) and the row's
    gradient element size ``grad_bytes`` (16-bit for fp16 local and PyTorch DDP, fp32 ``main_grad`` for bf16)."""
    wrapper = legacy_dp_wrapper(run)
    return None if wrapper is None else megatron_step_passes(run.precision == "fp16", grad_bytes, wrapper)


#: HBM bytes per local parameter of Megatron-Core's gradient passes before the DP collective (NaN check: read
#: fp32; 1/(DP·CP) scaling: read + write fp32), AnalyzeOptions ``grad_check_*`` / ``grad_prescale_*``
MEGATRON_GRAD_CHECK_BYTES, MEGATRON_GRAD_PRESCALE_BYTES = 4.0, 8.0


#: Megatron stacks whose backward TP collectives are synchronous: the SC21 code (de7dc40f88, 2021-08-10) predates
#: the asynchronous TP all-reduce (cf7efd4f5a, 2021-08-30); BigScience's Megatron-DeepSpeed fork's
#: ColumnParallelLinear is ``copy_to_tensor_model_parallel_region`` + ``F.linear`` (``megatron/mpu/layers.py``)
SYNCHRONOUS_TP_STACKS = ("SC21", "Megatron-DeepSpeed")


def async_tp_backward(run: PublishedRun) -> bool:
    """Whether the row's Megatron stack launches its backward TP collectives asynchronously beside a GEMM
    (:mod:`distcalc.analyze.tp_async`): Megatron-LM since cf7efd4f5a (2021-08-30; with sequence parallelism
    ``LinearWithGradAccumulationAndAsyncCommunication``, 9aad9203aa) and TransformerEngine's ``Linear`` /
    ``LayerNormLinear`` backward (``async_op=True`` re-gather and ReduceScatter); not the stacks of
    :data:`SYNCHRONOUS_TP_STACKS`, nor the PyTorch-native loops (no Megatron TP layers)."""
    framework = run.framework
    if any(name in framework for name in SYNCHRONOUS_TP_STACKS):
        return False
    return any(name in framework for name in ("Megatron", "megatron", "NeMo"))


def megatron_launched(run: PublishedRun) -> bool:
    """Megatron-Core launched through Megatron-LM's own ``pretrain_*.py`` and argument defaults at a pinned
    commit (framework "Megatron-LM@<commit> (mcore …)"): the 1/(DP·CP) scaling before the reduce
    (``--ddp-average-in-collective`` not given) and, unless fp16's dynamic loss scaler turns it off, the NaN
    check of the gradients (``--no-check-for-nan-in-loss-and-grad`` not given)."""
    return run.framework.startswith("Megatron-LM@") and "mcore" in run.framework


def cross_entropy_kernel(run: PublishedRun) -> CrossEntropyKernel:
    """The loss implementation the row ran. SimuMax names runs with ``--cross-entropy-loss-fusion`` by the
    suffix ``_cef`` (the row's assumptions) and models them with TransformerEngine's fused kernel, the one its
    B200 system file measures (``ce_fusion``, ``test_ce_permute_efficiency.py`` ``te_fusion``); its published
    predictions are reproduced only with that fusion on (its ``tools/b200`` case table, DeepSeek-V2 EP8 mbc4:
    369.3 ms off, 343.6 ms on = the published figure). Megatron-Bridge's performance runs use TE's kernel too:
    ``GPTModelProvider`` turns the fusion on by default (``cross_entropy_loss_fusion: bool = True``) and the
    performance scripts of both releases select TE's implementation for every model —
    25.09 (``v0.1.0rc4``, ``scripts/performance/configs/{llama3,llama31}/*_llm_pretrain.yaml``:
    ``model: cross_entropy_fusion_impl: "te"``), 25.11 (``v0.2.0``, ``scripts/performance/utils/helpers.py``
    ``set_common_perf_overrides``: ``recipe.model.cross_entropy_fusion_impl = "te"``, called for every recipe
    by ``get_model_recipe_with_user_overrides``); the Llama model providers default to it as well
    (``llama_provider.py``: ``cross_entropy_fusion_impl: str = "te"``). Everything else: Megatron-Core's
    default, unfused."""
    if run.case_id.endswith("_cef") or "Megatron-Bridge" in run.framework:
        return CrossEntropyKernel.TE_FUSED
    return CrossEntropyKernel.UNFUSED


def moe_router_group_limited(run: PublishedRun) -> bool:
    """The row's router selects experts within the best groups first: its ``moe_detail`` says so ("router
    group-topk 3 with groups=EP": Megatron-Core ``--moe-router-num-groups`` / ``--moe-router-group-topk``)."""
    return "group-topk" in (run.moe_detail or "")


def moe_aux_loss(run: PublishedRun) -> bool:
    """The row's router computes an auxiliary load-balancing loss. SimuMax's DeepSeek launcher passes
    ``--moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff 3e-3`` (MooreThreads/SimuMax@4dcaae5
    ``simu_tools/megatron_scripts/scripts/run_pretrain_deepseekv2.sh``, ``MOE_ARGS``); other rows do not state
    one, and Megatron-Core's default coefficient is 0."""
    return run.source.startswith("SimuMax") and bool(run.moe_detail)


#: stacks whose non-flash core attention computes its scores into Megatron-LM's ``GlobalMemoryBuffer`` (code read:
#: ``megatron/model/transformer.py`` ``CoreAttention.forward`` and ``megatron/core/utils.py`` at
#: sail-sg/zero-bubble-pipeline-parallelism@93af65c); older Megatron stacks (SC21, Megatron-DeepSpeed of 2022)
#: were not checked and keep per-call score tensors, freed within the layer
GLOBAL_SCORE_BUFFER_STACKS = ("sail-sg zero-bubble",)


def attention_score_buffer(run: PublishedRun) -> bool:
    """Whether the row's stack holds its non-flash attention scores in a persistent global buffer
    (:func:`distcalc.memory.activations.attention_score_buffer_bytes`); the memory model adds it only where flash
    attention is off."""
    return any(stack in run.framework for stack in GLOBAL_SCORE_BUFFER_STACKS)
