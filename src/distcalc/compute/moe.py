"""Memory-bound kernels of an MoE layer around its experts: router top-k and token permute / unpermute.

Megatron-Core's all-to-all token dispatcher (``moe/token_dispatcher.py``, ``MoEAlltoAllTokenDispatcher``) with
``--moe-permute-fusion`` runs, per MoE layer and micro-batch on one rank holding ``T`` tokens:

* **Router** (``moe/router.py``): the gating GEMM ``(T, E, h)`` (priced with the layer's GEMMs), then on the
  ``T × E`` fp32 logits the score function, the top-k selection, the scatter of the chosen probabilities into
  the routing map and the auxiliary-loss sums: :data:`ROUTER_PASSES` reads or writes of the logits (4 B each)
  in :data:`ROUTER_KERNELS` kernels each way.
* **Permute + unpermute** (TransformerEngine ``moe_permute_with_probs`` / ``moe_unpermute``): the permute
  gathers each token's hidden vector into its ``k`` expert slots, the unpermute reads the ``k`` expert outputs
  back and writes their weighted sum. With ``C = k·c·T`` slots (``c`` the capacity factor; padded slots are
  moved too) the bytes are ``e·h·(3·C + T)`` each way (gather read + slot write, slot read + token write;
  the backward passes are the same gather/scatter reversed). These indexed row copies run far below the
  streaming bandwidth: :data:`PERMUTE_HBM_EFFICIENCY` of HBM, measured.
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
#: passes over the T × E fp32 router logits (score function, top-k, probability scatter, aux-loss sums) and
#: the kernels that make them, each way (Megatron-Core ``moe/router.py``, ``moe/moe_utils.py``)
ROUTER_PASSES = 4
ROUTER_KERNELS = 4
FP32_BYTES = 4.0


def permute_times(device: DeviceCompute, tokens: ArrayLike, top_k: int, hidden: int, capacity_factor: ArrayLike,
                  ep: ArrayLike, local_experts: ArrayLike, act_bytes: float = 2.0) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of permute + unpermute and the local-expert sort of one MoE layer on a rank
    holding ``tokens`` tokens (module docstring); the same bytes each way."""
    tokens = np.asarray(tokens, dtype=float)
    slots = tokens * top_k * np.asarray(capacity_factor, dtype=float)
    te_bytes = act_bytes * hidden * (3.0 * slots + tokens)
    te = (te_bytes / (device.hbm_bandwidth_bytes_per_s * PERMUTE_HBM_EFFICIENCY)
          + PERMUTE_KERNELS * device.kernel_overhead_s)
    sorting = (np.asarray(ep) > 1) & (np.asarray(local_experts) > 1)
    sort = np.where(sorting, elementwise_time_s(2.0 * 2.0 * act_bytes * hidden * slots, device, 2), 0.0)
    return te + sort, te + sort


def router_times(device: DeviceCompute, tokens: ArrayLike, experts: int) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of the router's elementwise work on the ``tokens × experts`` fp32 logits."""
    logits_bytes = ROUTER_PASSES * FP32_BYTES * np.multiply(tokens, experts)
    t = elementwise_time_s(logits_bytes, device, ROUTER_KERNELS)
    return t, t
