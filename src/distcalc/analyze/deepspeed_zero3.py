"""DeepSpeed ZeRO-3 step time: per-submodule AllGathers with DeepSpeed's prefetch and release policy, bucketed
gradient ReduceScatter, and the gradient copies, priced per block like :mod:`distcalc.analyze.fsdp`.

Per micro-batch on one rank with ``U`` blocks, block forward / backward compute ``f`` / ``b`` (with
recomputation), ``g`` the AllGather of one block's gathered parameters as DeepSpeed issues it (one
``all_gather_coalesced`` per submodule: :func:`distcalc.deepspeed_zero3.fetches_per_block` messages of equal
size), ``g_b`` the AllGather of the first prefetch (``min(prefetch_bucket, block)`` elements), ``g_E`` / ``g_H``
the embedding's / output layer's, ``r`` the ReduceScatter time of one block's share of the gradients (every
gradient, root included, reduced in buckets of ``reduce_bucket_size``: the time of a full bucket per element,
spread over the blocks), ``r_last`` the last bucket's and ``K`` the blocks kept gathered from forward to backward
(:func:`distcalc.deepspeed_zero3.kept_block_elements` / block elements). The gathers and the reduce-scatters are
on the same data-parallel process group, so one NCCL communicator runs them one after the other.

* forward: the embedding's gather has nothing before it; ``fetch_sub_module`` prefetches only after the current
  submodule's parameters arrived, so the first prefetch is exposed too, and the rest of the first block hides
  behind its compute: ``g_E + g_b + max(0, g − g_b − f) + (U − 1)·max(0, g − f) + max(0, g_H − f)``.
  Prefetching runs up to ``stage3_max_live_parameters`` ahead, so with uniform blocks the steady state is the
  per-block excess, as for FSDP.
* no prefetch: ``fetch_sub_module`` prefetches only ``min(max_live − available, prefetch_bucket)`` elements, so
  where ``stage3_max_live_parameters`` does not exceed the submodule being fetched (e.g. 0, as some published
  configurations set it) or the bucket is 0, every gather waits on the compute stream: forward
  ``g_E + U·g + g_H``; backward ``(U − K)·g`` plus the embedding's regather, beside which the reduce-scatters
  still overlap the backward with ``overlap_comm`` (``U·max(0, r − b)``) or not (``U·r``), then ``r_last``.
* backward with ``overlap_comm``: ``K`` blocks need no gather, ``U − K`` gather again; each block's
  reduce-scatter share runs beside its backward: ``K·max(0, r − b) + (U − K)·max(0, g + r − b)``, then the
  embedding's gather where it was released, hidden behind the first block's leftover window, and the last
  bucket, which ``independent_gradient_partition_epilogue`` waits for: ``+ r_last``.
* backward without ``overlap_comm``: the reduce-scatters run on the compute stream:
  ``(U − K)·max(0, g − b) + U·r + r_last`` (the root's share is in ``U·r``; ``r_last`` is its last bucket).
* contention: the overlapped compute runs ``slowdown`` slower (:data:`distcalc.analyze.fsdp.OVERLAP_COMPUTE_SLOWDOWN`).
* copies (:func:`deepspeed_grad_copy_s`): with ``contiguous_gradients`` each gradient is copied into the IPG
  bucket (stage3.py ``__add_grad_to_ipg_bucket``), and ``reduce_scatter_coalesced`` concatenates the bucket's
  padded gradients into its flat input (``torch.cat``): read + write ``2·e_g`` bytes per parameter each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.analyze.block_terms import DeepSpeedTimes, DpTerms, MicroBatchTerms
from distcalc.analyze.comm import GroupKey, message_times
from distcalc.analyze.fsdp import FsdpExposure
from distcalc.cluster import ClusterSpec
from distcalc.deepspeed_zero3 import (DeepSpeedZero3, block_persistent_elements, embedding_kept, fetches_per_block,
                                      kept_block_elements, last_bucket_elements)
from distcalc.traffic import Comm, Dim, Message, Phase

ArrayLike = Any


def deepspeed_zero3_exposure(units: ArrayLike, forward_s: ArrayLike, backward_s: ArrayLike, gather_s: ArrayLike,
                             first_bucket_s: ArrayLike, embed_gather_s: ArrayLike, head_gather_s: ArrayLike,
                             reduce_s: ArrayLike, last_bucket_s: ArrayLike, kept_units: ArrayLike,
                             embed_kept: ArrayLike, overlap_comm: bool, slowdown: float,
                             prefetch: ArrayLike = 1.0) -> FsdpExposure:
    """Exposed DeepSpeed ZeRO-3 communication and compute contention of one micro-batch (module docstring):
    ``units`` blocks of ``forward_s`` / ``backward_s`` compute, one block's ``gather_s`` and ``reduce_s``, the
    first prefetch ``first_bucket_s``, the embedding's / output layer's gathers, the last bucket's
    ReduceScatter ``last_bucket_s``, ``kept_units`` blocks not released after forward, ``embed_kept`` (1.0
    where the embedding is not released) and ``prefetch`` (0.0 where nothing is prefetched, so every gather
    waits on the compute stream)."""
    if not 0.0 <= slowdown < 1.0:
        raise ValueError(f"overlap compute slowdown {slowdown!r} must be in [0, 1)")
    u = np.asarray(units, dtype=float)
    f, b = np.asarray(forward_s, dtype=float), np.asarray(backward_s, dtype=float)
    g, r = np.asarray(gather_s, dtype=float), np.asarray(reduce_s, dtype=float)
    g_b = np.minimum(np.asarray(first_bucket_s, dtype=float), g)
    k = np.clip(np.asarray(kept_units, dtype=float), 0.0, u)
    on = np.where(u > 0, 1.0, 0.0)
    steps = np.maximum(u - 1.0, 0.0)
    pf = np.asarray(prefetch, dtype=float) > 0
    forward = np.where(pf, embed_gather_s + on * (g_b + np.maximum(g - g_b - f, 0.0)
                                                  + np.maximum(head_gather_s - f, 0.0)) + steps * np.maximum(g - f, 0.0),
                       embed_gather_s + u * g + on * head_gather_s)
    regather = u - k
    embed_again = (1.0 - np.asarray(embed_kept, dtype=float)) * embed_gather_s
    if overlap_comm:
        slack = np.maximum(b - (np.where(regather > 0, g, 0.0) + r), 0.0)  # the first block's leftover window
        backward = np.where(pf, k * np.maximum(r - b, 0.0) + regather * np.maximum(g + r - b, 0.0)
                            + on * np.maximum(embed_again - slack, 0.0),
                            regather * g + on * embed_again + u * np.maximum(r - b, 0.0)) + last_bucket_s
        overlapped_b = np.where(pf, k * np.minimum(b, r) + regather * np.minimum(b, g + r), u * np.minimum(b, r))
    else:
        backward = (np.where(pf, regather * np.maximum(g - b, 0.0), regather * g) + on * embed_again + u * r
                    + last_bucket_s)
        overlapped_b = np.where(pf, regather * np.minimum(b, g), 0.0)
    overlapped_f = np.where(pf, u * np.minimum(f, g), 0.0)
    return FsdpExposure(forward, backward, slowdown * overlapped_f, slowdown * overlapped_b)


def deepspeed_grad_copy_s(gradient_elements: ArrayLike, grad_bytes: float, contiguous_gradients: bool,
                          kernels: ArrayLike, bandwidth_bytes_per_s: float, kernel_overhead_s: float) -> ArrayLike:
    """Backward seconds of one micro-batch's gradient copies (module docstring): the IPG-bucket copy with
    ``contiguous_gradients`` and the flattening ``torch.cat`` of ``reduce_scatter_coalesced``, each a read and
    a write of every gradient in ``grad_bytes``; ``kernels``: copy kernels launched."""
    copies = 2.0 if contiguous_gradients else 1.0
    return (copies * np.asarray(gradient_elements, dtype=float) * 2.0 * grad_bytes / bandwidth_bytes_per_s
            + np.asarray(kernels, dtype=float) * kernel_overhead_s)


def deepspeed_times(cluster: ClusterSpec, keys: dict[Dim, GroupKey], d: Any, c: dict[str, np.ndarray],
                    cfg: DeepSpeedZero3, block_params: np.ndarray, param_bytes: float, grad_bytes: float,
                    ones: np.ndarray, memo: dict | None = None) -> DeepSpeedTimes:
    """Seconds and counts :func:`deepspeed_zero3_exposure` needs, per configuration
    (:class:`~distcalc.analyze.block_terms.DeepSpeedTimes`): one block's gathered elements in
    :func:`~distcalc.deepspeed_zero3.fetches_per_block` AllGathers, the first prefetch bucket, the embedding's
    and the output layer's gathers, one block's share of the bucketed ReduceScatter, the last bucket, the blocks
    and embedding kept gathered, the prefetch switch, the fraction of the forward's gathered elements gathered
    again in backward, the gradient elements and the gradient copy kernels. ``block_params``: one block's
    parameters on this rank (after TP/EP). The embedding and output layer are counted as on one stage
    (DeepSpeed ZeRO-3 runs without pipeline parallelism)."""
    tp = np.asarray(c["tp"], dtype=float)
    units = d.layers / np.asarray(c["pp"], dtype=float) * ones
    persistent = block_persistent_elements(d, tp, cfg.param_persistence_threshold_elements) * ones
    block = np.maximum(block_params - persistent, 0.0)  # gathered elements of one block
    embed = d.embedding_parameters / tp * ones
    final_norm = d.final_norm if d.final_norm <= cfg.param_persistence_threshold_elements else 0.0
    head = ((0.0 if d.tied_embeddings else d.lm_head_parameters) / tp + d.final_norm - final_norm) * ones
    fetches = fetches_per_block(d, c["ep"]) * ones
    total_grads = units * block_params + embed + head + final_norm
    bucket = np.minimum(float(cfg.reduce_bucket_elements), total_grads)
    last = last_bucket_elements(total_grads, cfg.reduce_bucket_elements)
    first = np.minimum(float(cfg.prefetch_bucket_elements), block)
    msgs = [Message(Dim.DP, Comm.ALL_GATHER, block / fetches * param_bytes, ones, Phase.FORWARD, True,
                    "DeepSpeed ZeRO-3 submodule AllGather"),
            Message(Dim.DP, Comm.ALL_GATHER, first * param_bytes, ones, Phase.FORWARD, True,
                    "DeepSpeed ZeRO-3 first prefetch AllGather"),
            Message(Dim.DP, Comm.ALL_GATHER, embed * param_bytes, ones, Phase.FORWARD, True,
                    "DeepSpeed ZeRO-3 embedding AllGather"),
            Message(Dim.DP, Comm.ALL_GATHER, head * param_bytes, np.where(head > 0, 1.0, 0.0), Phase.FORWARD, True,
                    "DeepSpeed ZeRO-3 output-layer AllGather"),
            Message(Dim.DP, Comm.REDUCE_SCATTER, bucket * grad_bytes, ones, Phase.BACKWARD, True,
                    "DeepSpeed ZeRO-3 gradient bucket ReduceScatter"),
            Message(Dim.DP, Comm.REDUCE_SCATTER, last * grad_bytes, ones, Phase.BACKWARD, True,
                    "DeepSpeed ZeRO-3 last gradient bucket ReduceScatter")]
    t = [times for _, times, _ in message_times(cluster, msgs, keys, ones.shape, memo)]
    per_element_rs = t[4] / np.maximum(bucket, 1.0)
    kept = kept_block_elements(units, block, head + final_norm, cfg.max_reuse_distance_elements)
    embed_kept = embedding_kept(units, block, head + final_norm, cfg.max_reuse_distance_elements)
    released = units * block - kept + (1.0 - embed_kept) * embed + (head if cfg.max_reuse_distance_elements <= 0 else 0.0)
    gather = fetches * t[0]
    reduce = per_element_rs * (total_grads - last) / np.maximum(units, 1.0)
    return DeepSpeedTimes(
        gather_s=gather, first_bucket_s=t[1], embed_gather_s=t[2], head_gather_s=t[3], reduce_s=reduce,
        last_bucket_s=t[5], kept_units=kept / np.maximum(block, 1.0), embed_kept=embed_kept,
        prefetch=np.where((cfg.prefetch_bucket_elements > 0) & (cfg.max_live_parameters > block / fetches), 1.0, 0.0),
        regathered=released / np.maximum(units * block + embed + head, 1.0), grad_elements=total_grads,
        copy_kernels=(units * (fetches + 1.0) if cfg.contiguous_gradients else 0.0)
        + np.ceil(total_grads / float(cfg.reduce_bucket_elements)))


def deepspeed_step_exposure(units: ArrayLike, mb: MicroBatchTerms, dpb: DpTerms, cfg: DeepSpeedZero3,
                            slowdown: float, param_bytes: float, device: Any) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds DeepSpeed ZeRO-3 adds to one micro-batch of the stage: the exposure and
    contention of :func:`deepspeed_zero3_exposure` on the times of :func:`deepspeed_times` (``dpb.deepspeed``)
    and the block compute of ``mb``, and in backward the gradient copies (:func:`deepspeed_grad_copy_s`, in the
    model dtype ``param_bytes``, at the slowest GPU's pace)."""
    ds = dpb.deepspeed
    exposure = deepspeed_zero3_exposure(units, mb.forward_s, mb.backward_s + mb.recompute_s, ds.gather_s,
                                        ds.first_bucket_s, ds.embed_gather_s, ds.head_gather_s, ds.reduce_s,
                                        ds.last_bucket_s, ds.kept_units, ds.embed_kept, cfg.overlap_comm, slowdown,
                                        ds.prefetch)
    copies = deepspeed_grad_copy_s(ds.grad_elements, param_bytes, cfg.contiguous_gradients, ds.copy_kernels,
                                   device.memory_bandwidth_bytes_per_s, device.kernel_overhead_s)
    return exposure.forward_s, exposure.backward_s + mb.slowest_gpu_factor * copies
