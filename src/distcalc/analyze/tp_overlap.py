"""Tensor-parallel communication overlap as TransformerEngine's userbuffers run it (Megatron-Core / NeMo
``--tp-comm-overlap``): which GEMM hides which collective, what stays exposed, and the SMs the
communication kernels take from the GEMMs.

With sequence parallelism a Llama/GPT layer sends ten TP collectives per micro-batch
(:func:`distcalc.traffic.tp_layer_messages`). Userbuffers pairs every one of them with a GEMM of the same
layer (TE ``transformer_engine/pytorch/module/base.py`` ``initialize_ub`` default methods; NeMo
``nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py``, e.g.
``userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048``):

* **ring exchange** (split pipelined, Wang et al. 2023, "Overlap Communication with Dependent Computation via
  Decomposition in Large Deep Learning Models", ASPLOS '23): the forward AllGather of the norm output with
  the QKV and MLP-up GEMMs (``qkv_fprop``, ``fc1_fprop``) and the backward AllGather of the output gradient
  with the projection and MLP-down input-gradient GEMMs (``proj_dgrad``, ``fc2_dgrad``). The GEMM is split
  into t chunks (t = TP) and the t − 1 transfers of ``c/(t−1)`` each run beside t − 1 of them, so the
  collective of time ``c`` is hidden up to ``g·(t−1)/t`` of its GEMM's time ``g``: exposed
  ``max(0, c − g·(t−1)/t)``. These kernels take 1 SM (the transfers are peer-to-peer copies).
* **pipeline**: the forward ReduceScatter after the projection and MLP-down GEMMs (``proj_fprop``,
  ``fc2_fprop``): the GEMM in 4 chunks, each chunk's ReduceScatter beside the next chunk, the last one exposed
  (:func:`pipeline_exposed_s`), on 16 SMs.
* **bulk**: the backward re-gather of the sequence-sharded input beside the QKV / MLP-up input-gradient GEMM
  (``qkv_dgrad``, ``fc1_dgrad``) and the ReduceScatter of that input gradient beside the weight-gradient GEMM
  (``qkv_wgrad``, ``fc1_wgrad``): the whole collective beside the whole GEMM, exposed ``max(0, c − g)``,
  on 16 SMs.

Methods, SMs and splits are TE's defaults (``get_default_config``: ``num_sm`` 1 for ring exchange, else 16;
``num_splits`` t for ring exchange, else 4) — what ``--tp-comm-overlap`` runs without a configuration file.
NeMo's per-model configurations change them (e.g. ``userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048``: bulk on
2–4 SMs, the forward ReduceScatters as ring exchange on 1 SM); those are not modelled one by one.

While a collective runs beside its GEMM, the GEMM has S − k of the S SMs: it is slowed by ``k/(S − k)`` for
the overlapped time ``min(c, g)`` (the GEMM's waves spread over fewer SMs). Full recomputation re-runs the
forward pairs during the backward pass. Layers without sequence parallelism (AllReduce), and MoE layers,
keep the phase-level model of :mod:`distcalc.analyze.blocks`.

Not modelled: the efficiency the t-way split costs the GEMM itself (chunks of ``m/t`` rows), and the
difference between the userbuffers transfer and an NCCL collective of the same size (priced as NCCL).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ArrayLike = Any

#: SMs a ring-exchange overlap kernel takes (TE ``initialize_ub`` default ``num_sm`` 1 for ring_exchange)
RING_EXCHANGE_SMS = 1
#: SMs a bulk or pipeline overlap kernel takes (TE ``initialize_ub`` default ``num_sm`` 16 for the other methods;
#: NeMo's per-model configurations set 2-24)
BULK_SMS = 16
PIPELINE_SMS = 16
#: chunks of a pipelined GEMM + ReduceScatter (TE default ``num_splits`` 4 for the pipeline method)
PIPELINE_SPLITS = 4


@dataclass(frozen=True)
class UserbuffersExposure:
    """Exposed seconds of one layer's TP collectives for one micro-batch (arrays over configurations)."""

    forward_s: ArrayLike  #: forward pairs (also re-run by full recomputation)
    backward_s: ArrayLike  #: backward ring-exchange pairs (+ the recomputed forward pairs)
    bulk_s: ArrayLike  #: backward bulk pairs


def _sm_slowdown(sms_taken: int, sm_count: int) -> float:
    return sms_taken / max(sm_count - sms_taken, 1)


def ring_exchange_exposed_s(comm_s: ArrayLike, gemm_s: ArrayLike, tp: ArrayLike, sm_count: int) -> ArrayLike:
    """``max(0, c − g·(t−1)/t)`` plus the GEMM's slowdown on the SMs the kernel takes while they overlap."""
    t = np.asarray(tp, dtype=float)
    window = np.multiply(gemm_s, (t - 1.0) / np.maximum(t, 1.0))
    overlapped = np.minimum(comm_s, window)
    return np.maximum(np.subtract(comm_s, window), 0.0) + _sm_slowdown(RING_EXCHANGE_SMS, sm_count) * overlapped


def pipeline_exposed_s(comm_s: ArrayLike, gemm_s: ArrayLike, sm_count: int) -> ArrayLike:
    """GEMM then ReduceScatter in n = :data:`PIPELINE_SPLITS` chunks, chunk i's ReduceScatter beside GEMM chunk
    i + 1: the last chunk's ReduceScatter ``c/n`` is exposed, and ``(n−1)·max(0, c−g)/n`` where the transfers
    outrun the chunks; the GEMM is slowed on the kernel's SMs for the overlapped ``(n−1)/n·min(c, g)``."""
    n = float(PIPELINE_SPLITS)
    excess = (n - 1.0) * np.maximum(np.subtract(comm_s, gemm_s), 0.0) / n
    return (np.divide(comm_s, n) + excess
            + _sm_slowdown(PIPELINE_SMS, sm_count) * (n - 1.0) / n * np.minimum(comm_s, gemm_s))


def bulk_exposed_s(comm_s: ArrayLike, gemm_s: ArrayLike, sm_count: int) -> ArrayLike:
    """``max(0, c − g)`` plus the GEMM's slowdown on the bulk kernel's SMs while they overlap."""
    return (np.maximum(np.subtract(comm_s, gemm_s), 0.0)
            + _sm_slowdown(BULK_SMS, sm_count) * np.minimum(comm_s, gemm_s))


def userbuffers_exposure(all_gather_s: ArrayLike, reduce_scatter_s: ArrayLike, gemms_forward_s: tuple,
                         gemms_dgrad_s: tuple, gemms_wgrad_s: tuple, tp: ArrayLike, sm_count: int,
                         full_recompute: ArrayLike, parallel_block: bool = False) -> UserbuffersExposure:
    """Exposed time of the ten SP collectives of one dense layer (module docstring): ``all_gather_s`` and
    ``reduce_scatter_s`` are the times of ONE AllGather / ReduceScatter of the layer activation on the TP
    group; the GEMM tuples are :class:`distcalc.compute.layer.LayerTimes`' (QKV, projection, MLP up, MLP
    down). A parallel block (``parallel_block``, :mod:`distcalc.model.blocks`) has half the collectives: the
    one AllGather beside QKV and MLP-up together (PaLM's fused GEMM), the one ReduceScatter beside projection
    and MLP-down, and likewise backward."""
    qkv_f, proj_f, up_f, down_f = gemms_forward_s[:4]
    qkv_d, proj_d, up_d, down_d = gemms_dgrad_s[:4]
    qkv_w, _, up_w, _ = gemms_wgrad_s[:4]
    ag, rs = all_gather_s, reduce_scatter_s
    if parallel_block:
        forward = (ring_exchange_exposed_s(ag, qkv_f + up_f, tp, sm_count)
                   + pipeline_exposed_s(rs, proj_f + down_f, sm_count))
        backward = (ring_exchange_exposed_s(ag, proj_d + down_d, tp, sm_count)
                    + np.where(np.asarray(full_recompute) != 0, forward, 0.0))
        bulk = bulk_exposed_s(ag, qkv_d + up_d, sm_count) + bulk_exposed_s(rs, qkv_w + up_w, sm_count)
        return UserbuffersExposure(forward_s=forward, backward_s=backward, bulk_s=bulk)
    forward = (ring_exchange_exposed_s(ag, qkv_f, tp, sm_count) + pipeline_exposed_s(rs, proj_f, sm_count)
               + ring_exchange_exposed_s(ag, up_f, tp, sm_count) + pipeline_exposed_s(rs, down_f, sm_count))
    backward = (ring_exchange_exposed_s(ag, proj_d, tp, sm_count) + ring_exchange_exposed_s(ag, down_d, tp, sm_count)
                + np.where(np.asarray(full_recompute) != 0, forward, 0.0))
    bulk = (bulk_exposed_s(ag, qkv_d, sm_count) + bulk_exposed_s(rs, qkv_w, sm_count)
            + bulk_exposed_s(ag, up_d, sm_count) + bulk_exposed_s(rs, up_w, sm_count))
    return UserbuffersExposure(forward_s=forward, backward_s=backward, bulk_s=bulk)
