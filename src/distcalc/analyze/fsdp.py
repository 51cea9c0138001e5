"""ZeRO-3 / FSDP as PyTorch runs it: one AllGather and one ReduceScatter per FSDP unit, overlapped with the
neighbouring unit's compute, and what of it stays exposed.

PyTorch FSDP (Zhao et al. 2023, "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel", VLDB
16(12), §3.3-3.4 and §4) and FSDP2 as torchtitan applies it (``torchtitan/.../parallelize.py``:
``fully_shard`` on every transformer block, then on the root model; docs/fsdp.md) wrap each transformer
block as one *unit* and the embedding, final norm and output layer as the *root* unit. Per micro-batch,
with ``U`` units on this rank, per-unit forward compute ``f`` and backward compute ``b`` (with its
recomputation), per-unit AllGather ``g`` (parameters in the gathered dtype, bf16) and ReduceScatter ``r``
(gradients in the reduce dtype: fp32 in torchtitan's default ``MixedPrecisionPolicy(reduce_dtype=fp32)``,
bf16 in IBM's fms-fsdp ``bfSixteen``), and the root's ``g₀``, ``r₀``:

* forward: the root's gather and the first block's gather have nothing to hide behind (the embedding
  lookup is negligible); every later block's gather is issued one unit ahead (FSDP1 ``forward_prefetch``
  / FSDP2's implicit prefetch: the CPU runs ahead and the all-gather stream overlaps the current unit's
  compute), so it is exposed by ``max(0, g − f)``:
  ``exposed_fwd = g₀ + g + (U − 1)·max(0, g − f)``.
* backward: the last block is not resharded after forward (torchtitan: "do not reshard after forward for
  the last transformer block since FSDP would prefetch it immediately"; the root never is), so backward
  re-gathers ``U − 1`` blocks. While block ``i`` computes its backward, the communication stream runs the
  ReduceScatter of block ``i + 1`` and the prefetched AllGather of block ``i − 1`` (``BACKWARD_PRE``) —
  one after the other, on one NCCL communicator — so each of the ``U − 1`` steps exposes
  ``max(0, g + r − b)``; after the last block's backward its ReduceScatter and the root's are exposed
  (the optimizer step waits for them): ``exposed_bwd = (U − 1)·max(0, g + r − b) + r + r₀``.
* contention: while a collective runs, its NCCL kernels occupy SMs and HBM bandwidth, so the compute it
  overlaps runs slower (:mod:`distcalc.analyze.core` applies the same to overlapped DP and CP traffic). Lee et al. 2025 ("Characterizing Compute-Communication Overlap in GPU-Accelerated
  Distributed Deep Learning", arXiv:2507.03114) measured an average compute slowdown of 18.9 % (max
  40 %) for GPT and Llama layers overlapped with collectives on A100, H100, MI250 and MI210; the
  overlapped compute is ``(U − 1)·(min(f, g) + min(b, g + r))`` and pays that fraction on top.

* copies (FSDP2 only): FSDP2 shards every parameter on its own (DTensor) and all-gathers a unit's
  parameters into one flat buffer, so after each AllGather ``foreach_all_gather_copy_out`` splits the
  buffer into the unsharded parameters (``torch.split_with_sizes_copy``, on the compute stream: read + write
  ``2·e_p`` bytes per parameter), and before each ReduceScatter ``foreach_reduce_scatter_copy_in``
  concatenates the unsharded gradients into the reduce-scatter input in the reduce dtype (``torch.cat`` on
  the reduce-scatter stream, which the compute stream then waits for: ``e_p + e_r`` bytes per parameter)
  (PyTorch ``torch/distributed/_composable/fsdp/_fsdp_collectives.py``, 2024). FSDP1's ``FlatParameter``
  gathers into and reduces from the flat buffer the unit's parameters are views of, so it copies nothing.
  Per micro-batch: forward ``(U·P_u + P_0)·2·e_p``, backward ``(U − 1)·P_u·2·e_p + (U·P_u + P_0)·(e_p + e_r)``
  bytes at the achievable HBM bandwidth, one kernel per unit and copy (:func:`fsdp_copy_s`).

* copies (FSDP1 / ZeRO-3 flat buffers): the unit's parameters are views of its flat parameter
  (``FlatParamHandle._use_unsharded_views`` splits the gathered buffer with ``torch.split``), so no copy-out;
  but autograd returns the flat parameter's gradient through ``SplitWithSizesBackward``, which concatenates
  the views' gradients into a new flat tensor (``split_with_sizes_backward`` → ``at::cat``): read + write
  ``2·e_p`` bytes per parameter of every unit in backward (:func:`fsdp_flat_grad_copy_s`). DeepSpeed ZeRO-3
  likewise copies each gradient into its reduce bucket (``stage3.py`` ``__add_grad_to_ipg_bucket``).

* HSDP (hybrid sharding: FSDP1 ``ShardingStrategy.HYBRID_SHARD``, FSDP2 on a 2-D (replicate, shard) mesh):
  the parameters are sharded over a group of ``k`` ranks (FSDP1: the GPUs of one node) and replicated over
  the ``d/k`` groups. The per-unit AllGather and ReduceScatter run inside the shard group; the reduced
  gradient shard is then all-reduced over the replicate group ``a`` (FSDP1 ``_reduce_grad``: ``all_reduce``
  on ``_all_reduce_stream`` after the ReduceScatter, over the inter-node process group — another NCCL
  communicator, so it runs beside the next unit's gather and reduce-scatter). Per backward step
  ``max(0, max(g + r, a) − b)`` is exposed; at the end the last unit's ``r``, then its ``a`` beside the
  root's ``r₀``, then the root's ``a₀``: ``r + max(a, r₀) + a₀``; the overlapped backward compute is
  ``min(b, max(g + r, a))``. Without HSDP ``a = a₀ = 0`` and the formulas above are unchanged.

Prefetching more than one unit ahead changes only the start-up (the steady state is bound by
``max(compute, communication)`` per unit either way), so one unit of prefetch is modelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from distcalc.analyze.contention import OVERLAP_COMPUTE_SLOWDOWN

ArrayLike = Any


@dataclass(frozen=True)
class FsdpExposure:
    """Seconds of one micro-batch on one rank that FSDP adds to the compute (arrays over configurations)."""

    forward_exposed_s: ArrayLike  #: gathers not hidden behind forward compute
    backward_exposed_s: ArrayLike  #: gathers + reduce-scatters not hidden behind backward compute
    contention_forward_s: ArrayLike  #: extra forward compute time while collectives run beside it
    contention_backward_s: ArrayLike  #: extra backward compute time while collectives run beside it

    @property
    def forward_s(self) -> ArrayLike:
        """Everything FSDP adds to the forward pass."""
        return self.forward_exposed_s + self.contention_forward_s

    @property
    def backward_s(self) -> ArrayLike:
        """Everything FSDP adds to the backward pass."""
        return self.backward_exposed_s + self.contention_backward_s


def fsdp_exposure(units: ArrayLike, forward_s: ArrayLike, backward_s: ArrayLike, gather_s: ArrayLike,
                  reduce_s: ArrayLike, root_gather_s: ArrayLike, root_reduce_s: ArrayLike,
                  slowdown: float = OVERLAP_COMPUTE_SLOWDOWN, allreduce_s: ArrayLike = 0.0,
                  root_allreduce_s: ArrayLike = 0.0) -> FsdpExposure:
    """Exposed FSDP communication and compute contention of one micro-batch (module docstring formulas).

    ``units``: transformer blocks on this rank (may be fractional: a mean over stages); ``forward_s``,
    ``backward_s``: compute of one block; ``gather_s``, ``reduce_s``: one block's AllGather and
    ReduceScatter (in the shard group); ``root_*``: the root unit's (embedding, final norm, output layer);
    ``slowdown``: the fractional compute slowdown while a collective overlaps it; ``allreduce_s``,
    ``root_allreduce_s``: HSDP's AllReduce of a block's / the root's gradient shard over the replicate group
    (0 without HSDP)."""
    if not 0.0 <= slowdown < 1.0:
        raise ValueError(f"overlap compute slowdown {slowdown!r} must be in [0, 1)")
    u = np.asarray(units, dtype=float)
    f, b = np.asarray(forward_s, dtype=float), np.asarray(backward_s, dtype=float)
    g, r = np.asarray(gather_s, dtype=float), np.asarray(reduce_s, dtype=float)
    a, a0 = np.asarray(allreduce_s, dtype=float), np.asarray(root_allreduce_s, dtype=float)
    steps = np.maximum(u - 1.0, 0.0)
    on = np.where(u > 0, 1.0, 0.0)
    busy_b = np.maximum(g + r, a)  # the shard group's gather + reduce-scatter beside the replicate AllReduce
    forward = on * (root_gather_s + g) + steps * np.maximum(g - f, 0.0)
    backward = steps * np.maximum(busy_b - b, 0.0) + on * (r + np.maximum(a, root_reduce_s) + a0)
    return FsdpExposure(forward, backward, slowdown * steps * np.minimum(f, g),
                        slowdown * steps * np.minimum(b, busy_b))


def fsdp_flat_grad_copy_s(units: ArrayLike, unit_params: ArrayLike, root_params: ArrayLike, grad_bytes: float,
                          bandwidth_bytes_per_s: float, kernel_overhead_s: float) -> ArrayLike:
    """Backward seconds of one micro-batch's flat-gradient concatenation under FSDP1 / flat ZeRO-3 (module
    docstring): every unit's and the root's unsharded gradient read and written once in ``grad_bytes``
    (the gathered parameter dtype), one kernel per unit."""
    u = np.asarray(units, dtype=float)
    params = u * np.asarray(unit_params, dtype=float) + np.asarray(root_params, dtype=float)
    return params * 2.0 * grad_bytes / bandwidth_bytes_per_s + (u + 1.0) * kernel_overhead_s


def fsdp_copy_s(units: ArrayLike, unit_params: ArrayLike, root_params: ArrayLike, param_bytes: float,
                reduce_bytes: float, bandwidth_bytes_per_s: float, kernel_overhead_s: float) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of FSDP2's AllGather copy-out and ReduceScatter copy-in kernels of one
    micro-batch on one rank (module docstring): ``units`` blocks of ``unit_params`` parameters and the root's
    ``root_params``, parameters gathered in ``param_bytes`` and gradients reduced in ``reduce_bytes``."""
    u = np.asarray(units, dtype=float)
    regathered = np.maximum(u - 1.0, 0.0)
    gathered = u * np.asarray(unit_params, dtype=float) + np.asarray(root_params, dtype=float)
    forward = gathered * 2.0 * param_bytes / bandwidth_bytes_per_s + (u + 1.0) * kernel_overhead_s
    backward = ((regathered * unit_params * 2.0 * param_bytes + gathered * (param_bytes + reduce_bytes))
                / bandwidth_bytes_per_s + (regathered + u + 1.0) * kernel_overhead_s)
    return forward, backward
