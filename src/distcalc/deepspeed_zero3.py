"""DeepSpeed ZeRO-3 as DeepSpeed runs it: the parameter accounting its PartitionedParameterCoordinator implies
for its configuration (:mod:`distcalc.zero3_config`: sizes in elements, with DeepSpeed's defaults), shared by
the step-time model (:mod:`distcalc.analyze.deepspeed_zero3`) and the memory model.

Read from DeepSpeed v0.16.5 (commit 38327e0, 2025-02-21): ``deepspeed/runtime/zero/config.py``
(``DeepSpeedZeroConfig``), ``deepspeed/runtime/zero/partitioned_param_coordinator.py``
(``PartitionedParameterCoordinator``) and ``deepspeed/runtime/zero/stage3.py`` (``DeepSpeedZeroOptimizer_Stage3``):

* parameters are fetched per *submodule* (every ``nn.Module`` that owns parameters: each projection of a block),
  one ``all_gather_coalesced`` per fetch; after the current submodule's parameters arrive,
  ``fetch_sub_module`` issues prefetches of the next parameters of the recorded trace, up to
  ``stage3_prefetch_bucket_size`` elements per call and never beyond ``stage3_max_live_parameters`` elements
  available (gathered or in flight) at once;
* ``release_sub_module`` frees a submodule's gathered parameters after its forward unless the same parameters
  are used again within ``stage3_max_reuse_distance`` elements of the trace (``__params_to_release``: it
  walks the trace from the next submodule, adding each submodule's elements, and keeps every parameter met
  before the running sum reaches the distance);
* parameters of at most ``stage3_param_persistence_threshold`` elements are never partitioned (``ds_persist``):
  norms and biases stay whole on every rank and are never gathered;
* gradients go into an "IPG" bucket of ``reduce_bucket_size`` elements, reduce-scattered when the next gradient
  would overflow it (``reduce_independent_p_g_buckets_and_remove_grads``) and at the end of backward
  (``independent_gradient_partition_epilogue``), on a side stream with ``overlap_comm`` (the ZeRO-3 default);
  with ``contiguous_gradients`` each gradient is first copied into a flat buffer of ``reduce_bucket_size``
  elements in the model dtype, allocated once.

Reuse distance on a transformer: the trace is the forward (embedding, blocks 1..U, final norm, output layer) then
the backward in reverse. A parameter with ``x`` elements after it in the forward is next used after ``2·x``
elements of trace (the rest of the forward and the same modules back in backward), so it stays gathered from
its forward to its backward iff ``2·x < D``: the output layer (x = 0) whenever ``D > 0``, the last
``D/2 − tail`` elements of the blocks (``tail``: final norm + output layer), the embedding only when the whole
model fits in ``D/2``. Everything else is gathered again in backward.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.zero3_config import DeepSpeedZero3, Zero3Impl  # noqa: F401 (re-exported)

ArrayLike = Any


def block_vectors(dims: Any, tp: ArrayLike) -> list[tuple[ArrayLike, float]]:
    """(elements, count) of the one-dimensional parameters of one transformer block on this rank: norm weights
    (and LayerNorm biases) of ``h``, the QKV bias (``qkv_width/tp``), the output-projection bias (``h``), MLP
    biases (``ffn/tp`` per up/gate projection, ``h`` for the down projection)."""
    tp = np.asarray(tp, dtype=float)
    out = [(float(dims.hidden), float(dims.block_norms * (1 if dims.rmsnorm else 2)))]
    if dims.qkv_bias:
        out.append((dims.qkv_width / tp, 1.0))
    if dims.out_bias:
        out.append((float(dims.hidden), 1.0))
    if dims.mlp_bias:
        out += [(dims.ffn / tp, float(dims.mlp_matrices - 1)), (float(dims.hidden), 1.0)]
    return out


def block_persistent_elements(dims: Any, tp: ArrayLike, threshold: int) -> ArrayLike:
    """Elements of one block that ``stage3_param_persistence_threshold`` keeps whole (never gathered): each
    one-dimensional parameter (:func:`block_vectors`) of at most ``threshold`` elements
    (``parameter_offload.py`` ``mark_persistent_parameters``: ``param.ds_numel <= param_threshold``)."""
    return sum(np.where(numel <= threshold, numel * count, 0.0) for numel, count in block_vectors(dims, tp))


def fetches_per_block(dims: Any, ep: ArrayLike) -> ArrayLike:
    """Submodule fetches (AllGathers) of one block: the four attention projections (q, k, v, o as Hugging Face
    Llama/Mistral write them), the MLP projections (``mlp_matrices``), and in a MoE layer the router and each
    local expert's projections (``experts/ep`` experts) plus the shared expert's, averaged over the layers."""
    ep = np.maximum(np.asarray(ep, dtype=float), 1.0)
    moe = dims.moe_layers / max(dims.layers, 1)
    moe_fetches = 1.0 + dims.experts / ep * dims.mlp_matrices + (dims.mlp_matrices if dims.shared_ffn else 0.0)
    return 4.0 + (1.0 - moe) * dims.mlp_matrices + moe * moe_fetches


def kept_block_elements(units: ArrayLike, unit_elements: ArrayLike, tail_elements: ArrayLike,
                        reuse_distance: float) -> ArrayLike:
    """Gathered block elements not released between forward and backward (module docstring): the last
    ``D/2 − tail`` elements of the blocks, between 0 and all ``units · unit_elements`` of them."""
    total = np.asarray(units, dtype=float) * np.asarray(unit_elements, dtype=float)
    return np.clip(reuse_distance / 2.0 - np.asarray(tail_elements, dtype=float), 0.0, total)


def embedding_kept(units: ArrayLike, unit_elements: ArrayLike, tail_elements: ArrayLike,
                   reuse_distance: float) -> ArrayLike:
    """1.0 where the embedding stays gathered from forward to backward (``2·(blocks + tail) < D``), else 0.0."""
    after = np.asarray(units, dtype=float) * np.asarray(unit_elements, dtype=float) + tail_elements
    return np.where(2.0 * after < reuse_distance, 1.0, 0.0)


def last_bucket_elements(total_elements: ArrayLike, bucket_elements: int) -> ArrayLike:
    """Elements of the last gradient bucket, reduced at the end of backward: what is left of ``total`` after
    the full buckets (a full bucket when ``total`` is a multiple of it); ``total`` itself when smaller."""
    total = np.asarray(total_elements, dtype=float)
    full = np.maximum(np.ceil(total / bucket_elements) - 1.0, 0.0)
    return total - full * bucket_elements


def live_gathered_elements(gathered_total: ArrayLike, unit_elements: ArrayLike, kept: ArrayLike,
                           tail_elements: ArrayLike, max_live: int) -> ArrayLike:
    """Peak gathered (and in-flight) parameter elements on one rank: prefetching fills up to
    ``stage3_max_live_parameters``; the kept blocks and output layer plus the block being computed are there
    whatever that bound; never more than every gathered element of the rank."""
    floor = np.asarray(kept, dtype=float) + tail_elements + unit_elements
    return np.minimum(np.asarray(gathered_total, dtype=float), np.maximum(float(max_live), floor))


def buffer_bytes(cfg: DeepSpeedZero3, gathered_total: ArrayLike, unit_elements: ArrayLike, kept: ArrayLike,
                 tail_elements: ArrayLike, persistent_elements: ArrayLike, param_bytes: float,
                 reduce_bytes: float) -> dict[str, ArrayLike]:
    """ZeRO-3 buffers of one rank beyond the sharded model states, bytes: gathered parameters
    (:func:`live_gathered_elements`), the IPG bucket (``contiguous_gradients``: ``reduce_bucket_size`` elements
    in the model dtype, stage3.py ``__ipg_bucket_flat_buffer``) and the flattened ReduceScatter input of one
    bucket in the reduce dtype (``reduce_scatter_coalesced``: ``torch.cat`` of the padded gradients), and the
    persistent parameters held whole."""
    bucket = float(cfg.reduce_bucket_elements)
    live = live_gathered_elements(gathered_total, unit_elements, kept, tail_elements, cfg.max_live_parameters)
    flat = np.minimum(np.asarray(gathered_total, dtype=float) + persistent_elements, bucket)
    return {"gathered_params": live * param_bytes,
            "reduce_buckets": (bucket * param_bytes if cfg.contiguous_gradients else 0.0) + flat * reduce_bytes,
            "persistent_params": np.asarray(persistent_elements, dtype=float) * param_bytes}



def stage_buffer_bytes(dims: Any, cfg: DeepSpeedZero3, layers: ArrayLike, layer_params: ArrayLike,
                       embedding_params: ArrayLike, head_params: ArrayLike, tp: ArrayLike,
                       weight_bytes: float) -> ArrayLike:
    """Bytes of :func:`buffer_bytes` summed for one rank holding ``layers`` blocks of ``layer_params`` in all
    (after TP/EP) and the embedding / output layer (with final norm): DeepSpeed ZeRO-3 runs without pipeline
    parallelism, so the rank holds both. Gradients are reduced in the model dtype (``communication_data_type``
    defaults to it: ``deepspeed/runtime/engine.py``), so both buffers use ``weight_bytes``."""
    n = np.maximum(np.asarray(layers, dtype=float), 1e-9)
    persistent_block = block_persistent_elements(dims, tp, cfg.param_persistence_threshold_elements)
    unit = np.maximum(np.asarray(layer_params, dtype=float) / n - persistent_block, 0.0)
    final_norm = dims.final_norm if dims.final_norm <= cfg.param_persistence_threshold_elements else 0.0
    tail = np.asarray(head_params, dtype=float) - final_norm
    gathered = n * unit + embedding_params + tail
    kept = kept_block_elements(n, unit, tail + final_norm, cfg.max_reuse_distance_elements)
    lines = buffer_bytes(cfg, gathered, unit, kept, tail, n * persistent_block + final_norm, weight_bytes,
                         weight_bytes)
    return lines["gathered_params"] + lines["reduce_buckets"] + lines["persistent_params"]
