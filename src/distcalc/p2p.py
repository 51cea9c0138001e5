"""Point-to-point Send/Recv cost (spec collectives.md F27).

T = α + (h−1)·α_hop + M/B_min over the route's h GPU-to-GPU hops, where B_min is the slowest link on the
route (store-and-forward is not modelled: cut-through, spec A9). On switched topologies each switch traversal
is one hop and its latency is the sum of the link latencies (α on a switch; α1 inside a node and α2 across
nodes on hierarchical). To self (or
N = 1) the cost is 0 (a local copy). Source: nccl-tests sendrecv.cu L38-43 (busbw = algbw); ASTRA-sim
BasicTopology.cpp L53-54 (hops·latency + size/bw); scaling-book tpus.md L261 [V].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.collective.types import Algorithm, CollectiveCost, as_size
from distcalc.topology import Topology, kind_traits

SEND_RECV = "send-recv"


def send_recv_cost(size_bytes: Any, topo: Topology, src: int = 0, dst: int = 1) -> CollectiveCost:
    """Cost of sending ``size_bytes`` from rank ``src`` to ``dst`` (``dst`` defaults to 1; on a 1-GPU topology
    the default is the GPU itself). Works elementwise on a NumPy array of sizes."""
    m = as_size(size_bytes)
    if topo.gpus == 1 and dst == 1:
        dst = 0
    route = topo.route(src, dst)
    if not route:
        zero = m * 0.0
        return CollectiveCost(SEND_RECV, Algorithm.P2P, m, topo.gpus, zero, zero, zero,
                              0 if np.ndim(m) == 0 else np.zeros(np.shape(m), dtype=int), zero, "F27")
    gpu_hops = sum(1 for link in route if isinstance(link.dst, int))
    slowest = min(link.bandwidth_bytes_per_s for link in route)
    if kind_traits(topo.kind).direct:
        latency = topo.latency_s + (gpu_hops - 1) * topo.hop_latency_s
    else:
        latency = sum(link.latency_s for link in route) + (gpu_hops - 1) * topo.hop_latency_s
    bandwidth = m / slowest
    steps = 1 if np.ndim(m) == 0 else np.ones(np.shape(m), dtype=int)
    return CollectiveCost(SEND_RECV, Algorithm.P2P, m, topo.gpus, latency + bandwidth,
                          latency + 0.0 * m, bandwidth, steps, m * 1.0, "F27")
