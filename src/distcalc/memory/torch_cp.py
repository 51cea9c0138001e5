"""Buffers PyTorch's context-parallel ring attention (torchtitan's CP) holds while one layer's attention runs.

From PyTorch (pytorch/pytorch@0123248a) ``torch/distributed/tensor/experimental/_attention.py`` (the loop of
``_templated_ring_attention_backward``, whose buffers outlast the forward's): with E elements in each of this
rank's Q, K and V as SDPA sees them (``b·(s/cp)·(heads/t)·d``; torchtitan expands grouped K,V to all heads
with ``repeat_kv``, :mod:`distcalc.compute.torch_cp`) and ``e`` bytes per 16-bit element, the backward loop
holds at once:

* the rotated keys and values: ``_AllGatherRotater`` keeps the AllGather's output, K and V of all ``cp``
  ranks (``2·cp·E·e``); ``_AllToAllRotater`` the block being sent and the one being received (``2 × 2·E·e``);
* the ``contiguous()`` copies of K and V the loop starts from (``2·E·e``; torchtitan's are transposed views);
* FP32 (``convert_to_f32``) dQ accumulator (``4·E``), the received dK,dV buffer that this step adds into
  (``8·E``) and the concatenated dK,dV on its way to the next rank (``8·E``).

That is ``(2·cp + 2)·E·e + 20·E`` (all-gather) or ``6·E·e + 20·E`` (all-to-all). It is freed when the layer's
attention ends, so one layer's worth counts, next to the ZeRO-3 gathered layer in the buffers line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.model.dims import ModelDims
from distcalc.precision import Precision

ArrayLike = Any

#: bytes per element of the FP32 dQ accumulator and of the received and sent dK,dV buffers (4 + 8 + 8)
FP32_GRADIENT_BYTES_PER_ELEMENT = 20.0


def torch_cp_buffer_bytes(dims: ModelDims, micro_batch: ArrayLike, seq_len: ArrayLike, tp: ArrayLike,
                          cp: ArrayLike, allgather: bool,
                          element_bytes: float = Precision.BF16.activation_bytes) -> ArrayLike:
    """Bytes per GPU PyTorch ring CP holds during one layer's attention backward (module docstring); 0 where
    cp = 1. ``element_bytes``: per Q/K/V element, the configured dtype's activation bytes (SDPA runs 16-bit
    in every recipe)."""
    cp = np.asarray(cp, dtype=float)
    elements = (np.multiply(micro_batch, np.divide(seq_len, cp)) * np.divide(dims.heads, np.asarray(tp, float))
                * float(dims.head_dim))
    rotated = 2.0 * cp if allgather else 4.0
    held = (rotated + 2.0) * elements * element_bytes + FP32_GRADIENT_BYTES_PER_ELEMENT * elements
    return np.where(cp > 1, held, 0.0)
