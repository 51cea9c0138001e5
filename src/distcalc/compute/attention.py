"""Fused attention kernels: which implementation runs them, and how context-parallel ring attention splits a
rank's causal attention into kernels.

**Implementation** (:class:`AttentionKernel`). A GPU preset's ``flash_*_efficiency`` describes the fused
attention a current stack runs on it: cuDNN fused attention, which TransformerEngine selects on Hopper
whenever it is allowed (TE ``DotProductAttention``: "Select FusedAttention on sm90 and FlashAttention on
others for performance", v1.4 and later), or FlashAttention-3. ``flash2`` is the FlashAttention-2 package
(Dao 2023), which has no Hopper warpgroup-MMA / TMA code path and reaches about a third of H100 peak — what
TransformerEngine falls back to when cuDNN attention is switched off (``NVTE_FUSED_ATTN=0``; NeMo-Framework-
Launcher 24.01–24.07 set that for every training run, ``launcher_scripts/conf/config.yaml``: "Disable cudnn
FA until we've tested it more", added 2024-02-13, removed 2024-08-29). Its rates per GPU are the ``flash2``
entries of ``presets/compute.yaml`` (H100: Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, Fig. 5–6,
FlashAttention-2 at head dim 128, BF16, 16k tokens: 370 TFLOP/s forward non-causal, 335 causal, 322
backward; A100: the preset's own numbers, which are FlashAttention-2's). A GPU without a published
FlashAttention-2 rate refuses ``flash2``. ``flash1`` is the first FlashAttention package (Dao et al. 2022;
``flash_attn`` 1.x, ``flash_attn_unpadded_func``), the only flash kernel of stacks older than FlashAttention-2's
release (July 2023), e.g. Megatron-LM's ``--use-flash-attn`` at 285068c8 (January 2023). Dao 2023
(FlashAttention-2, arXiv:2307.08691), abstract: FlashAttention reaches "only 25-40% of the theoretical maximum
FLOPs/s" on A100 and FlashAttention-2 is "around 2× faster"; the ``flash1`` entries of ``presets/compute.yaml``
are therefore the GPU's FlashAttention-2 rates halved (A100: 0.325 forward, 0.275 backward, inside that band).

**Dropout.** Attention dropout inside the fused kernel draws its Philox mask in the forward and redraws it in
the backward; measured forward + backward overheads at p = 0.1 (:data:`CUDNN_SM90_DROPOUT_OVERHEAD` 3.4 %,
:data:`CUDNN_SM100_DROPOUT_OVERHEAD` 9.4 %, :data:`FLASH2_DROPOUT_OVERHEAD` 4.7 %; TransformerEngine issue
#3312 / PR #3313) scale both passes of a layer whose attention dropout is non-zero.

**Causal vs non-causal.** A causal kernel stops each query tile's loop at the diagonal, so the rows of tiles
carry triangular work and the diagonal tiles are computed in full and masked; it runs below the rate of a
non-causal kernel of the same useful FLOPs (FlashAttention-2 on H100 at 16k: 335 vs 370 TFLOP/s forward).
``flash_*_noncausal_efficiency`` carries the non-causal rate where a preset states it (else the causal one).

**Ring attention** (Megatron-Core / TransformerEngine ``AttnFuncWithCP``, Liu et al. 2023 "Ring Attention"):
the sequence is cut into ``2·cp`` chunks and rank r holds chunks r and 2cp−1−r (load-balanced causal split,
Megatron ``get_batch_on_this_cp_rank``), so every rank does the same causal work ``B_h·(s/cp)·s/2`` query–key
pairs in ``cp`` steps: step 0 is one *causal* kernel over the local ``s/cp`` queries and keys
(``B_h·(s/cp)²/2`` pairs); each of the ``cp−1`` later steps is one *non-causal* kernel of the local queries
against half the received keys, or half the queries against all of them (``B_h·(s/cp)²/2`` pairs). Between
kernels TE merges each step's partial output with the log-sum-exp correction and copies the half blocks
it feeds the kernel (TransformerEngine v1.4 ``transformer_engine/pytorch/attention.py``,
``flash_attn_fwd_out_correction``, ``dq.add_``/``dkv.add_``, ``.contiguous()`` halves). Per later step,
with E_q elements of this rank's queries (= outputs) and E_kv of its keys (= values), averaged over ranks
(half of the steps touch half a tensor): forward 5.5·E_q + 2·E_kv bytes (output merge read partial + read
and write running output, 3/4 of the steps' width: 4.5; half-block copy: 2·E_kv or 1·E_q), backward 7.5·E_q
+ 11·E_kv (dQ accumulation 4.5·E_q, dK and dV accumulation 9·E_kv, half copies of K,V or of Q, O, dO:
2·E_kv or 3·E_q), at ``η_mem`` of HBM bandwidth, with 3 extra kernels forward and 4 backward per step.
Ulysses (all-to-all) CP runs one causal kernel over the whole sequence for ``heads/cp`` heads and is priced
as one kernel.

**All-gather CP** (Llama 3, Dubey et al. 2024 §3.3.2; TransformerEngine ``AttnFuncWithCPAndKVAllGather``):
after gathering K and V each rank attends its two chunks c ∈ {r, 2cp−1−r} of q = s/2cp queries to the key
prefix they see, ``[0, (c+1)·q)``: two kernels, each a non-causal ``q × c·q`` rectangle plus a causal
``q × q`` diagonal block. Over the two chunks that is ``(2cp−1)·q²`` non-causal and two causal ``q²/2``
pairs — the same ``s²/2cp`` as the ring, without the merges (each kernel sees its whole key prefix).
"""

from __future__ import annotations

from dataclasses import replace
from enum import IntEnum
from typing import Any

import numpy as np

from distcalc.compute.device import (DeviceCompute, DropoutKernel, compute_preset_entry, compute_preset_names,
                                     dropout_kernel, elementwise_time_s)
from distcalc.errors import ConfigError
from distcalc.software import AttentionKernel

ArrayLike = Any

#: extra HBM bytes per element of one later ring step (module docstring): forward (per E_q, per E_kv),
#: backward (per E_q, per E_kv), and the extra kernels each step launches forward / backward
RING_MERGE_FORWARD_BYTES = (5.5, 2.0)
RING_MERGE_BACKWARD_BYTES = (7.5, 11.0)
RING_MERGE_KERNELS = (3, 4)


class CpSplit(IntEnum):
    """How a rank's causal attention splits into kernels under context parallelism (``layer_times(cp_split=…)``):
    one causal kernel (no CP, Ulysses), the ring's steps, all-gather's two prefix kernels, or PyTorch's ring
    steps with its eager FP32 merges (:mod:`distcalc.compute.torch_cp`). An ``IntEnum``: the vectorised
    formulas compare arrays of these integers against the members."""

    NONE = 0
    RING = 1
    ALLGATHER = 2
    TORCH = 3


#: the package each non-default kernel is, for messages
KERNEL_PACKAGE = {AttentionKernel.FLASH2: "FlashAttention-2", AttentionKernel.FLASH1: "FlashAttention-1"}


def attention_kernel_device(device: DeviceCompute, kernel: AttentionKernel) -> DeviceCompute:
    """``device`` with the attention rates of ``kernel`` (also on its 16-bit attention twin under FP8)."""
    kernel = AttentionKernel(kernel)
    if kernel is AttentionKernel.FUSED:
        return device
    entry = compute_preset_entry(device.name).get(kernel.value)
    if not entry:
        raise ConfigError(f"attention kernel {kernel.value}: no published {KERNEL_PACKAGE[kernel]} rate for GPU "
                          f"{device.name!r}; valid: fused (any GPU), {kernel.value} on "
                          f"{', '.join(kernel_gpus(kernel))}")
    rates = dict(flash_forward_efficiency=float(entry["forward_causal_efficiency"]),
                 flash_forward_noncausal_efficiency=float(entry["forward_efficiency"]),
                 flash_backward_efficiency=float(entry["backward_efficiency"]),
                 flash_backward_noncausal_efficiency=float(entry["backward_efficiency"]))
    rates["flash2_attention"] = True
    twin = replace(device.attention, **rates) if device.attention is not None else None
    return replace(device, attention=twin, **rates)


#: Attention dropout inside a fused attention kernel (Philox mask generated in the kernel, regenerated in the
#: backward): extra time of forward + backward at p = 0.1, as a fraction of the kernel without dropout.
#: cuDNN on sm90: H200, TE 2.15 ``DotProductAttention`` sbhd, 4096 tokens, 16 heads, d 128: 0.594 -> 0.614 ms;
#: cuDNN on sm100: B300, TE 2.14.1, same shape: 0.480 -> 0.525 ms (NVIDIA/TransformerEngine issue #3312);
#: FlashAttention-2 (2.7.4): 0.695 -> 0.728 ms, measured by the TE maintainers on GB200 (its sm80 code path,
#: the one A100s run; TransformerEngine PR #3313).
CUDNN_SM90_DROPOUT_OVERHEAD = (0.614 - 0.594) / 0.594
CUDNN_SM100_DROPOUT_OVERHEAD = (0.525 - 0.480) / 0.480
FLASH2_DROPOUT_OVERHEAD = (0.728 - 0.695) / 0.695
#: The overhead of each measured kernel. Which kernel a GPU preset runs by default is its ``compute.yaml``
#: field ``attention_dropout_kernel`` (TransformerEngine ``DotProductAttention``: "Select FusedAttention on
#: sm90 and FlashAttention on others"; Blackwell presets run cuDNN as on sm90, the kernel their flash rates
#: describe): sm80 presets FlashAttention-2, Hopper cuDNN sm90, Blackwell cuDNN sm100.
DROPOUT_OVERHEAD = {
    DropoutKernel.FLASH2: FLASH2_DROPOUT_OVERHEAD,
    DropoutKernel.CUDNN_SM90: CUDNN_SM90_DROPOUT_OVERHEAD,
    DropoutKernel.CUDNN_SM100: CUDNN_SM100_DROPOUT_OVERHEAD,
}


def attention_dropout_overhead(device: DeviceCompute) -> float:
    """Fraction a fused attention kernel with dropout runs slower than without (:data:`DROPOUT_OVERHEAD` of the
    device's default kernel, its preset's ``attention_dropout_kernel``; the FlashAttention-2 figure where
    ``flash2`` or ``flash1``, the same package's in-kernel dropout, was chosen); 0 for a device without a
    measurement (TPU)."""
    if device.flash2_attention:
        return FLASH2_DROPOUT_OVERHEAD
    kernel = dropout_kernel(device.name)
    return 0.0 if kernel is None else DROPOUT_OVERHEAD[kernel]


def kernel_gpus(kernel: AttentionKernel) -> list[str]:
    """GPU presets with a published rate for ``kernel`` (``flash1`` / ``flash2``)."""
    key = AttentionKernel(kernel).value
    return [name for name in compute_preset_names() if compute_preset_entry(name).get(key)]


def attention_efficiencies(device: DeviceCompute, head_dim: int, v_head_dim: int,
                           causal: bool = True) -> tuple[float, float]:
    """(forward, backward) fraction of peak of one fused attention kernel: the causal or the non-causal rate;
    MLA's unequal widths (DeepSeek-V2/V3: d_qk = 128 + 64 rotary = 192, d_v = 128) take cuDNN's kernel for
    unequal head dimensions, which SimuMax measured on a DGX B200 (TE 2.11 ``DotProductAttention``, causal) at
    0.43 forward / 0.33 backward against 0.59 / 0.45 at d_qk = d_v = 128 (compute.yaml ``flash_mla_*``; used
    for non-causal steps too, not measured apart); a device without that measurement keeps its rates."""
    eta_f, eta_b = device.flash_forward_efficiency, device.flash_backward_efficiency
    if not causal:
        eta_f = device.flash_forward_noncausal_efficiency or eta_f
        eta_b = device.flash_backward_noncausal_efficiency or eta_b
    if head_dim != v_head_dim:
        eta_f = device.flash_mla_forward_efficiency or eta_f
        eta_b = device.flash_mla_backward_efficiency or eta_b
    return eta_f, eta_b


#: query rows per thread block of the fused attention forward kernel at head dim 128: FlashAttention-3's
#: Hopper forward and FlashAttention-2's forward both use 128-row query tiles (Shah et al. 2024,
#: FlashAttention-3, arXiv:2407.08608, Sec. 4.1 "block sizes 128 x 128" for head dim 128; Dao 2023,
#: FlashAttention-2, Sec. 3.3, one thread block per query tile and head)
ATTENTION_QUERY_TILE = 128


def causal_forward_tail(sm_count: int, batch_heads: ArrayLike, q_len: ArrayLike) -> ArrayLike:
    """Factor on a causal forward kernel's time for its *tail*: ``1 + S / N`` with N = ``batch_heads ·
    ⌈q_len / 128⌉`` thread blocks on S SMs.

    The forward kernel gives each (head, 128-row query tile) one thread block, and under a causal mask the
    i-th query tile of a head visits i key tiles: the blocks carry triangular work from one key tile to the
    whole row. The SMs take blocks as they free up, so all SMs are busy until about ``W/S`` (W the total
    block work) and the kernel ends when the last blocks to start finish: one more block of average length
    ``W/N`` on its SM (list scheduling; Graham 1969, "Bounds on multiprocessing timing anomalies", whose
    bound ``W/S + p_max`` this is with the average block ``p̄`` in place of the longest). Hence
    ``t = (W/S)·(1 + S/N)`` against the ``W/S`` that prices the FLOPs alone. With thousands of blocks (long
    sequences, many heads per GPU) the factor is ~1; with 8 heads of 2048 tokens on an H100 (128 blocks on
    132 SMs) it is 2 — the blocks no longer fill two waves and the longest of them sets the time.
    Non-causal blocks have equal work (no triangular tail). The backward kernel is not given this factor:
    it parallelises over key tiles with query-tile loops whose decomposition is the kernel's own choice
    (distcalc's H100/H200 measurements, ``validate --set gpu-kernels``, do not support the same factor
    there; REFERENCES.md, "Attention and elementwise kernels against distcalc's H100/H200 measurements")."""
    blocks = np.multiply(batch_heads, np.ceil(np.divide(q_len, ATTENTION_QUERY_TILE)))
    return 1.0 + sm_count / np.maximum(blocks, 1.0)


def flash_attention_times(device: DeviceCompute, batch_heads: ArrayLike, q_len: ArrayLike, kv_len: ArrayLike,
                          head_dim: int, v_head_dim: int, causal: bool = True) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of one fused attention kernel (FlashAttention / cuDNN) over
    ``batch_heads`` independent heads: forward FLOPs ``F = 2·B_h·s_q·s_kv·(d + d_v)``, halved when causal
    (masked blocks skipped), at ``P·η_fwd`` and, causal, with the tail of its triangular thread blocks
    (:func:`causal_forward_tail`); backward ``2.5·F`` (it recomputes P: Dao 2023, FlashAttention-2,
    §3) at ``P·η_bwd``; η the causal or the non-causal rate (MLA's: :func:`attention_efficiencies`); plus one
    kernel overhead each. Like every tensor-core kernel of a training step, neither runs faster than the
    GPU's sustained power-limited rate ``P_power`` (:mod:`distcalc.compute.device`, "Power limit"): the
    kernels run back to back with the GEMMs, at the clock the board power cap allows. On B200 (1.09 PF) this
    binds the forward kernel (0.60 x 2.25 PF burst): SimuMax's DGX B200 measurement of the same kernel at
    131,072 tokens, long enough to reach the cap, runs at 1.13 PF (0.50 of peak causal; 0.60 at 32k)."""
    pairs = np.multiply(batch_heads, np.multiply(q_len, np.asarray(kv_len, dtype=float)))  # (query, key) pairs
    flops = (0.5 if causal else 1.0) * 2.0 * pairs * (head_dim + v_head_dim)
    eta_f, eta_b = attention_efficiencies(device, head_dim, v_head_dim, causal)
    rate_f = min(device.peak_flops_per_s * eta_f, device.power_limited_flops_per_s)
    rate_b = min(device.peak_flops_per_s * eta_b, device.power_limited_flops_per_s)
    tail = causal_forward_tail(device.sm_count, batch_heads, q_len) if causal else 1.0
    forward = tail * flops / rate_f + device.kernel_overhead_s
    backward = 2.5 * flops / rate_b + device.kernel_overhead_s
    return forward, backward


def ring_attention_times(device: DeviceCompute, batch_heads: ArrayLike, seq_len: ArrayLike, cp: ArrayLike,
                         head_dim: int, v_head_dim: int, q_elements: ArrayLike,
                         kv_elements: ArrayLike) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of one rank's causal attention under ring context parallelism with the
    load-balanced split (module docstring): one causal kernel over the local ``s/cp`` tokens, ``cp − 1``
    non-causal kernels of ``(s/cp) × (s/2cp)`` pairs, and the merges and half-block copies between them.
    ``q_elements`` / ``kv_elements``: this rank's query and key elements (b·s/cp·heads·d). cp = 1 is one
    causal kernel and nothing else."""
    local = np.divide(seq_len, cp)
    later = np.maximum(np.subtract(cp, 1), 0)
    diag_f, diag_b = flash_attention_times(device, batch_heads, local, local, head_dim, v_head_dim, causal=True)
    step_f, step_b = flash_attention_times(device, batch_heads, local, np.divide(local, 2.0), head_dim,
                                           v_head_dim, causal=False)
    qf, kvf = RING_MERGE_FORWARD_BYTES
    qb, kvb = RING_MERGE_BACKWARD_BYTES
    kf, kb = RING_MERGE_KERNELS
    merge_f = elementwise_time_s(later * (qf * np.asarray(q_elements, dtype=float) + kvf * kv_elements), device,
                                 later * kf)
    merge_b = elementwise_time_s(later * (qb * np.asarray(q_elements, dtype=float) + kvb * kv_elements), device,
                                 later * kb)
    return diag_f + later * step_f + merge_f, diag_b + later * step_b + merge_b


def allgather_attention_times(device: DeviceCompute, batch_heads: ArrayLike, seq_len: ArrayLike, cp: ArrayLike,
                              head_dim: int, v_head_dim: int) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of one rank's causal attention under all-gather context parallelism
    (module docstring): two kernels, together ``(2cp−1)·q²`` non-causal and ``2 × q²/2`` causal pairs with
    q = s/(2·cp), each with its own launch."""
    q = np.divide(seq_len, np.multiply(2.0, cp))
    rect_f, rect_b = flash_attention_times(device, batch_heads, q, np.multiply(q, np.subtract(np.multiply(2.0, cp), 1)),
                                           head_dim, v_head_dim, causal=False)
    diag_f, diag_b = flash_attention_times(device, batch_heads, q, q, head_dim, v_head_dim, causal=True)
    # two kernels in all: the rectangle and one diagonal block priced above carry one launch each, the
    # second diagonal block's work is added without a launch of its own
    launch = device.kernel_overhead_s
    return rect_f + 2.0 * diag_f - launch, rect_b + 2.0 * diag_b - launch
