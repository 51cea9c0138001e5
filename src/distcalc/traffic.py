"""Messages each parallel dimension sends per training step (NCCL ``M`` convention, bytes).

Pure functions of plain numbers. Every size and count is computed with NumPy-friendly arithmetic
(``np.where`` instead of ``if`` on values), so the same functions serve one configuration (Python floats)
and a whole batch of configurations (NumPy arrays) in :mod:`distcalc.analyze` / search.

The *structure* of each message list is fixed (which collectives may appear); the *values* (size, count)
depend on the configuration. A message that does not occur for a configuration has ``count == 0``
(e.g. AllReduce when sequence parallelism replaces it by AllGather + ReduceScatter, or any message of a
dimension of degree 1). :func:`nonzero` drops those for reports.

Conventions (docs/design.md §2): ``M`` follows nccl-tests — AllReduce: the buffer; ReduceScatter:
the input (N × output shard); AllGather: the output (N × input shard); AllToAll: the per-rank send buffer;
Send/Recv: the message. Symbols: ``b`` micro-batch (sequences), ``s`` sequence length, ``h`` hidden size,
``e`` bytes per activation element (2 for bf16/fp16), ``t`` tensor-parallel degree.

Sources:

* Tensor parallelism: Shoeybi et al. 2019 (Megatron-LM, arXiv:1909.08053) §3 and Fig. 4 — the ``f``/``g``
  conjugate operators: two AllReduce of the layer activation ``b·s·h`` per layer in the forward pass (after
  the attention output projection and after the second MLP GEMM), two in the backward pass (input gradients
  of the column-parallel QKV and first MLP GEMMs).
* Sequence parallelism: Korthikanti et al. 2022 (arXiv:2205.05198) §4.2.2 and Fig. 5 — each AllReduce
  becomes ReduceScatter + AllGather of the same ``M = b·s·h·e`` (``g`` → RS, ``f`` → AG, conjugates in the
  backward pass), and the sequence-sharded input of each column-parallel GEMM is all-gathered *again* in
  the backward pass for the weight gradient (Megatron-LM ``megatron/core/tensor_parallel/layers.py``,
  ``LinearWithGradAccumulationAndAsyncCommunication.backward``: the AllGather is launched asynchronously
  and overlapped with the input-gradient GEMM; the ReduceScatter / AllReduce of the input gradient is
  overlapped with the weight-gradient GEMM). Those overlappable messages carry ``overlappable=True``.
* Recomputation: Korthikanti et al. 2022 §5 — full recompute re-runs the layer forward (its TP
  collectives included) during the backward pass; selective recompute re-runs only the attention core
  (QKᵀ, softmax, dropout, ×V), which has no TP communication.
* Pipeline: Narayanan et al. 2021 (arXiv:2104.04473) §2.2 and §4.1 — one activation ``b·s·h`` forward and
  one gradient of the same size backward per stage boundary per micro-batch; with the scatter/gather
  optimisation (default in Megatron-LM) or sequence parallelism each TP rank sends ``b·s·h/t`` over the
  inter-node link, and (scatter/gather without SP) the receiver all-gathers it over NVLink.
* Data parallelism / ZeRO: Rajbhandari et al. 2020 (ZeRO, arXiv:1910.02054) §7 — DP AllReduce of the
  gradients (= ReduceScatter + AllGather); ZeRO-1/2 and Megatron's distributed optimizer: ReduceScatter of
  gradients + AllGather of updated parameters; ZeRO-3: parameter AllGather in forward and again in
  backward plus gradient ReduceScatter (1.5× the DP volume). With gradient accumulation, DeepSpeed ZeRO-2/3
  reduce-scatter gradients every micro-batch and ZeRO-3 gathers parameters every micro-batch (forward and
  backward); ZeRO-0/1 reduce once per step.
* Context parallelism: ring attention (Liu et al. 2023, arXiv:2310.01889; Megatron-Core/TransformerEngine
  ``attn_fn_with_cp``): ``cp−1`` ring steps forward passing the K,V block of ``b·(s/cp)·2·h_kv`` elements,
  backward passes K,V and dK,dV (``2·(cp−1)`` steps). Ulysses (Jacobs et al. 2023, arXiv:2309.14509):
  AllToAll of Q, K, V before and of the output after attention, same again in backward.
* Expert parallelism: Lepikhin et al. 2020 (GShard, arXiv:2006.16668) / Megatron-Core MoE token dispatcher:
  AllToAll dispatch and combine per MoE layer in the forward pass, and both again in the backward pass;
  per-rank send buffer = tokens × top-k × capacity factor × ``h`` × ``e``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from distcalc.collective.types import CollectiveKind
from distcalc.p2p import SEND_RECV
from distcalc.parallel import Recompute

ArrayLike = Any  # float | int | numpy.ndarray (elementwise formulas)


class Dim(str, enum.Enum):
    """Parallel dimension that sends a message."""

    TP = "tp"
    CP = "cp"
    EP = "ep"
    PP = "pp"
    DP = "dp"


#: What a message is: every :class:`~distcalc.collective.CollectiveKind` plus point-to-point ``send-recv``
#: (values are the ``distcalc collective KIND`` spellings; derived so the two cannot drift apart).
Comm = enum.Enum("Comm", {**{kind.name: kind.value for kind in CollectiveKind}, "SEND_RECV": SEND_RECV},
                 type=str, module=__name__)


class Phase(str, enum.Enum):
    """When a message is sent: per micro-batch forward / backward / recompute, or once per step."""

    FORWARD = "forward"
    BACKWARD = "backward"
    RECOMPUTE = "recompute"
    STEP = "step"


@dataclass(frozen=True)
class Message:
    """One kind of message a parallel dimension sends.

    ``size_bytes`` is ``M`` in the NCCL convention; ``count`` is how many such collectives each rank runs
    per *unit* (per layer per micro-batch for TP/CP/EP, per stage boundary per micro-batch for PP, per
    step for DP unless ``phase`` says per micro-batch — see each function). Both may be NumPy arrays.
    ``overlappable`` marks messages the framework overlaps with independent compute.
    """

    dim: Dim
    collective: Comm
    size_bytes: ArrayLike
    count: ArrayLike
    phase: Phase
    overlappable: bool = False
    note: str = ""

    def total_bytes(self) -> ArrayLike:
        """``size_bytes × count``."""
        return np.multiply(self.size_bytes, self.count)


def nonzero(messages: list[Message]) -> list[Message]:
    """Drop messages whose count or size is zero (scalar configurations only)."""
    return [m for m in messages if float(np.max(m.count)) > 0 and float(np.max(m.size_bytes)) > 0]


def scale_counts(messages: list[Message], factor: ArrayLike) -> list[Message]:
    """Multiply every message's count by ``factor`` (e.g. layers per stage × micro-batches)."""
    return [replace(m, count=np.multiply(m.count, factor)) for m in messages]


def _present(degree: ArrayLike) -> ArrayLike:
    """1.0 where the dimension's degree is > 1, else 0.0 (degree 1 sends nothing)."""
    return np.where(np.asarray(degree) > 1, 1.0, 0.0)


def activation_bytes(micro_batch: ArrayLike, seq_len: ArrayLike, hidden: ArrayLike,
                     bytes_per_element: ArrayLike) -> ArrayLike:
    """``b·s·h·e``: bytes of one full layer activation of a micro-batch (the TP collective's ``M``)."""
    return np.multiply(np.multiply(micro_batch, seq_len), np.multiply(hidden, bytes_per_element))


def tp_layer_messages(micro_batch: ArrayLike, seq_len: ArrayLike, hidden: ArrayLike,
                      bytes_per_element: ArrayLike, tp: ArrayLike, sequence_parallel: ArrayLike,
                      recompute: ArrayLike, cp: ArrayLike = 1, syncs: ArrayLike = 2) -> list[Message]:
    """TP collectives of ONE transformer layer for ONE micro-batch (counts per layer per micro-batch).

    ``syncs``: the ``f``/``g`` pairs per layer — 2 for a sequential block (the counts below), 1 for a
    parallel attention+MLP block, whose two branches share one input gather and one output reduction
    (:mod:`distcalc.model.blocks`); every count scales by ``syncs/2``.

    Without SP (Megatron-LM ``f``/``g``): forward 2 × AllReduce(M), backward 2 × AllReduce(M) overlapped
    with the weight-gradient GEMMs of the column-parallel layers. With SP: forward 2 × AllGather(M) +
    2 × ReduceScatter(M); backward 2 × AllGather(M) on the critical path (conjugate of the forward RS),
    2 × ReduceScatter(M) overlapped with wgrad, and 2 × AllGather(M) re-gathering the saved sharded input
    for wgrad, overlapped with dgrad. ``M = b·(s/cp)·h·e``. Full recompute (``recompute == Recompute.FULL.code``) adds the
    forward's collectives again (phase RECOMPUTE); selective adds none.
    """
    m = activation_bytes(micro_batch, np.divide(seq_len, cp), hidden, bytes_per_element)
    on = _present(tp)
    sp = np.where(np.asarray(sequence_parallel) != 0, 1.0, 0.0)
    no_sp = 1.0 - sp
    full = Recompute.full_weight(recompute)
    on = on * np.divide(syncs, 2.0)
    tp_ = Dim.TP
    return [
        Message(tp_, Comm.ALL_REDUCE, m, 2 * on * no_sp, Phase.FORWARD, note="g after out-proj and MLP"),
        Message(tp_, Comm.ALL_GATHER, m, 2 * on * sp, Phase.FORWARD, note="g (SP) before QKV and MLP"),
        Message(tp_, Comm.REDUCE_SCATTER, m, 2 * on * sp, Phase.FORWARD, note="g-bar (SP) after out-proj, MLP"),
        Message(tp_, Comm.ALL_REDUCE, m, 2 * on * no_sp, Phase.BACKWARD, True, "f conjugate, overlaps wgrad"),
        Message(tp_, Comm.ALL_GATHER, m, 2 * on * sp, Phase.BACKWARD, note="conjugate of forward RS (SP)"),
        Message(tp_, Comm.REDUCE_SCATTER, m, 2 * on * sp, Phase.BACKWARD, True, "conjugate of AG, overlaps wgrad"),
        Message(tp_, Comm.ALL_GATHER, m, 2 * on * sp, Phase.BACKWARD, True, "re-gather input for wgrad (SP)"),
        Message(tp_, Comm.ALL_REDUCE, m, 2 * on * no_sp * full, Phase.RECOMPUTE, note="full recompute fwd"),
        Message(tp_, Comm.ALL_GATHER, m, 2 * on * sp * full, Phase.RECOMPUTE, note="full recompute fwd (SP)"),
        Message(tp_, Comm.REDUCE_SCATTER, m, 2 * on * sp * full, Phase.RECOMPUTE, note="full recompute fwd"),
    ]


def tp_embedding_messages(micro_batch: ArrayLike, seq_len: ArrayLike, hidden: ArrayLike,
                          bytes_per_element: ArrayLike, tp: ArrayLike, sequence_parallel: ArrayLike,
                          cp: ArrayLike = 1) -> list[Message]:
    """TP collectives of the vocabulary-parallel embedding (first stage) and output layer (last stage),
    per micro-batch. Embedding forward: AllReduce(M) (ReduceScatter with SP); output layer: ``f`` before
    the logits GEMM — identity forward / AllReduce backward (AllGather forward / ReduceScatter backward
    with SP). The cross-entropy's max/sum AllReduces move ``b·s·4`` bytes and are ignored.
    Megatron-LM ``core/tensor_parallel/layers.py`` (VocabParallelEmbedding, ColumnParallelLinear)."""
    m = activation_bytes(micro_batch, np.divide(seq_len, cp), hidden, bytes_per_element)
    on = _present(tp)
    sp = np.where(np.asarray(sequence_parallel) != 0, 1.0, 0.0)
    return [
        Message(Dim.TP, Comm.ALL_REDUCE, m, on * (1 - sp), Phase.FORWARD, note="embedding output"),
        Message(Dim.TP, Comm.REDUCE_SCATTER, m, on * sp, Phase.FORWARD, note="embedding output (SP)"),
        Message(Dim.TP, Comm.ALL_GATHER, m, on * sp, Phase.FORWARD, note="before logits GEMM (SP)"),
        Message(Dim.TP, Comm.ALL_REDUCE, m, on * (1 - sp), Phase.BACKWARD, note="logits input grad"),
        Message(Dim.TP, Comm.REDUCE_SCATTER, m, on * sp, Phase.BACKWARD, note="logits input grad (SP)"),
    ]


def pp_boundary_messages(micro_batch: ArrayLike, seq_len: ArrayLike, hidden: ArrayLike,
                         bytes_per_element: ArrayLike, tp: ArrayLike, pp: ArrayLike,
                         sequence_parallel: ArrayLike, scatter_gather: ArrayLike = 1,
                         cp: ArrayLike = 1) -> list[Message]:
    """Messages of ONE pipeline stage boundary for ONE micro-batch, per TP rank.

    Send/Recv of the activation forward and of its gradient backward, each ``b·(s/cp)·h·e / t`` when SP
    (the activation is already sequence-sharded) or the scatter/gather optimisation is on (Narayanan et al.
    2021 §4.1), else the full ``b·s·h·e``. Scatter/gather without SP then all-gathers the received chunks
    over the TP group (``M = b·s·h·e``) in each direction. Counts are 0 when ``pp == 1``.
    """
    full = activation_bytes(micro_batch, np.divide(seq_len, cp), hidden, bytes_per_element)
    on = _present(pp)
    sp = np.where(np.asarray(sequence_parallel) != 0, 1.0, 0.0)
    sg = np.where(np.asarray(scatter_gather) != 0, 1.0, 0.0) * _present(tp)
    sharded = np.maximum(sp, sg)
    p2p = np.where(sharded > 0, np.divide(full, tp), full)
    gather = on * sg * (1 - sp)
    return [
        Message(Dim.PP, Comm.SEND_RECV, p2p, on, Phase.FORWARD, note="activation to next stage"),
        Message(Dim.PP, Comm.SEND_RECV, p2p, on, Phase.BACKWARD, note="gradient to previous stage"),
        Message(Dim.TP, Comm.ALL_GATHER, full, gather, Phase.FORWARD, note="scatter/gather re-assembly"),
        Message(Dim.TP, Comm.ALL_GATHER, full, gather, Phase.BACKWARD, note="scatter/gather re-assembly"),
    ]


def dp_gradient_messages(parameters_per_gpu: ArrayLike, dp: ArrayLike, zero: ArrayLike,
                         micro_batches: ArrayLike, grad_bytes: ArrayLike = 2,
                         param_bytes: ArrayLike = 2, allreduce_sharded: ArrayLike = 0) -> list[Message]:
    """Data-parallel messages of one step, per rank. ``parameters_per_gpu`` = parameters this rank's model
    shard holds (after TP/PP/EP division, before ZeRO partitioning); counts are per step.

    * zero 0: AllReduce(P·g) once per step (bucketed and overlapped with backward).
    * zero 1 (and Megatron distributed optimizer): ReduceScatter(P·g) + AllGather(P·p) once per step.
    * zero 2: ReduceScatter(P·g) every micro-batch (DeepSpeed reduces partitioned gradients during each
      backward) + AllGather(P·p) once per step.
    * zero 3: AllGather(P·p) forward and backward every micro-batch + ReduceScatter(P·g) every micro-batch.
    Rajbhandari et al. 2020 §7.2 (volumes 2Ψ for stages 0–2, 3Ψ for stage 3 without accumulation).
    ``allreduce_sharded`` (zero 1 only): the full gradients are all-reduced although the optimizer states are
    partitioned — DeepSpeed's ``BF16_Optimizer`` all-reduces its fp32 accumulators (``get_grads_for_reduction``)
    and all-gathers the updated 16-bit parameters: AllReduce(P·g) + AllGather(P·p).
    """
    grads = np.multiply(parameters_per_gpu, grad_bytes)
    params = np.multiply(parameters_per_gpu, param_bytes)
    on = _present(dp)
    z = np.asarray(zero)
    m = np.asarray(micro_batches)
    rs_count = np.where(z >= 2, m, 1)
    full = (z == 0) | ((z == 1) & (np.asarray(allreduce_sharded) != 0))
    return [
        Message(Dim.DP, Comm.ALL_REDUCE, grads, on * np.where(full, 1.0, 0.0), Phase.BACKWARD, True,
                "gradient AllReduce"),
        Message(Dim.DP, Comm.REDUCE_SCATTER, grads, on * np.where((z >= 1) & ~full, rs_count, 0), Phase.BACKWARD,
                True, "gradient ReduceScatter"),
        Message(Dim.DP, Comm.ALL_GATHER, params, on * np.where((z == 1) | (z == 2), 1.0, 0.0), Phase.STEP,
                note="updated-parameter AllGather"),
        Message(Dim.DP, Comm.ALL_GATHER, params, on * np.where(z == 3, m, 0), Phase.FORWARD, True,
                "ZeRO-3 parameter AllGather (forward)"),
        Message(Dim.DP, Comm.ALL_GATHER, params, on * np.where(z == 3, m, 0), Phase.BACKWARD, True,
                "ZeRO-3 parameter AllGather (backward)"),
    ]


def cp_layer_messages(micro_batch: ArrayLike, seq_len: ArrayLike, kv_hidden: ArrayLike, q_hidden: ArrayLike,
                      bytes_per_element: ArrayLike, tp: ArrayLike, cp: ArrayLike,
                      ulysses: ArrayLike = 0, recompute: ArrayLike = 0, allgather: ArrayLike = 0) -> list[Message]:
    """Context-parallel messages of ONE attention layer for ONE micro-batch, per rank.

    Ring attention (``ulysses == 0``): forward ``cp−1`` Send/Recv of the local K,V block
    (``2·b·(s/cp)·h_kv·e/t``); backward ``cp−1`` of K,V and ``cp−1`` of dK,dV. Ulysses (``ulysses == 1``):
    AllToAll of Q (``b·(s/cp)·h_q·e/t``), K and V (``h_kv`` each) and the output (``h_q``) forward, the same
    four backward. All-gather (``allgather == 1``; Llama 3's CP, Dubey et al. 2024 §3.3.2, TransformerEngine
    ``AttnFuncWithCPAndKVAllGather``, Megatron ``--cp-comm-type all_gather``): AllGather of K and V over the
    whole sequence (``2·b·s·h_kv·e/t`` gathered) before the forward attention, again in the backward pass
    (TE re-gathers instead of keeping the full K,V), and a ReduceScatter of dK,dV; none of them overlapped
    ("KV all-gather between CP ranks is exposed"). ``h_kv`` = kv_heads × head_dim. Full recompute repeats the
    forward messages.
    """
    on = _present(cp)
    tokens = np.divide(np.multiply(micro_batch, seq_len), cp)
    kv_block = np.divide(2 * tokens * np.multiply(kv_hidden, bytes_per_element), tp)
    uly = np.where(np.asarray(ulysses) != 0, 1.0, 0.0)
    ag = np.where((np.asarray(allgather) != 0) & (uly == 0), 1.0, 0.0)
    ring = 1.0 - uly - ag
    kv_full = np.multiply(kv_block, cp)  # K and V of the whole sequence, as gathered
    steps = np.maximum(np.subtract(cp, 1), 0)
    q_block = np.divide(tokens * np.multiply(q_hidden, bytes_per_element), tp)
    kv_one = np.divide(tokens * np.multiply(kv_hidden, bytes_per_element), tp)
    full = Recompute.full_weight(recompute)
    return [
        Message(Dim.CP, Comm.SEND_RECV, kv_block, on * ring * steps, Phase.FORWARD, True, "ring K,V pass"),
        Message(Dim.CP, Comm.SEND_RECV, kv_block, on * ring * 2 * steps, Phase.BACKWARD, True,
                "ring K,V and dK,dV pass"),
        Message(Dim.CP, Comm.SEND_RECV, kv_block, on * ring * steps * full, Phase.RECOMPUTE, True, "recompute"),
        Message(Dim.CP, Comm.ALL_TO_ALL, q_block, 2 * on * uly, Phase.FORWARD, note="Ulysses Q in, O out"),
        Message(Dim.CP, Comm.ALL_TO_ALL, kv_one, 2 * on * uly, Phase.FORWARD, note="Ulysses K, V in"),
        Message(Dim.CP, Comm.ALL_TO_ALL, q_block, 2 * on * uly, Phase.BACKWARD, note="Ulysses dO, dQ"),
        Message(Dim.CP, Comm.ALL_TO_ALL, kv_one, 2 * on * uly, Phase.BACKWARD, note="Ulysses dK, dV"),
        Message(Dim.CP, Comm.ALL_TO_ALL, q_block, 2 * on * uly * full, Phase.RECOMPUTE, note="recompute"),
        Message(Dim.CP, Comm.ALL_TO_ALL, kv_one, 2 * on * uly * full, Phase.RECOMPUTE, note="recompute"),
        Message(Dim.CP, Comm.ALL_GATHER, kv_full, on * ag, Phase.FORWARD, note="all-gather K,V"),
        Message(Dim.CP, Comm.ALL_GATHER, kv_full, on * ag, Phase.BACKWARD, note="re-gather K,V"),
        Message(Dim.CP, Comm.REDUCE_SCATTER, kv_full, on * ag, Phase.BACKWARD, note="reduce-scatter dK,dV"),
        Message(Dim.CP, Comm.ALL_GATHER, kv_full, on * ag * full, Phase.RECOMPUTE, note="recompute"),
    ]


def ep_layer_messages(micro_batch: ArrayLike, seq_len: ArrayLike, hidden: ArrayLike,
                      bytes_per_element: ArrayLike, tp: ArrayLike, ep: ArrayLike, top_k: ArrayLike,
                      sequence_parallel: ArrayLike = 1, capacity_factor: ArrayLike = 1.0,
                      cp: ArrayLike = 1, recompute: ArrayLike = 0, probs: ArrayLike = 0) -> list[Message]:
    """Expert-parallel AllToAll of ONE MoE layer for ONE micro-batch, per rank: dispatch and combine in
    the forward pass, both again backward (and again in recompute when full). Per-rank send buffer
    ``M = tokens_per_rank × top_k × capacity × h × e`` with tokens_per_rank = ``b·s/cp`` (``/t`` with SP,
    as Megatron-Core's dispatcher works on the sequence-sharded tokens).

    ``probs`` (1): the dispatcher also sends each slot's routing probability in an AllToAll of its own after
    the tokens, and its gradient back (Megatron-Core ``core_v0.13.0`` onward, ``MoEAlltoAllTokenDispatcher.
    token_dispatch``: ``global_probs = all_to_all(self.ep_group, permuted_probs, ...)``; the experts apply
    them, so the combine carries weighted outputs): ``tokens_per_rank × top_k × capacity × e`` bytes, one
    message forward and one backward. Before, the probabilities stayed on the source rank (0)."""
    on = _present(ep)
    sp = np.where(np.asarray(sequence_parallel) != 0, 1.0, 0.0)
    tokens = np.divide(np.multiply(micro_batch, seq_len), cp)
    tokens = np.where(sp > 0, np.divide(tokens, tp), tokens)
    m = tokens * np.multiply(np.multiply(top_k, capacity_factor), np.multiply(hidden, bytes_per_element))
    full = Recompute.full_weight(recompute)
    m_probs = tokens * np.multiply(np.multiply(top_k, capacity_factor), bytes_per_element)
    dp = np.where(np.asarray(probs) != 0, 1.0, 0.0)
    return [
        Message(Dim.EP, Comm.ALL_TO_ALL, m, 2 * on, Phase.FORWARD, note="dispatch + combine"),
        Message(Dim.EP, Comm.ALL_TO_ALL, m, 2 * on, Phase.BACKWARD, note="dispatch + combine grads"),
        Message(Dim.EP, Comm.ALL_TO_ALL, m, 2 * on * full, Phase.RECOMPUTE, note="full recompute"),
        Message(Dim.EP, Comm.ALL_TO_ALL, m_probs, on * dp, Phase.FORWARD, note="routing probabilities"),
        Message(Dim.EP, Comm.ALL_TO_ALL, m_probs, on * dp, Phase.BACKWARD, note="routing-probability grads"),
        Message(Dim.EP, Comm.ALL_TO_ALL, m_probs, on * dp * full, Phase.RECOMPUTE,
                note="full recompute (routing probabilities)"),
    ]
