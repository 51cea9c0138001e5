"""Per-GPU compute time of one transformer layer (and the embedding / output head) for one micro-batch.

Operations of a Megatron-LM GPT layer on one tensor-parallel rank (t = TP, T = b·s/cp tokens, Tₑ = T/t
with sequence parallelism else T — the residual-stream elementwise work that SP shards; Korthikanti et
al. 2022 §4.2.2):

* GEMMs ``(batch, m, n, k)``: QKV ``(1, T, qkv/t, h)``, output projection ``(1, T, h, a·d_v/t)``, MLP
  ``(1, T, m·f/t, h)`` and ``(1, T, h, f/t)`` (m = 2 for a gated MLP's fused gate+up); MoE layers:
  router ``(1, T, E, h)`` and the local experts as a grouped GEMM ``(E/ep, T·k·ep/E, m·f_e/t, h)``,
  ``(E/ep, T·k·ep/E, h, f_e/t)`` whose per-expert weights stream from HBM beside the math
  (:mod:`distcalc.compute.grouped`), plus shared experts as a dense MLP. Backward of each: the input
  gradient ``(batch, m, k, n)`` and the weight gradient ``(batch, k, n, m)``, the latter accumulating into
  an fp32 ``main_grad`` (8 bytes read+write per output element, Megatron-LM gradient-accumulation fusion;
  4 bytes where the buffer is fp16: fp16 training without ``--accumulate-allreduce-grads-in-fp32``,
  :class:`distcalc.software.MainGradDtype`).
* Attention core without FlashAttention: batched GEMMs QKᵀ ``(b·a/t, s/cp, s, d)`` and P·V
  ``(b·a/t, s/cp, d_v, s)``; the fused scale-mask-softmax reads and writes the ``b·(a/t)·(s/cp)·s``
  scores (4 bytes/element forward, 6 backward) and attention dropout reads, writes and stores a 1-byte
  mask (5 bytes/element each way). Backward: 2 batched GEMMs per forward one. ALiBi (Megatron-DeepSpeed,
  BLOOM: ``torch.baddbmm(alibi, q, kᵀ, beta=1)``) adds its bias through the GEMM's C operand: PyTorch copies
  the broadcast ``[b·a, 1, s]`` bias into the ``[b·a, s, s]`` output and cuBLAS reads it back (2 + 2 bytes
  per score element forward, :data:`ALIBI_SCORE_BYTES`); the bias needs no gradient.
  With FlashAttention: FLOPs ``4·b·(a/t)·(s/cp)·s·d`` × ½ (causal blocks skipped) forward at the
  device's flash forward efficiency; backward 2.5 × the forward FLOPs (it recomputes P) at the backward
  efficiency (Dao 2023, FlashAttention-2, §3); with attention dropout both run the kernel's measured
  dropout overhead slower (:func:`distcalc.compute.attention.attention_dropout_overhead`). Under ring
  context parallelism the same causal work runs as one causal and cp − 1 non-causal kernels with merges
  between them (:mod:`distcalc.compute.attention`).
* Elementwise, priced by bytes (bf16 = 2 bytes): per element of the residual stream Tₑ·h — forward two
  norms (read+write, 4 B) and two bias-dropout-add (read x and residual, write out, 1-byte mask: 7 B;
  6 B without dropout); backward norms 8 B, dropout-add 5 B. A parallel block (:mod:`distcalc.model.blocks`)
  runs ``block_norms`` norms (1 or 2) and one residual add of three tensors (8 B + a mask per branch).
  MLP activation on T·f/t: GeLU 4 B forward, 6 B backward; SwiGLU 6 B / 10 B per f-element. RoPE on q and k:
  4 B each way. A sliding window shrinks the fused kernel's (query, key) pairs to ``pairs(s, w)``.

Low precision (``device.quantize_bytes_per_element`` > 0; TransformerEngine, Micikevicius et al. 2022 "FP8 Formats for Deep
Learning"): an FP8 GEMM needs its operands quantised, and Hopper's FP8 tensor cores take only the TN
layout, so the weight-gradient GEMM needs the transposed FP8 copies (cuBLASLt docs, FP8 matmul: "A must be
transposed and B non-transposed"). TE's ``cast_transpose`` reads the 16-bit tensor once and writes the FP8
tensor and its transpose: 4 bytes per element (MXFP8 and NVFP4 write a rowwise and a columnwise copy with
their block scales: 2 + 2·(1 + 1/32) and 2 + 2·(0.5 + 1/16) bytes; :class:`distcalc.parallel.Precision`).
Every layer GEMM's input is quantised that way in the
forward pass and every output gradient in the backward pass (TE fuses some forward casts into the norm or
the activation, which saves ≤ 2 of those 4 bytes there; not credited). Weights are quantised once per step
and cached across micro-batches (not counted); amax reductions are negligible.

PyTorch eager (``device.eager_elementwise``; torchtitan's Llama without ``fused_rmsnorm`` or
``torch.compile``, IBM fms-fsdp) also runs that model code's separate q/k/v and gate/up linears, autograd's
gradient adds and the GQA key/value expansion (:mod:`distcalc.compute.pytorch_layer`); its elementwise work
runs as the composite ops of the model code, each a
kernel that reads and writes the whole tensor (bytes per element, forward / backward, counted from the code
and autograd's saved tensors):

* RMSNorm ``(x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x) * w``: upcast 2+4, square
  4+4, mean 4, scale 4+4, downcast 4+2, weight 2+2 = 36 B forward; backward through the same chain in fp32
  ≈ 60 B (weight 8, downcast 6, scale 12, mean 4, square 12, gradient sum 12, upcast 6) — fused: 4 / 8 B.
* SwiGLU ``silu(x W₁) * (x W₃)``: silu 2+2, product 4+2 = 10 B forward; backward product 6+4, silu 4+2 =
  16 B per f-element — fused: 6 / 10 B.
* RoPE via complex multiplication: upcast 2+4, complex product 4+4, downcast 4+2 = 20 B each way per q/k
  element — fused: 4 B.

LayerNorm and GeLU are single native kernels in eager PyTorch too (``F.layer_norm``, ``F.gelu``), so GPT-style
models keep the fused counts.

Megatron-LM's local linear layers (``device.unfused_linear_bias``; ``--transformer-impl local``, the legacy
``megatron/model`` GPT that the Zero Bubble fork runs): ``LinearWithGradAccumulationAndAsyncCommunication``
computes ``output = torch.matmul(input, weight.t())`` and then ``output = output + bias`` — one more kernel
that reads and writes the QKV projection's output (4 B per element of ``T·qkv/t``; the output projection
and the MLP pass ``skip_bias_add`` and fold their biases into bias-dropout-add and bias-GeLU) — and its
backward reduces ``grad_bias = grad_output.sum(dim=0)`` in a kernel that reads the output gradient (2 B per
element); the skip-bias-add biases get theirs from autograd's reduction of the broadcast add, also a kernel
reading the gradient. Per biased linear: QKV ``T·qkv/t``, output projection Tₑ·h, MLP up ``T·m·f/t``, MLP
down Tₑ·h elements (dense MLPs; sail-sg/zero-bubble-pipeline-parallelism@93af65c
``megatron/core/tensor_parallel/layers.py``, the same in Megatron-LM of that time). TransformerEngine's
linears fuse both into the GEMM (cuBLASLt bias and bias-gradient epilogues), so ``fused`` counts neither.

Recomputation (Korthikanti §5): selective re-runs the attention core forward (nothing extra with
FlashAttention, whose backward already recomputes); full re-runs the layer's forward. torchtitan's op-level
selective checkpointing (``selective-op``, :mod:`distcalc.op_checkpoint`) re-runs every second linear
projection of the block (Llama: wk, wo, w3), all the forward elementwise kernels, and the attention core
when it is not a flash/SDPA kernel (whose output the policy saves); an MoE layer's experts are not ``aten.mm``
calls and are counted as saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from distcalc.compute.attention import (CpSplit, allgather_attention_times, attention_dropout_overhead,
                                        flash_attention_times, ring_attention_times)
from distcalc.compute.device import DeviceCompute, elementwise_time_s, gemm_time_s, sixteen_bit
from distcalc.compute.flops import ModelDims, effective_key_length
from distcalc.compute.grouped import expert_gemm_times
from distcalc.compute.loss import (CE_BACKWARD_BYTES_PER_LOGIT, CE_FORWARD_BYTES_PER_LOGIT,  # noqa: F401 (re-export)
                                   CrossEntropyKernel, cross_entropy_times)
from distcalc.compute.mla import qkv_projections
from distcalc.compute.torch_cp import torch_ring_layer_times
from distcalc.compute.moe import permute_times, router_times
from distcalc.compute.pytorch_layer import WGRAD_OUTPUT_BYTES, native_code_times, separate_gate_up, separate_qkv
from distcalc.op_checkpoint import block_projections, op_sac_split
from distcalc.parallel import Recompute

ArrayLike = Any

#: bytes per output element of a weight-gradient GEMM accumulating into fp32 main_grad (read + write); the
#: device's ``wgrad_accumulate_bytes`` (4 with an fp16 ``main_grad``, :class:`distcalc.software.MainGradDtype`)
WGRAD_ACCUMULATE_BYTES = 8.0
#: PyTorch-eager composite ops (module docstring): RMSNorm, SwiGLU and RoPE bytes per element (forward,
#: backward), and the kernels each adds per layer over its fused form (RMSNorm 2 x (6 - 1), SwiGLU 2 - 1,
#: RoPE on q and k 2 x 3 - 1); the RMSNorm count is for the 2 norms of a sequential block (5 per norm)
EAGER_RMSNORM_BYTES = (36.0, 60.0)
EAGER_SWIGLU_BYTES = (10.0, 16.0)
EAGER_ROPE_BYTES = 20.0
EAGER_EXTRA_KERNELS = {"rmsnorm": 10, "swiglu": 1, "rope": 5}
#: Megatron-LM local linears (module docstring): activation elements accessed per element of the unfused QKV
#: bias add (read + write) and of a bias-gradient reduction (read the output gradient); bytes: times the
#: configured dtype's ``device.activation_bytes`` (4 and 2 B in 16 bit)
LOCAL_BIAS_ADD_ACCESSES = 2.0
LOCAL_BIAS_GRAD_ACCESSES = 1.0
#: ALiBi through ``baddbmm``'s C operand without FlashAttention (module docstring): the expanded copy of the
#: bias into the scores (write 2 B) and cuBLAS reading it as C (2 B) per score element, forward
ALIBI_SCORE_BYTES = 4.0


@dataclass(frozen=True)
class LayerTimes:
    """Compute seconds of one layer for one micro-batch on one GPU (arrays over configurations)."""

    forward_s: ArrayLike
    backward_s: ArrayLike  #: without recomputation
    recompute_s: ArrayLike  #: extra forward work re-run during the backward pass
    forward_gemm_s: ArrayLike
    forward_attention_s: ArrayLike
    forward_elementwise_s: ArrayLike
    backward_wgrad_s: ArrayLike  #: weight-gradient GEMMs (window that hides overlapped TP collectives)
    backward_dgrad_s: ArrayLike  #: input-gradient GEMMs
    #: per weight GEMM, in the order QKV, output projection, MLP up (+gate), MLP down (dense layers; MoE layers:
    #: QKV, projection, router, experts up, experts down, shared up, shared down): forward, dgrad, wgrad
    #: seconds — the GEMM each TransformerEngine userbuffers overlap pairs with a TP collective
    gemms_forward_s: tuple = ()
    gemms_dgrad_s: tuple = ()
    gemms_wgrad_s: tuple = ()

    def total_s(self) -> ArrayLike:
        """Forward + backward + recompute."""
        return self.forward_s + self.backward_s + self.recompute_s


def _gemm_fwd_bwd(batch: ArrayLike, m: ArrayLike, n: ArrayLike, k: ArrayLike,
                  device: DeviceCompute) -> tuple[ArrayLike, ArrayLike, ArrayLike]:
    """(forward, dgrad, wgrad) seconds of a weight GEMM ``[m×k]·[k×n]``; the weight gradient accumulates into
    fp32 ``main_grad`` (Megatron) or, in PyTorch-native model code, is written as a new 16-bit tensor
    (:data:`distcalc.compute.pytorch_layer.WGRAD_OUTPUT_BYTES`)."""
    fwd = gemm_time_s(batch, m, n, k, device)
    dgrad = gemm_time_s(batch, m, k, n, device)
    out = WGRAD_OUTPUT_BYTES if device.eager_elementwise else device.wgrad_accumulate_bytes
    wgrad = gemm_time_s(batch, k, n, m, device, out_bytes=out)
    return fwd, dgrad, wgrad


def _attention_core(dims: ModelDims, device: DeviceCompute, b: ArrayLike, s: ArrayLike, t: ArrayLike,
                    cp: ArrayLike, flash: ArrayLike, cp_split: ArrayLike = CpSplit.RING) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of the attention core (scores, softmax, dropout, values); in 16-bit
    precision also under FP8 training (``device.attention``). Fused attention under context parallelism runs
    as ``cp_split`` says (:mod:`distcalc.compute.attention`): the ring's kernels and merges, all-gather's two
    prefix kernels, or (no CP, Ulysses) one causal kernel."""
    device = sixteen_bit(device)
    heads = np.divide(dims.heads, t)
    sq = np.divide(s, cp)
    batch = np.multiply(b, heads)
    d, dv = dims.head_dim, dims.v_head_dim
    # unfused path (Megatron CoreAttention): 2 batched GEMMs forward, 4 backward, softmax and dropout
    scores = gemm_time_s(batch, sq, s, d, device)
    values = gemm_time_s(batch, sq, dv, s, device)
    bwd_gemms = (gemm_time_s(batch, sq, d, s, device) + gemm_time_s(batch, s, d, sq, device)
                 + gemm_time_s(batch, sq, s, dv, device) + gemm_time_s(batch, s, dv, sq, device))
    elements = batch * sq * np.asarray(s, dtype=float)
    drop = 1.0 if dims.attention_dropout else 0.0
    alibi = 1.0 if dims.alibi else 0.0
    fwd_el = elementwise_time_s(elements * (4.0 + 5.0 * drop + ALIBI_SCORE_BYTES * alibi), device, 1 + drop + alibi)
    bwd_el = elementwise_time_s(elements * (6.0 + 5.0 * drop), device, 1 + drop)
    unfused_fwd = scores + values + fwd_el
    unfused_bwd = bwd_gemms + bwd_el
    # sliding window (distcalc.model.blocks): the fused kernel's pairs shrink to pairs(s, w); under CP the
    # ring's / all-gather's kernels are scaled by the same fraction (their communication is not)
    band = effective_key_length(s, dims.sliding_window) / np.asarray(s, dtype=float) if dims.sliding_window else 1.0
    one_f, one_b = flash_attention_times(device, batch, sq, np.multiply(s, band), d, dv, causal=True)
    q_elements = batch * sq * float(d)
    kv_elements = np.multiply(b, sq) * np.maximum(np.divide(dims.kv_heads, t), 1.0) * float(d)
    split = np.where(np.asarray(cp) > 1, np.asarray(cp_split), CpSplit.NONE)
    ring_f = ring_b = ag_f = ag_b = 0.0  # a split no configuration runs is not priced (np.where never picks it)
    if (split == CpSplit.RING).any():
        ring_f, ring_b = (band * x for x in ring_attention_times(device, batch, s, cp, d, dv, q_elements, kv_elements))
    if (split == CpSplit.ALLGATHER).any():
        ag_f, ag_b = (band * x for x in allgather_attention_times(device, batch, s, cp, d, dv))
    flash_fwd = np.where(split == CpSplit.RING, ring_f, np.where(split == CpSplit.ALLGATHER, ag_f, one_f))
    flash_bwd = np.where(split == CpSplit.RING, ring_b, np.where(split == CpSplit.ALLGATHER, ag_b, one_b))
    if np.any(split == CpSplit.TORCH):  # PyTorch's ring CP and its eager merges (compute.torch_cp)
        torch_cp = torch_ring_layer_times(dims, device, b, s, t, cp)
        flash_fwd = np.where(split == CpSplit.TORCH, torch_cp.forward_s, flash_fwd)
        flash_bwd = np.where(split == CpSplit.TORCH, torch_cp.backward_s, flash_bwd)
    if dims.attention_dropout:  # the kernel's in-kernel dropout (distcalc.compute.attention)
        slower = 1.0 + attention_dropout_overhead(device)
        flash_fwd, flash_bwd = flash_fwd * slower, flash_bwd * slower
    use_flash = np.asarray(flash) != 0
    return np.where(use_flash, flash_fwd, unfused_fwd), np.where(use_flash, flash_bwd, unfused_bwd)


def layer_times(dims: ModelDims, device: DeviceCompute, micro_batch: ArrayLike, seq_len: ArrayLike,
                tp: ArrayLike, cp: ArrayLike = 1, sequence_parallel: ArrayLike = 0, recompute: ArrayLike = 0,
                flash_attention: ArrayLike = 0, ep: ArrayLike = 1, moe: bool = False,
                cp_split: ArrayLike = CpSplit.RING, capacity_factor: ArrayLike = 1.0,
                router_kernels: tuple[int, int] | None = None) -> LayerTimes:
    """Compute time of one layer (dense, or MoE when ``moe``) for one micro-batch on one GPU; ``cp_split``:
    how context parallelism splits the attention into kernels (:class:`distcalc.compute.attention.CpSplit`).
    MoE: each local expert runs ``c·T·k·ep/E`` token slots (``c`` = ``capacity_factor``: padded to capacity, so
    the GEMMs and the permute move the padding too), and the router and permute kernels are
    :mod:`distcalc.compute.moe`'s (``router_kernels``: its (forward, backward) kernel counts)."""
    b, s, t = micro_batch, seq_len, tp
    h = dims.hidden
    tokens = np.multiply(b, np.divide(s, cp))
    sp = np.asarray(sequence_parallel) != 0
    stream = np.where(sp, np.divide(tokens, t), tokens) * h  # residual-stream elements on this rank

    projections = qkv_projections(dims, tokens, t)
    gemms = projections.gemms + [(1, tokens, h, np.divide(dims.heads * dims.v_head_dim, t))]
    experts: list[tuple[Any, Any, Any, Any]] = []  # the routed experts' grouped GEMMs (distcalc.compute.grouped)
    m = dims.mlp_matrices - 1  # fused gate+up = 2 column blocks
    if moe:
        local = np.divide(dims.experts, ep)
        per_expert = tokens * dims.experts_per_token * np.asarray(capacity_factor, dtype=float) / local
        gemms += [(1, tokens, dims.experts, h)]
        experts = [(local, per_expert, np.divide(m * dims.expert_ffn, t), h),
                   (local, per_expert, h, np.divide(dims.expert_ffn, t))]
        if dims.shared_ffn:
            gemms += [(1, tokens, np.divide(m * dims.shared_ffn, t), h), (1, tokens, h, np.divide(dims.shared_ffn, t))]
        act_elements = tokens * (dims.experts_per_token * dims.expert_ffn + dims.shared_ffn) / np.asarray(t, dtype=float)
        dispatch_tokens = np.where(sp, np.divide(tokens, t), tokens)  # the dispatcher's tokens (SP-sharded)
        perm_f, perm_b = permute_times(device, dispatch_tokens, dims.experts_per_token, h, capacity_factor, ep, local)
        router_f, router_b = router_times(device, tokens, dims.experts, router_kernels)
        moe_f, moe_b = perm_f + router_f, perm_b + router_b
    else:
        gemms += [(1, tokens, np.divide(m * dims.ffn, t), h), (1, tokens, h, np.divide(dims.ffn, t))]
        act_elements = tokens * dims.ffn / np.asarray(t, dtype=float)
        moe_f = moe_b = 0.0

    split: dict[int, list[tuple[Any, Any, Any, Any]]] = {}  # fused slots a PyTorch-native model runs as
    native = device.eager_elementwise and dims.rmsnorm          # separate linears (compute.pytorch_layer)
    if native:
        if not dims.kv_lora_rank:
            split[0] = separate_qkv(dims, tokens, t)
        if not moe and dims.gated:
            split[len(projections.gemms) + 1] = separate_gate_up(dims, tokens, t)
    fwd_gemm = dgrad = wgrad = 0.0
    per_gemm: list[tuple[ArrayLike, ArrayLike, ArrayLike]] = []
    gemm_inputs = gemm_outputs = 0.0  # elements: what FP8 quantises forward (inputs) and backward (output grads)
    for i, (batch, mm, nn, kk) in enumerate(gemms + experts):
        if i in split:
            parts = [_gemm_fwd_bwd(*part, device) for part in split[i]]
            f, dg, wg = (sum(part[j] for part in parts) for j in range(3))
        else:
            f, dg, wg = (expert_gemm_times(batch, mm, nn, kk, device, device.wgrad_accumulate_bytes) if i >= len(gemms)
                         else _gemm_fwd_bwd(batch, mm, nn, kk, device))
        fwd_gemm, dgrad, wgrad = fwd_gemm + f, dgrad + dg, wgrad + wg
        per_gemm.append((f, dg, wg))
        gemm_inputs = gemm_inputs + np.multiply(batch, np.multiply(mm, kk))
        gemm_outputs = gemm_outputs + np.multiply(batch, np.multiply(mm, nn))
    fp8_casts = len(gemms) + len(experts) if device.quantize_bytes_per_element else 0

    attn_fwd, attn_bwd = _attention_core(dims, device, b, s, t, cp, flash_attention, cp_split)

    drop = 1.0 if dims.hidden_dropout else 0.0
    eager = device.eager_elementwise
    act_fwd_b, act_bwd_b = (EAGER_SWIGLU_BYTES if eager else (6.0, 10.0)) if dims.gated else (4.0, 6.0)
    norm_fwd_b, norm_bwd_b = EAGER_RMSNORM_BYTES if eager and dims.rmsnorm else (4.0, 8.0)
    rope_b = EAGER_ROPE_BYTES if eager else 4.0
    rope_elements = projections.rope_elements
    latent = projections.latent_norm_elements  # MLA's latent RMSNorms (distcalc.compute.mla)
    norms = dims.block_norms
    # residual adds: sequential 2 x bias-dropout-add (read 2, write 1: 6 B); parallel one add of x and the two
    # branch outputs (read 3, write 1: 8 B), one dropout mask per branch (distcalc.model.blocks)
    add_fwd_b = (8.0 + 2 * drop) if dims.parallel_block else 2 * (6.0 + drop)
    fwd_bytes = (stream * (norms * norm_fwd_b + add_fwd_b) + act_elements * act_fwd_b + rope_elements * rope_b
                 + latent * norm_fwd_b)
    bwd_bytes = (stream * (norms * norm_bwd_b + 2 * 5.0) + act_elements * act_bwd_b + rope_elements * rope_b
                 + latent * norm_bwd_b)
    if fp8_casts:
        fwd_bytes = fwd_bytes + device.quantize_bytes_per_element * gemm_inputs
        bwd_bytes = bwd_bytes + device.quantize_bytes_per_element * gemm_outputs
    eager_kernels = sum(n * (norms / 2 if op == "rmsnorm" else 1) for op, n in EAGER_EXTRA_KERNELS.items()
                        if eager and {"rmsnorm": dims.rmsnorm, "swiglu": dims.gated, "rope": dims.rope}[op])
    adds = 1 if dims.parallel_block else 2
    kernels = 1 + norms + adds + (1 if dims.rope else 0) + projections.latent_norms + fp8_casts + eager_kernels
    bias_f, bias_b = local_bias_times(dims, device, tokens, stream, t, moe)
    native_f, native_b = native_code_times(dims, device, tokens, t, not moe) if native else (0.0, 0.0)
    fwd_el = elementwise_time_s(fwd_bytes, device, kernels) + moe_f + bias_f + native_f
    bwd_el = elementwise_time_s(bwd_bytes, device, kernels) + moe_b + bias_b + native_b

    forward = fwd_gemm + attn_fwd + fwd_el
    backward = dgrad + wgrad + attn_bwd + bwd_el
    r = np.asarray(recompute)
    flash = np.asarray(flash_attention) != 0
    op_sac = op_sac_recompute_gemm_s(dims, device, tokens, t, moe) + fwd_el + np.where(flash, 0.0, attn_fwd)
    recompute_s = np.where(r == Recompute.FULL.code, forward,
                           np.where((r == Recompute.SELECTIVE.code) & ~flash, attn_fwd,
                                    np.where(r == Recompute.SELECTIVE_OP.code, op_sac, 0.0)))
    return LayerTimes(forward_s=forward, backward_s=backward, recompute_s=recompute_s,
                      forward_gemm_s=fwd_gemm, forward_attention_s=attn_fwd, forward_elementwise_s=fwd_el,
                      backward_wgrad_s=wgrad, backward_dgrad_s=dgrad,
                      gemms_forward_s=tuple(g[0] for g in per_gemm), gemms_dgrad_s=tuple(g[1] for g in per_gemm),
                      gemms_wgrad_s=tuple(g[2] for g in per_gemm))


def local_bias_times(dims: ModelDims, device: DeviceCompute, tokens: ArrayLike, stream: ArrayLike, tp: ArrayLike,
                     moe: bool = False) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of the bias kernels Megatron-LM's local linears run unfused (module
    docstring): the QKV bias add forward, one bias-gradient reduction per biased linear backward (an MoE
    layer's experts are left out); (0, 0) unless ``device.unfused_linear_bias``."""
    if not device.unfused_linear_bias:
        return 0.0, 0.0
    qkv = tokens * np.divide(dims.qkv_width, tp)  # the column-parallel QKV output on this rank
    fc1 = tokens * (dims.mlp_matrices - 1) * np.divide(dims.ffn, tp)
    widths = [(dims.qkv_bias, qkv), (dims.out_bias, stream), (dims.mlp_bias and not moe, fc1),
              (dims.mlp_bias and not moe, stream)]
    grad_elements = sum((elements for biased, elements in widths if biased), start=0.0)
    grad_kernels = sum(1 for biased, _ in widths if biased)
    e = device.activation_bytes
    add_f = elementwise_time_s(qkv * LOCAL_BIAS_ADD_ACCESSES * e, device, 1) if dims.qkv_bias else 0.0
    grad_b = elementwise_time_s(grad_elements * LOCAL_BIAS_GRAD_ACCESSES * e, device, grad_kernels)
    return add_f, grad_b


def op_sac_recompute_gemm_s(dims: ModelDims, device: DeviceCompute, tokens: ArrayLike, tp: ArrayLike,
                            moe: bool = False) -> ArrayLike:
    """Forward seconds of the projections op-level selective checkpointing recomputes (every second
    ``aten.mm`` of the block, :func:`distcalc.op_checkpoint.op_sac_split`), TP-split as Megatron/DTensor
    split them (column-parallel outputs, row-parallel inputs)."""
    projections = block_projections(dims.hidden, dims.heads, dims.kv_heads, dims.head_dim, dims.v_head_dim,
                                    dims.ffn, dims.gated, with_mlp=not moe)
    total = 0.0
    for p in op_sac_split(projections)[1]:
        out_w = p.out_width if p.row_parallel else np.divide(p.out_width, tp)
        in_w = np.divide(p.in_width, tp) if p.row_parallel else p.in_width
        total = total + gemm_time_s(1, tokens, out_w, in_w, device)
    return total


@dataclass(frozen=True)
class HeadTimes:
    """Embedding (first pipeline stage) and output layer + loss (last stage), one micro-batch.
    ``output_wgrad_s``: the part of ``output_backward_s`` that is the logits weight-gradient GEMM (what a
    B/W-split schedule defers to its W pass)."""

    embedding_forward_s: ArrayLike
    embedding_backward_s: ArrayLike
    output_forward_s: ArrayLike
    output_backward_s: ArrayLike
    output_wgrad_s: ArrayLike = 0.0


def head_times(dims: ModelDims, device: DeviceCompute, micro_batch: ArrayLike, seq_len: ArrayLike,
               tp: ArrayLike, cp: ArrayLike = 1, sequence_parallel: ArrayLike = 0,
               cross_entropy: CrossEntropyKernel = CrossEntropyKernel.UNFUSED) -> HeadTimes:
    """Embedding lookup (write Tₑ·h; backward: PyTorch's dense embedding gradient — zero and write the
    V/t × h table in 16 bit, read it and accumulate into the fp32 ``main_grad``: 14 bytes per table
    element, plus reading the T·h output gradient), final norm, logits GEMM ``(1, T, V/t, h)`` with its two
    backward GEMMs (16-bit also under FP8 training: :func:`~distcalc.compute.device.sixteen_bit`), and the
    cross-entropy of the implementation ``cross_entropy`` names (:mod:`distcalc.compute.loss`: Megatron-Core's
    unfused vocabulary-parallel loss, 38 B per logit forward in 6 kernels and 14 backward in 2, or a fused one),
    at the GPU's measured rate for that kernel where compute.yaml has one."""
    device = sixteen_bit(device)
    tokens = np.multiply(micro_batch, np.divide(seq_len, cp))
    sp = np.asarray(sequence_parallel) != 0
    stream = np.where(sp, np.divide(tokens, tp), tokens) * dims.hidden
    emb_f = elementwise_time_s(stream * 2.0 * 2, device, 2)
    vocab_t = np.divide(dims.vocab, tp)
    emb_b = elementwise_time_s(tokens * dims.hidden * 2.0 + vocab_t * dims.hidden * 14.0, device, 3)
    f, dg, wg = _gemm_fwd_bwd(1, tokens, vocab_t, dims.hidden, device)
    logits = tokens * vocab_t
    ce_f, ce_b = cross_entropy_times(device, logits, cross_entropy)
    out_f = f + ce_f + elementwise_time_s(stream * 4.0, device, 1)
    out_b = dg + wg + ce_b + elementwise_time_s(stream * 8.0, device, 1)
    return HeadTimes(emb_f, emb_b, out_f, out_b, wg)
