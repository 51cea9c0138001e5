"""Block layouts users train: the parallel attention+MLP block and sliding-window attention.

**Parallel block** (Wang & Komatsuzaki 2021, GPT-J-6B, ``mesh-transformer-jax``; Black et al. 2022,
GPT-NeoX-20B, arXiv:2204.06745 §2.1 "parallel attention + FF layers"; Chowdhery et al. 2022, PaLM,
arXiv:2204.02311 §2 "Parallel Layers"; Jiang et al. 2024, MegaScale, arXiv:2402.15627 §3.1 "Parallel
transformer block")::

    sequential:  y = x + MLP(norm2(x + Attn(norm1(x))))        parallel:  y = x + Attn(norm(x)) + MLP(norm(x))

The weights and hence the FLOPs are those of the sequential block. What changes:

* **Tensor parallelism**: Megatron's ``g`` (AllReduce, or ReduceScatter with sequence parallelism) after the
  row-parallel output projection and after the second MLP GEMM become ONE collective of the summed branch
  outputs, and the ``f`` before QKV and MLP-up becomes one (the two column-parallel GEMMs read the same
  gathered input; PaLM fuses them into one GEMM). Per layer and micro-batch: forward 1 AllReduce (SP: 1
  AllGather + 1 ReduceScatter) instead of 2, backward likewise (MegaScale §3.1: the parallel block lets
  attention and MLP "execute in parallel, reducing the computation time" and the communication).
* **Norms**: GPT-J, PaLM and Falcon-7B share one input norm (``block_norms`` 1); GPT-NeoX's
  ``use_parallel_residual`` and Falcon-40B's ``new_decoder_architecture`` keep two norms of the same input
  (``block_norms`` 2).
* **Activations stored** (Korthikanti et al. 2022 §4.1 accounting): the block input once (2·sbh, shared by
  the norms' backward) and each norm's output once (2·sbh, shared by QKV and MLP-up with one norm), instead
  of 2 × (norm input + GEMM input) = 8·sbh; the residual add of three tensors is one kernel.

**Sliding-window attention** (Beltagy et al. 2020, Longformer, arXiv:2004.05150 §3.1; Jiang et al. 2023,
Mistral 7B, arXiv:2310.06825 §2 "Sliding Window Attention", W = 4096): query i (1-based) attends to the
``min(i, w)`` most recent keys. Per sequence of s tokens that is ``Σᵢ min(i, w)`` (query, key) pairs; in the
continuous form used for the causal case here (``s²/2``)::

    pairs(s, w) = s²/2                 (w ≥ s)
                = s·w − w²/2           (w < s)

The MFU convention (Korthikanti et al. 2022 App. A) counts the full ``s × s`` for causal attention, i.e.
twice the causal pairs; with a window it counts twice the attended pairs, i.e. an *effective key length*
``s_eff = 2·pairs/s = 2w − w²/s`` per query (``s`` when w ≥ s, so existing counts are unchanged). Fused
kernels with a window (FlashAttention-2 ``window_size``, Dao 2023, v2.3; cuDNN / TransformerEngine
``window_size``) skip the key blocks outside the band, so their work is ``pairs(s, w)``; the unfused path
computes and masks the whole ``s × s`` score matrix, so it saves nothing. Training memory is unchanged:
flash stores per-query statistics, the unfused path the full scores either way. The two counts are
:func:`distcalc.compute.flops.attended_pairs` and :func:`distcalc.compute.flops.effective_key_length`, beside
the FLOP counts that use them.
"""

from __future__ import annotations

#: Megatron ``f``/``g`` synchronisation points per layer and pass: sequential blocks 2, parallel blocks 1
SEQUENTIAL_TP_SYNCS = 2
PARALLEL_TP_SYNCS = 1


def tp_syncs_per_layer(parallel_block: bool) -> int:
    """Tensor-parallel ``g`` (and ``f``) collectives per layer and pass (module docstring)."""
    return PARALLEL_TP_SYNCS if parallel_block else SEQUENTIAL_TP_SYNCS
