"""Transformer Engine's cached dummy weight gradients: persistent memory of one tensor per distinct weight shape.

With Megatron's gradient-accumulation fusion the weight-gradient GEMM writes straight into the fp32
``main_grad`` buffer, but autograd still expects a gradient of the weight's shape from the backward. From
release 2.3 Transformer Engine's ``Linear``/``LayerNormLinear``/``LayerNormMLP`` return
``get_dummy_wgrad(shape, dtype)`` (``transformer_engine/pytorch/module/base.py``): a tensor kept in a module-level
dict keyed by ``(rows, cols, dtype)`` and handed back on every later call, so it lives for the rest of the
process; ``GroupedLinear`` (MoE experts) does the same from release 2.10. The dtype is the parameter dtype
(16-bit), not the fp32 ``main_grad``. Per GPU this is one tensor per distinct (rows, cols) of the TE linears it
runs, whatever the number of layers (SimuMax models it the same way and names the releases:
MooreThreads/SimuMax@4dcaae5 ``simumax/core/config.py``, ``te_dummy_wgrad_min_version`` 2.3.0 and
``te_grouped_linear_dummy_wgrad_min_version`` 2.10.0; ``base_struct.py`` ``_record_te_dummy_wgrad_shape``).

Linears of a Megatron-Core layer on one rank (TP t, column-parallel rows and row-parallel columns split by t):
attention QKV ``(a + 2g)·d/t × h`` and output ``h × a·d_v/t`` (MLA instead: query down ``r_q × h`` and up
``a·d_qk/t × r_q``, key/value down ``(r_kv + d_rope) × h`` and up ``a·(d_nope + d_v)/t × r_kv``, output); dense MLP
``(2 or 1)·f/t × h`` and ``h × f/t``; MoE shared experts likewise with their width; routed experts (grouped)
``(2 or 1)·f_e/t × h`` and ``h × f_e/t``. The LM head is Megatron's own linear (its dummy is allocated per call, not
cached) and the router is not a TE module: neither is counted.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from distcalc.model.dims import ModelDims

#: element size of the dummy: the parameter dtype (16-bit) — ``get_dummy_wgrad(..., dtype=weight dtype)``
DUMMY_ELEMENT_BYTES = 2.0


class DummyWgrad(str, Enum):
    """Which TE modules keep a cached dummy weight gradient (module docstring)."""

    NONE = "none"  #: TE before 2.3, no TE, or no gradient-accumulation fusion
    LINEAR = "linear"  #: TE 2.3–2.9: Linear / LayerNormLinear / LayerNormMLP
    LINEAR_AND_GROUPED = "linear-and-grouped"  #: TE 2.10 and later: also GroupedLinear (MoE experts)


def te_dummy_wgrad_mode(te_version: tuple[int, int] | None, fused_wgrad_accumulation: bool = True) -> DummyWgrad:
    """The :class:`DummyWgrad` of a stack on Transformer Engine ``te_version`` (major, minor; None: no TE or not
    stated)."""
    if te_version is None or not fused_wgrad_accumulation or tuple(te_version) < (2, 3):
        return DummyWgrad.NONE
    return DummyWgrad.LINEAR_AND_GROUPED if tuple(te_version) >= (2, 10) else DummyWgrad.LINEAR


def _mlp_shapes(width: int, hidden: int, gated: bool) -> set[tuple[str, int, int]]:
    return {("col", (2 if gated else 1) * width, hidden), ("row", hidden, width)} if width else set()


def layer_weight_shapes(dims: ModelDims, dense: bool) -> set[tuple[str, int, int]]:
    """Distinct (split, rows, cols) of the TE linears of a dense (``dense``) or MoE layer before TP:
    ``split`` says which side TP divides ("col": rows, "row": cols, "dup": neither). Routed experts excluded
    (:func:`expert_weight_shapes`)."""
    h, a, g = int(dims.hidden), int(dims.heads), int(dims.kv_heads)
    if dims.kv_lora_rank:  # MLA (DeepSeek): down projections duplicated on every TP rank
        d_rope = int(dims.qk_rope_dim)
        d_qk, d_v = int(dims.head_dim), int(dims.v_head_dim)
        shapes = {("dup", int(dims.kv_lora_rank) + d_rope, h),
                  ("col", a * (d_qk - d_rope + d_v), int(dims.kv_lora_rank)), ("row", h, a * d_v)}
        if dims.q_lora_rank:
            shapes |= {("dup", int(dims.q_lora_rank), h), ("col", a * d_qk, int(dims.q_lora_rank))}
        else:
            shapes.add(("col", a * d_qk, h))
    else:
        shapes = {("col", (a + 2 * g) * int(dims.head_dim), h), ("row", h, a * int(dims.v_head_dim))}
    if dense:
        return shapes | _mlp_shapes(int(dims.ffn), h, dims.gated)
    return shapes | _mlp_shapes(int(dims.shared_ffn), h, dims.gated)


def expert_weight_shapes(dims: ModelDims) -> set[tuple[str, int, int]]:
    """Distinct (split, rows, cols) of one routed expert's grouped GEMMs before TP (empty for a dense model)."""
    return _mlp_shapes(int(dims.expert_ffn), int(dims.hidden), dims.gated)


def _bytes(shapes: set[tuple[str, int, int]], tp) -> np.ndarray:
    """Bytes of one dummy per distinct per-rank shape, elementwise in ``tp``; shapes that coincide on a rank
    share one dummy (the dict is keyed by the rank's shape)."""
    tp = np.asarray(tp, dtype=np.int64)
    out = np.zeros(tp.shape, dtype=float)
    for t in np.unique(tp):
        local = {(rows // t if split == "col" else rows, cols // t if split == "row" else cols)
                 for split, rows, cols in shapes}
        out[tp == t] = DUMMY_ELEMENT_BYTES * sum(rows * cols for rows, cols in local)
    return out


def dummy_wgrad_bytes(dims: ModelDims, mode: DummyWgrad, n_dense, n_moe, tp) -> np.ndarray:
    """Persistent bytes of the cached dummy weight gradients on a GPU holding ``n_dense`` dense and ``n_moe`` MoE
    layers at TP ``tp`` (elementwise): one tensor per distinct per-rank shape of the TE linears it runs."""
    n_dense, n_moe, tp = np.broadcast_arrays(np.asarray(n_dense, dtype=float), np.asarray(n_moe, dtype=float),
                                             np.asarray(tp))
    if mode is DummyWgrad.NONE:
        return np.zeros(n_dense.shape)
    dense, moe = layer_weight_shapes(dims, True), layer_weight_shapes(dims, False)
    if mode is DummyWgrad.LINEAR_AND_GROUPED:
        moe = moe | {(split, rows, cols) for split, rows, cols in expert_weight_shapes(dims)}
    both = _bytes(dense | moe, tp)
    only_dense, only_moe = _bytes(dense, tp), _bytes(moe, tp)
    return np.where((n_dense > 0) & (n_moe > 0), both,
                    np.where(n_dense > 0, only_dense, np.where(n_moe > 0, only_moe, 0.0)))
