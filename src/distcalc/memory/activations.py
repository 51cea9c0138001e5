"""Activation memory per transformer layer per micro-batch, the output layer, and in-flight micro-batches.

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198) §4, Table 2, 16-bit activations, s sequence, b micro-batch, h hidden, a heads, t TP:

* no parallelism: ``s·b·h·(34 + 5·a·s/h)``; TP baseline: ``s·b·h·(10 + 24/t + 5·a·s/(h·t))``;
  TP + SP: ``s·b·h/t·(34 + 5·a·s/h)``; TP + selective: ``s·b·h·(10 + 24/t)``;
  TP + SP + selective: ``s·b·h·34/t``; full recomputation: ``2·s·b·h`` per layer.

Those coefficients come from (per layer, bytes): attention ``11·sbh + 5·a·s²·b`` = LayerNorm input 2sbh,
QKV input 2sbh, Q and K 4sbh, softmax output 2as²b, its dropout mask as²b, dropout output 2as²b, V 2sbh,
output-projection input 2sbh, output dropout mask sbh; MLP ``19·sbh`` = LayerNorm input 2sbh, first linear
input 2sbh, GeLU input 8sbh, second linear input 8sbh, dropout mask sbh. Without SP the LayerNorm, QKV/first
linear inputs and dropout masks (10·sbh) are replicated on every TP rank; the rest is split by t.

Generalisations used here (they reduce to Table 2 for GPT-3-style models):

* **GQA / MLA**: Q is ``2·s·b·a·d_qk``, K ``2·s·b·g·d_qk``, V ``2·s·b·g·d_v``, context ``2·s·b·a·d_v``
  (g KV heads; MLA decompresses K and V for every head, g = a, d_qk = nope + rope); MLA also stores its query
  and key/value latents twice (the latent RMSNorm's input and the up projection's input, 2 B each per element
  of ``r_q + r_kv``), whole on every TP rank: the down projections run duplicated on the gathered tokens
  (:mod:`distcalc.compute.mla`).
* **MLP width f**: non-gated stores ``4·s·b·f`` (activation input and output); gated (SwiGLU) stores
  ``6·s·b·f`` (gate and up outputs 4sbf, product 2sbf), as Megatron-core's ``bias_swiglu`` saves its input.
* **MoE** layers: each of the k·c routed copies of a token (c: the capacity factor the inputs are padded to,
  or the busiest EP rank's load / the mean with dropless routing; ``moe_token_factor``) stores the expert
  input 2h, the expert output 2h (for the weighted combine) and the expert MLP ``(6 or 4)·f_e``; the MLP and
  the output are divided by t, the input is not — expert TP = TP AllGathers the dispatched copies over the TP
  group and the grouped GEMM saves the gathered input (:mod:`distcalc.analyze.moe_tp`); tokens are spread
  evenly over EP ranks, so each GPU sees k·s·b assignments; shared experts as a dense MLP of width f_s; the
  router's fp32 probabilities ``4·s·b·E``.
* **Parallel block** (:mod:`distcalc.model.blocks`): the block input 2sbh once and each of its 1 or 2 norm
  outputs 2sbh once (the QKV and MLP-up GEMMs read the same norm output), instead of norm input + GEMM input
  for each sub-block (8·sbh); dropout masks as before (one per branch).
* **Dropout** masks (1 B/element) are stored only when the model's dropout probability is > 0 (Llama-style
  models train without dropout).
* **Flash attention** never stores the ``a·s²·b`` terms; it saves the fp32 softmax statistics ``4·a·s·b``.
* **Selective recompute** drops the ``a·s²·b`` terms (recomputed in backward); **full recompute** keeps the
  layer input ``2·s·b·h`` (split by t under SP, as Megatron checkpoints the SP-sharded hidden state). The
  activations recomputed for one layer and one micro-batch are a separate *recompute workspace* line.
* **Op-level selective recompute** (torchtitan, :mod:`distcalc.op_checkpoint`) keeps the block input
  ``2·s·b·h`` (split by t under SP), the outputs of the projections it saves (Llama: wq ``2·s·b·a·d_qk``,
  wv ``2·s·b·g·d_v``, w1 ``2·s·b·f`` split by t; w2 ``2·s·b·h``, split by t under SP) and, with flash
  attention, the SDPA output ``2·s·b·a·d_v`` and its fp32 statistics; the rest is recomputed. MoE layers keep
  their MoE MLP as without recompute (their experts are not ``aten.mm`` calls the policy counts).
* **Context parallelism** divides the sequence: every term uses s/cp tokens; scores use (s/cp)·s.

Every function takes plain numbers or NumPy arrays (elementwise; flags as bools / 0-1 arrays).
"""

from __future__ import annotations

import numpy as np

from distcalc.model.dims import ModelDims
from distcalc.parallel import Precision, Recompute, Schedule
from distcalc.memory.line_groups import representatives
from distcalc.row_groups import lexicographic_codes
from distcalc.schedules import peak_in_flight_counts

FP32_BYTES = 4.0
#: Bytes per element of a 16-bit activation, the default (:attr:`Precision.activation_bytes`).
ACTIVATION_BYTES_16 = Precision.BF16.activation_bytes
MASK_BYTES = 1.0  # dropout masks


def _as(x):
    return np.asarray(x, dtype=float)


def layer_activation_bytes(dims: ModelDims, moe, seq_len, micro_batch, tp, cp, sequence_parallel, recompute, flash,
                           moe_token_factor=1.0, activation_bytes: float = ACTIVATION_BYTES_16):
    """(stored, recompute_workspace) bytes of one transformer layer for one micro-batch on one GPU.

    ``moe`` selects the MoE or the dense MLP; ``recompute`` is the :class:`~distcalc.parallel.Recompute`
    code (0 none, 1 selective, 2 full); other flags are bools or 0/1 arrays; ``moe_token_factor`` the routed
    slots per mean routed token; ``activation_bytes`` per element (:attr:`~distcalc.precision.Precision.activation_bytes`
    of the configured dtype). See the module docstring."""
    s, b, t = _as(seq_len), _as(micro_batch), _as(tp)
    s_local = s / _as(cp)
    tokens = s_local * b
    t_rep = np.where(sequence_parallel, t, 1.0)  # divisor of the terms SP splits
    h = dims.hidden
    mask = MASK_BYTES if dims.hidden_dropout else 0.0
    # attention block
    # parallel block (distcalc.model.blocks): the block input once and each norm's output once (shared by QKV
    # and MLP-up), a dropout mask per branch; sequential: norm input + GEMM input per sub-block
    norm_and_inputs = (1 + dims.block_norms) if dims.parallel_block else 2
    replicated = tokens * h * (norm_and_inputs * activation_bytes + mask)  # norm input(s), QKV input, dropout mask
    split = tokens * activation_bytes * (dims.heads * dims.head_dim + dims.kv_heads * dims.head_dim
                                  + dims.kv_heads * dims.v_head_dim + dims.heads * dims.v_head_dim)  # Q, K, V, context
    scores = dims.heads * s_local * s * b * (activation_bytes + (MASK_BYTES + activation_bytes if dims.attention_dropout else 0.0))
    softmax_stats = FP32_BYTES * dims.heads * tokens
    core = np.where(flash, softmax_stats, scores)
    # MLP block
    mlp_inputs = 0 if dims.parallel_block else 2  # norm input, first-linear input (parallel: counted above)
    replicated = replicated + tokens * h * (mlp_inputs * activation_bytes + mask)  # + dropout mask
    per_width = (3.0 if dims.gated else 2.0) * activation_bytes  # 6 (gated) or 4 bytes per intermediate element
    dense_mlp = tokens * per_width * dims.ffn
    k = dims.experts_per_token * _as(moe_token_factor)
    moe_mlp = tokens * (k * (activation_bytes * h + per_width * dims.expert_ffn) + per_width * dims.shared_ffn)
    expert_input = np.where(moe, tokens * k * activation_bytes * h, 0.0)  # gathered over expert TP: not split by t
    latents = 2 * activation_bytes * tokens * dims.mla_latent  # MLA latents: duplicated on every TP rank
    router = FP32_BYTES * tokens * dims.experts
    mlp_split = np.where(moe, moe_mlp, dense_mlp)
    replicated = replicated + np.where(moe, router, 0.0)
    full_layer = replicated / t_rep + (split + mlp_split + core) / t + expert_input + latents
    selective = full_layer - np.where(flash, 0.0, scores) / t
    checkpoint = activation_bytes * tokens * h / t_rep
    op_sac = checkpoint + _op_sac_saved_bytes(dims, moe, tokens, t, t_rep, flash, activation_bytes) + np.where(
        moe, (tokens * h * (2 * activation_bytes + mask) + router) / t_rep + moe_mlp / t, 0.0)
    code = np.asarray(recompute)
    stored = np.where(code == Recompute.FULL.code, checkpoint,
                      np.where(code == Recompute.SELECTIVE.code, selective,
                               np.where(code == Recompute.SELECTIVE_OP.code, op_sac, full_layer)))
    return stored, np.maximum(full_layer - stored, 0.0)


def _op_sac_saved_bytes(dims: ModelDims, moe, tokens, t, t_rep, flash, activation_bytes):
    """Bytes op-level selective checkpointing saves besides the block input: the saved projections' outputs
    (column-parallel split by t; row-parallel outputs, reduce-scattered under SP, by ``t_rep``) and, with
    flash attention, the SDPA output and fp32 log-sum-exp (module docstring)."""
    split = dims.op_sac_moe if np.all(moe) else dims.op_sac_dense  # counted once per model (ModelDims)
    saved = sum(activation_bytes * tokens * p.out_width / (t_rep if p.row_parallel else t) for p in split.saved)
    sdpa = tokens * dims.heads * (activation_bytes * dims.v_head_dim + FP32_BYTES) / t
    return saved + np.where(flash, sdpa, 0.0)


def output_activation_bytes(dims: ModelDims, seq_len, micro_batch, tp, cp, sequence_parallel,
                            activation_bytes: float = ACTIVATION_BYTES_16):
    """(hidden, logits, loss_workspace) bytes of the output layer for one micro-batch on the last stage:
    final-norm and LM-head inputs ``4·s·b·h`` (split by t under SP), 16-bit logits ``2·s·b·V/t`` and the
    fp32 softmax the vocab-parallel cross-entropy saves for backward ``4·s·b·V/t`` (Korthikanti et al. §4.3:
    ``4·s·b·h/t·(1 + V/h)``)."""
    tokens = _as(seq_len) / _as(cp) * _as(micro_batch)
    t = _as(tp)
    hidden = 2 * activation_bytes * tokens * dims.hidden / np.where(sequence_parallel, t, 1.0)
    return hidden, activation_bytes * tokens * dims.vocab / t, FP32_BYTES * tokens * dims.vocab / t


def attention_score_buffer_bytes(dims: ModelDims, seq_len, micro_batch, tp, cp,
                                 activation_bytes: float = ACTIVATION_BYTES_16):
    """The persistent buffer Megatron-LM's non-flash core attention computes its raw scores into:
    ``CoreAttention.forward`` (``megatron/model/transformer.py``) takes a ``[b·a/t, s, s]`` tensor of the
    activation dtype from ``mpu.get_global_memory_buffer().get_tensor(..., "mpu")`` as the ``baddbmm`` output
    (``beta=0``), and ``GlobalMemoryBuffer.get_tensor`` (``megatron/core/utils.py``) keeps the largest tensor it
    ever handed out for that name for the life of the process (sail-sg/zero-bubble-pipeline-parallelism@93af65c).
    One buffer per GPU, reused by every layer and micro-batch: ``activation_bytes·b·(a/t)·(s/cp)·s``. The
    softmax output that autograd keeps (the ``a·s²·b`` terms of :func:`layer_activation_bytes`) is a separate
    tensor; this buffer is the scores before the softmax, held on top."""
    return (activation_bytes * _as(micro_batch) * dims.heads / _as(tp) * _as(seq_len) / _as(cp) * _as(seq_len))


def embedding_activation_bytes(dims: ModelDims, seq_len, micro_batch, tp, cp, sequence_parallel):
    """Embedding-dropout mask ``s·b·h`` (1 B, split by t under SP) for one micro-batch on the first stage;
    0 when the model has no embedding dropout."""
    if not dims.embedding_dropout:
        return np.zeros_like(_as(seq_len) * _as(micro_batch) * _as(tp))
    tokens = _as(seq_len) / _as(cp) * _as(micro_batch)
    return MASK_BYTES * tokens * dims.hidden / np.where(sequence_parallel, _as(tp), 1.0)


def in_flight_micro_batches(schedule, pp, stage, vpp, num_micro_batches):
    """Forward passes whose activations stage ``stage`` (0-based) holds at its peak, counted in
    (micro-batch × model chunk) units; each unit holds the activations of L/(pp·vpp) layers.

    * GPipe (Huang et al. 2019): all m micro-batches (× vpp chunks).
    * 1F1B (Narayanan et al. 2021 §2.2.1; Megatron ``forward_backward_pipelining_without_interleaving``):
      ``min(pp − stage, m)`` (warm-up pp − stage − 1 forwards, plus the one in steady state).
    * Interleaved (Megatron ``forward_backward_pipelining_with_interleaving``): warm-up
      ``2·(pp − stage − 1) + (vpp − 1)·pp`` chunk-forwards plus one, capped at m·vpp. On stage 0 this is
      ``L·(1 + (pp − 1)/(pp·vpp))`` layers' worth — Korthikanti et al. §4.2.3's interleaving factor.
    * Zero-bubble ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR, §3.1): peak memory
      ``pp·M_B`` on every stage (the same bound as 1F1B's first stage); we use ``min(pp, m)`` on every
      stage — an upper bound for stages > 0, whose deferred weight-gradient passes hold part of M_B.
    * zb-h1, ZB-H2, ZB-V, DualPipe, DualPipeV: the peak counted on the executed plan, activations held until
      a split backward's W (:func:`distcalc.schedules.peak_in_flight_counts`, in stage units: p on every
      ZB-H1 and ZB-V stage, 2p − 1 on every ZB-H2 stage, PP + 1 on DualPipe, p + 1/2 on DualPipeV — the
      papers' tables, tests).
    """
    code = np.asarray(schedule)
    p, i, v, m = (np.asarray(x, dtype=float) for x in (pp, stage, vpp, num_micro_batches))
    one_f_one_b = np.minimum(p - i, m)
    interleaved = np.minimum(2 * (p - i - 1) + (v - 1) * p + 1, m * v)
    closed = np.where(code == Schedule.GPIPE.code, m * v,
                      np.where(code == Schedule.INTERLEAVED.code, interleaved,
                               np.where(code == Schedule.ZERO_BUBBLE.code, np.minimum(p, m), one_f_one_b)))
    executed = Schedule.executed(code)
    if not np.any(executed):
        return closed
    return np.where(executed, executed_in_flight(code, pp, stage, num_micro_batches), closed)


def executed_in_flight(schedule, pp, stage, num_micro_batches) -> np.ndarray:
    """Peak in-flight stage units of each (schedule, pp, stage, m) whose schedule code is executed (0 elsewhere).

    Every distinct (schedule, pp, m) of the rows contributes its plan's per-stage counts
    (:func:`~distcalc.schedules.peak_in_flight_counts`) to one table, laid end to end; each row reads its
    stage's entry of its plan's part with one gather (no NumPy pass per plan)."""
    code, p, s, m = (np.asarray(x).astype(np.int64) for x in np.broadcast_arrays(schedule, pp, stage, num_micro_batches))
    out = np.zeros(code.shape)
    index = np.flatnonzero(Schedule.executed(code))
    if not index.size:
        return out
    keys = [x.ravel()[index] for x in (code, p, m)]
    key_of, count = lexicographic_codes(keys)
    first = representatives(key_of, count)  # one row per plan
    plans = zip(*(key[first].tolist() for key in keys))
    peaks = [peak_in_flight_counts(*key) for key in plans]
    starts = np.cumsum([0] + [len(counts) for counts in peaks[:-1]])
    table = np.fromiter((x for counts in peaks for x in counts), dtype=float)
    stage_of = s.ravel()[index]
    if ((stage_of < 0) | (stage_of >= keys[1])).any():  # would read another plan's entry
        raise ValueError("executed_in_flight: a stage outside 0 .. pp - 1")
    out.flat[index] = table[starts[key_of] + stage_of]
    return out


def output_in_flight(schedule, num_micro_batches):
    """Micro-batches whose logits the last stage holds: all m under GPipe (all forwards before any backward),
    else 1 (the last stage runs each micro-batch's backward right after its forward)."""
    return np.where(np.asarray(schedule) == Schedule.GPIPE.code, np.asarray(num_micro_batches, dtype=float), 1.0)
