"""PyTorch's context-parallel ring attention (``torch.distributed.tensor.experimental.context_parallel``, the CP
that torchtitan runs): the kernels one rank runs for one layer's causal attention.

PyTorch (pytorch/pytorch@0123248a) ``torch/distributed/tensor/experimental/_attention.py`` replaces each
scaled-dot-product attention call by ``_templated_ring_attention`` (forward) and ``_templated_ring_attention_backward``. With the
default options (``_ContextParallelOptions``: ``enable_load_balance=True``, ``convert_to_f32=True``) the
sequence is cut into ``2·cp`` chunks and rank r holds chunks r and 2cp−1−r (head-tail load balancing), so
the attention kernels are those of Megatron's ring (:mod:`distcalc.compute.attention`): step 0 one causal
kernel over the local ``s/cp`` queries and keys, each of the ``cp − 1`` later steps one non-causal kernel
of ``(s/cp) × (s/2cp)`` pairs (all local queries against the first half of the received keys when the keys
come from a lower rank, ``i ≤ rank``; the second half of the queries against all of them otherwise). Each
kernel is the SDPA backend PyTorch dispatched (its own FlashAttention-2 for BF16 on Ampere/Hopper; distcalc's
``--attention-kernel`` picks the rates). Backward runs the SDPA backward op per step with the merged output
and log-sum-exp; it recomputes nothing beyond what the flash backward kernel itself recomputes.

What the eager code adds around the kernels, per layer, in bytes moved through HBM (E_q: this rank's query =
output elements, E_kv: its key (= value) elements as fed to SDPA; BF16 activations = 2 B, FP32 = 4 B). The
rank whose steps cost most paces the layer (the CP ranks meet at every collective), so a later step is
priced as the costlier of its two kinds:

* forward, once: ``key.contiguous()``, ``value.contiguous()`` (torchtitan's K,V are transposed views:
  2 copies, 8·E_kv), the first step's output cast to FP32 (6·E_q) and the final cast back (6·E_q): 12·E_q +
  8·E_kv, 4 kernels.
* forward, per later step: ``torch.cat`` of K and V into the send buffer (8·E_kv, 1 kernel; the loop builds
  it at steps 0 … cp−2, cp−1 times) and ``_SDPAMerger.step`` in FP32: cast 6, ``out − block_out`` 12,
  ``sigmoid(Δlse) · diff`` 8, ``out − …`` 12 bytes per merged output element, plus 5 small kernels on the
  log-sum-exp: 38·E_q in 9 kernels for a full step; a partial step (half the queries) merges E_q/2 and then
  ``_partial_update`` re-concatenates the whole running output (8·E_q) and log-sum-exp: 27·E_q in 11 kernels.
* backward, once: three FP32 ``zeros_like`` gradient buffers (4·E_q + 8·E_kv), ``contiguous`` K,V again
  (8·E_kv), step 0's accumulations ``grad += grad_`` (FP32 += BF16, 10 B per element: 10·E_q + 20·E_kv),
  its FP32 ``cat`` of dK,dV for the ring (16·E_kv), the final casts of dQ and dK,dV to BF16 (6·E_q +
  12·E_kv): 20·E_q + 64·E_kv, 11 kernels.
* backward, per later step: ``cat`` of K,V to send (8·E_kv) and of the FP32 dK,dV (16·E_kv), 2 kernels;
  keys from a lower rank add half-width dK,dV into the received buffer and re-concatenate it
  (``_partial_update``: 2 × (5 + 8)·E_kv) and dQ in full (10·E_q): 10·E_q + 26·E_kv, 5 kernels; keys from a
  higher rank add dK,dV in full (20·E_kv) and half of dQ then re-concatenate it (13·E_q), plus the
  ``logsumexp.chunk(...).contiguous()`` copy: 13·E_q + 20·E_kv, 5 kernels.

All at ``η_mem`` of HBM bandwidth (:func:`distcalc.compute.device.elementwise_time_s`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from distcalc.compute.attention import flash_attention_times
from distcalc.compute.device import DeviceCompute, elementwise_time_s, sixteen_bit
from distcalc.compute.flops import ModelDims, effective_key_length

ArrayLike = Any

#: (bytes per E_q, bytes per E_kv, kernels) of the eager code around the kernels (module docstring)
FORWARD_ONCE = (12.0, 8.0, 4)
FORWARD_STEP_FULL = (38.0, 8.0, 10)
FORWARD_STEP_PARTIAL = (27.0, 8.0, 12)
BACKWARD_ONCE = (20.0, 64.0, 11)
BACKWARD_STEP_LOWER_SOURCE = (10.0, 50.0, 7)
BACKWARD_STEP_HIGHER_SOURCE = (13.0, 44.0, 7)


@dataclass(frozen=True)
class TorchRingTimes:
    """Seconds of one rank's attention for one layer under PyTorch ring CP: the first step (causal kernel
    and the once-per-layer eager work), one later step (kernel and its eager work), and the totals."""

    first_forward_s: ArrayLike
    step_forward_s: ArrayLike
    first_backward_s: ArrayLike
    step_backward_s: ArrayLike
    forward_s: ArrayLike
    backward_s: ArrayLike


def _eager_s(device: DeviceCompute, cost: tuple[float, float, int], q_elements: ArrayLike,
             kv_elements: ArrayLike) -> ArrayLike:
    per_q, per_kv, kernels = cost
    return elementwise_time_s(per_q * np.asarray(q_elements, dtype=float) + per_kv * np.asarray(kv_elements,
                                                                                                 dtype=float),
                              device, kernels)


def torch_ring_attention_times(device: DeviceCompute, batch_heads: ArrayLike, seq_len: ArrayLike, cp: ArrayLike,
                               head_dim: int, v_head_dim: int, q_elements: ArrayLike,
                               kv_elements: ArrayLike) -> TorchRingTimes:
    """(module docstring) Kernels: one causal ``(s/cp)²`` kernel and ``cp − 1`` non-causal
    ``(s/cp) × (s/2cp)`` ones; eager work: the byte counts above, each later step the costlier of its two
    kinds. ``q_elements`` / ``kv_elements``: E_q and E_kv of this rank (b·s/cp·heads·d, K after torchtitan's
    ``repeat_kv``). cp = 1 leaves one causal kernel and the once-per-layer work."""
    local = np.divide(seq_len, cp)
    later = np.maximum(np.subtract(cp, 1), 0)
    diag_f, diag_b = flash_attention_times(device, batch_heads, local, local, head_dim, v_head_dim, causal=True)
    kern_f, kern_b = flash_attention_times(device, batch_heads, local, np.divide(local, 2.0), head_dim,
                                           v_head_dim, causal=False)
    q, kv = q_elements, kv_elements
    first_f = diag_f + _eager_s(device, FORWARD_ONCE, q, kv)
    first_b = diag_b + _eager_s(device, BACKWARD_ONCE, q, kv)
    step_f = kern_f + np.maximum(_eager_s(device, FORWARD_STEP_FULL, q, kv),
                                 _eager_s(device, FORWARD_STEP_PARTIAL, q, kv))
    step_b = kern_b + np.maximum(_eager_s(device, BACKWARD_STEP_LOWER_SOURCE, q, kv),
                                 _eager_s(device, BACKWARD_STEP_HIGHER_SOURCE, q, kv))
    return TorchRingTimes(first_f, step_f, first_b, step_b, first_f + later * step_f, first_b + later * step_b)


def torch_ring_layer_times(dims: ModelDims, device: DeviceCompute, micro_batch: ArrayLike, seq_len: ArrayLike,
                           tp: ArrayLike, cp: ArrayLike) -> TorchRingTimes:
    """:func:`torch_ring_attention_times` of one layer of ``dims``: ``heads/tp`` heads of ``micro_batch ×
    seq_len/cp`` queries in 16-bit precision; K and V enter SDPA with all ``heads`` (torchtitan's Llama
    ``Attention.forward`` expands grouped K,V with ``repeat_kv`` before ``scaled_dot_product_attention``),
    so E_kv = E_q; a sliding window scales every part by the fraction of pairs it keeps (as
    :func:`distcalc.compute.layer.layer_times` does for the other CP splits)."""
    device = sixteen_bit(device)
    local = np.divide(seq_len, cp)
    batch = np.multiply(micro_batch, np.divide(dims.heads, tp))
    q_elements = batch * local * float(dims.head_dim)
    times = torch_ring_attention_times(device, batch, seq_len, cp, dims.head_dim, dims.v_head_dim, q_elements,
                                       q_elements)
    if not dims.sliding_window:
        return times
    band = effective_key_length(seq_len, dims.sliding_window) / np.asarray(seq_len, dtype=float)
    return TorchRingTimes(*(band * np.asarray(getattr(times, f.name)) for f in fields(TorchRingTimes)))
