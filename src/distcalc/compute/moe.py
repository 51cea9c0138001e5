"""Memory-bound kernels of an MoE layer around its experts: router top-k and token permute / unpermute.

Megatron-Core's all-to-all token dispatcher (``moe/token_dispatcher.py``, ``MoEAlltoAllTokenDispatcher``) with
``--moe-permute-fusion`` runs, per MoE layer and micro-batch on one rank holding ``T`` tokens:

* **Router** (``moe/router.py`` ``TopKRouter.routing``, ``moe/moe_utils.py``; unfused, ``--moe-router-fusion``
  off, Megatron-Core's default): the gating GEMM ``(T, E, h)`` (priced with the layer's GEMMs), then a chain of
  small PyTorch ops on the ``T × E`` scores, one kernel each (an out-of-place ``scatter`` is a copy and the
  scatter, a sorted ``topk`` a selection and a sort), counted from Megatron-Core 23e00ed
  (:func:`router_kernel_counts`), forward / backward:

  - top-k (:data:`ROUTER_TOPK_KERNELS`, 12 / 5): softmax to fp32 and back (2), sorted ``topk`` (2), the
    probability map ``zeros_like().scatter()`` (3), the routing map ``zeros_like().int().scatter().bool()``
    (5); backward the gather of the scatter, the top-k's zero-fill and scatter, the cast and the softmax.
  - group-limited top-k (:data:`ROUTER_GROUP_LIMITED_KERNELS`, 11 / 2; ``--moe-router-num-groups`` /
    ``--moe-router-group-topk``, DeepSeek-V2's device-limited and V3's node-limited routing,
    ``group_limited_topk``): per-group sorted ``topk`` (2) and ``sum``, the groups' ``topk``, the group mask
    ``zeros_like`` + ``scatter_``, its expanded copy, ``bool``, ``~``, the out-of-place ``masked_fill`` (2);
    backward the ``masked_fill`` of the gradient (2).
  - token capacity (:data:`ROUTER_CAPACITY_KERNELS`, 6 / 1; ``apply_router_token_dropping`` when an expert
    capacity factor is set): ``topk`` over the tokens of each expert, the capacity mask
    ``zeros_like().scatter().bool()`` (4), the masked probabilities; backward their product.
  - auxiliary load-balancing loss (:data:`ROUTER_AUX_LOSS_KERNELS`, 16 / 7; ``--moe-aux-loss-coeff`` > 0 with
    ``aux_loss`` or ``seq_aux_loss``; Megatron-Core's default coefficient is 0): the scores for the loss
    (``compute_routing_scores_for_aux_loss``: softmax, sorted ``topk``, routing map: 8), the tokens per expert,
    ``switch_load_balancing_loss_func`` (4), the division by the batch, the logged copy (2); backward
    ``MoEAuxLossAutoScaler``'s ones × scale (2), the loss's products and softmax, and the sum of the two
    gradients into the logits.

  Each kernel moves the ``T × E`` tensor about once (4 B an element counted); at ``T·E`` ≈ 10⁶ the
  :attr:`~distcalc.compute.device.DeviceCompute.kernel_overhead_s` of each dominates. The ``topk`` scaling
  factor's multiply (1 kernel, DeepSeek's ``--moe-router-topk-scaling-factor``) is not counted.
* **Permute + unpermute** (TransformerEngine ``moe_permute_with_probs`` / ``moe_unpermute``): the permute
  gathers each token's hidden vector into its ``k`` expert slots, the unpermute reads the ``k`` expert outputs
  back and writes their weighted sum. With ``C = k·c·T`` slots (``c`` the capacity factor; padded slots are
  moved too) the bytes are ``e·h·(3·C + T)`` each way (gather read + slot write, slot read + token write;
  the backward passes are the same gather/scatter reversed). ``e`` is the bytes of an activation element
  (:attr:`~distcalc.compute.device.DeviceCompute.activation_bytes`, the configured dtype's): the dispatcher
  permutes, sorts and unpermutes the layer's ``hidden_states`` as they are, and under FP8 training the
  quantisation to FP8 happens afterwards, inside the experts' TransformerEngine ``GroupedLinear``
  (Megatron-LM 0014f13 ``moe/token_dispatcher.py``: ``dispatch_preprocess`` / ``dispatch_postprocess``
  ``permute`` and ``sort_chunks_by_idxs`` the 16-bit hidden states, ``combine_postprocess`` ``unpermute`` the
  experts' 16-bit outputs), so the permuted tokens are 16-bit in every recipe distcalc models.
  These indexed row copies run far below the streaming bandwidth: :data:`PERMUTE_HBM_EFFICIENCY` of HBM,
  measured.
* **Sort by local expert** (``sort_chunks_by_idxs``, TE ``moe_sort_chunks_by_index``): with ``ep > 1`` and more
  than one local expert the received chunks (ordered by source rank) are re-ordered by expert before the
  grouped GEMM and back before the combine all-to-all: two copies of the ``C`` slots (read + write) each way,
  at the device's streaming efficiency.

:data:`PERMUTE_HBM_EFFICIENCY` is not fitted to training runs: SimuMax measured TE's fused permute + unpermute
on a DGX B200 for the DeepSeek-V2 and -V3 layer shapes (``T`` = 4096, capacity factor 1;
``simu_tools/efficency_test/test_ce_permute_efficiency.py``) and published the bandwidth factors 0.5008
forward / 0.5108 backward of 8000 GiB/s over its own byte count ``e·(2·T·h + 6·C·h)`` plus 4 launches of 30 µs
(``configs/system/b200_bf16_ceperm.json``). That gives 0.49 / 0.80 ms forward for the two shapes; on the bytes
above (0.80 / 1.47 GB) less 4 kernel overheads each, 0.23 of the B200's 7.7 TB/s both ways. Other GPUs take
the same fraction of their HBM bandwidth (an assumption: the same TE kernels, not measured there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.compute.device import DeviceCompute, elementwise_time_s

ArrayLike = Any

#: achieved fraction of datasheet HBM bandwidth of TE's fused permute / unpermute kernels (module docstring)
PERMUTE_HBM_EFFICIENCY = 0.23
#: kernels of the fused permute + unpermute each way (SimuMax's measurement counts 4 launches)
PERMUTE_KERNELS = 4
#: (forward, backward) kernels of the unfused router's parts (module docstring; Megatron-Core 23e00ed
#: ``moe/router.py``, ``moe/moe_utils.py``)
ROUTER_TOPK_KERNELS = (12, 5)
ROUTER_GROUP_LIMITED_KERNELS = (11, 2)
ROUTER_CAPACITY_KERNELS = (6, 1)
ROUTER_AUX_LOSS_KERNELS = (16, 7)
FP32_BYTES = 4.0


def permute_times(device: DeviceCompute, tokens: ArrayLike, top_k: int, hidden: int, capacity_factor: ArrayLike,
                  ep: ArrayLike, local_experts: ArrayLike) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of permute + unpermute and the local-expert sort of one MoE layer on a rank
    holding ``tokens`` tokens (module docstring); the same bytes each way, ``device.activation_bytes`` per
    element."""
    act_bytes = device.activation_bytes
    tokens = np.asarray(tokens, dtype=float)
    slots = tokens * top_k * np.asarray(capacity_factor, dtype=float)
    te_bytes = act_bytes * hidden * (3.0 * slots + tokens)
    te = (te_bytes / (device.hbm_bandwidth_bytes_per_s * PERMUTE_HBM_EFFICIENCY)
          + PERMUTE_KERNELS * device.kernel_overhead_s)
    sorting = (np.asarray(ep) > 1) & (np.asarray(local_experts) > 1)
    sort = np.where(sorting, elementwise_time_s(2.0 * 2.0 * act_bytes * hidden * slots, device, 2), 0.0)
    return te + sort, te + sort


def router_kernel_counts(group_limited: bool = False, capacity: bool = True,
                         aux_loss: bool = False) -> tuple[int, int]:
    """(forward, backward) kernels of Megatron-Core's unfused top-k router (module docstring): the top-k, plus
    the group-limited selection, the capacity mask and the auxiliary loss where they run."""
    parts = [ROUTER_TOPK_KERNELS]
    parts += [ROUTER_GROUP_LIMITED_KERNELS] if group_limited else []
    parts += [ROUTER_CAPACITY_KERNELS] if capacity else []
    parts += [ROUTER_AUX_LOSS_KERNELS] if aux_loss else []
    return sum(f for f, _ in parts), sum(b for _, b in parts)


def router_times(device: DeviceCompute, tokens: ArrayLike, experts: int,
                 kernels: tuple[int, int] | None = None) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of the router's elementwise kernels on the ``tokens × experts`` scores,
    ``kernels`` (forward, backward) of them (default :func:`router_kernel_counts`'s), each moving the scores
    once."""
    forward, backward = router_kernel_counts() if kernels is None else kernels
    elements = np.multiply(tokens, experts)
    return (elementwise_time_s(forward * FP32_BYTES * elements, device, forward),
            elementwise_time_s(backward * FP32_BYTES * elements, device, backward))
