"""Context-parallel ring attention: how much of its K/V exchange the attention kernels hide.

Ring attention (TransformerEngine ``AttnFuncWithCP``) posts step i+1's K,V Send/Recv before running step
i's attention kernel: the cp − 1 transfers of a layer each overlap one of the cp equal steps (the load-balanced
split gives every step the same query–key pairs, :mod:`distcalc.compute.attention`), and the last step has no
transfer behind it. Per step the exposed part is ``max(t_transfer − t_step, 0)``, so per layer
``max(ring − (cp−1)/cp · attention, 0)`` forward, and the same against the backward attention (≈ 2 × the
forward time) for the K,V and dK,dV passes; the overlapped attention runs slower by the fraction κ of the GPU
the communication kernel takes while it runs, ``κ · min(ring, (cp−1)/cp · attention)``.

κ depends on the link the ring waits on:

* Within an NVLink domain κ is ``overlap_compute_slowdown`` (0.189; Lee et al. 2025, arXiv:2507.03114,
  collectives overlapped with transformer compute), the same as for the other overlapped collectives: an
  NVLink peer gets ``2 × NVLinks`` NCCL channels, one CTA each (NCCL ``ncclTopoGetNchannels``), a sizeable
  share of the SMs, and moves data at HBM-scale rates.
* When the CP group spans nodes the ring is paced by its network hops, and a network peer's Send/Recv runs
  on 2 channels per NIC (NCCL 2.20 ``ncclTopoGetNchannels``: "start from 2 channels per NIC"; today's NCCL
  uses ``max(NICs, ⌈B_NIC / 14 GB/s⌉)``). Its footprint is then those CTAs' share of the SMs plus its
  stream's share of HBM bandwidth: ``κ_net = 2 / SMs + B_NIC,GPU / B_HBM`` (H100 with 400 Gb/s per GPU:
  2/132 + 50/3350 ≈ 0.03).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.cluster import ClusterSpec
from distcalc.compute import DeviceCompute

ArrayLike = Any

#: NCCL channels (one CTA each) a Send/Recv to one network peer runs on (NCCL 2.20 ncclTopoGetNchannels)
NET_P2P_CHANNELS = 2


def network_p2p_slowdown(device: DeviceCompute, cluster: ClusterSpec) -> float:
    """κ_net: the share of the GPU a network Send/Recv takes while it runs (module docstring)."""
    hbm_share = cluster.inter_bandwidth_per_gpu_bytes_per_s / device.hbm_bandwidth_bytes_per_s
    return NET_P2P_CHANNELS / device.sm_count + hbm_share


def spans_nodes(cp: ArrayLike, cp_stride: ArrayLike, gpus_per_node: int) -> ArrayLike:
    """Whether a CP group of ``cp`` ranks at ``cp_stride`` crosses a node boundary (rank layout of
    :func:`distcalc.analyze.comm.group_keys`)."""
    return np.multiply(cp, cp_stride) > gpus_per_node


def ring_slowdown(cp: ArrayLike, cp_stride: ArrayLike, device: DeviceCompute, cluster: ClusterSpec,
                  overlap_compute_slowdown: float) -> ArrayLike:
    """κ of the ring's overlapped attention: ``overlap_compute_slowdown`` within a node, the smaller
    :func:`network_p2p_slowdown` when the CP group spans nodes."""
    net = min(overlap_compute_slowdown, network_p2p_slowdown(device, cluster))
    return np.where(spans_nodes(cp, cp_stride, cluster.gpus_per_node), net, overlap_compute_slowdown)


def ring_exposed_s(ring_f: ArrayLike, ring_b: ArrayLike, attention_f: ArrayLike, kappa: ArrayLike,
                   cp: ArrayLike) -> tuple[ArrayLike, ArrayLike]:
    """(forward, forward + backward) seconds the ring's overlappable exchange adds to one layer: per step the
    excess of the transfer over the step's attention, plus the slowdown κ of the overlapped attention
    (module docstring)."""
    window = attention_f * np.divide(np.maximum(np.subtract(cp, 1), 0), np.maximum(cp, 1))
    forward = np.maximum(ring_f - window, 0.0) + kappa * np.minimum(ring_f, window)
    backward = np.maximum(ring_b - 2.0 * window, 0.0) + kappa * np.minimum(ring_b, 2.0 * window)
    return forward, forward + backward
