"""The system each row of the development set ran on: the cluster preset of its GPU and the fabrics that differ
from that preset's inter-node link, each from what the row's source states (read by
:func:`distcalc.validation.published.mapping.cluster_spec`)."""

from __future__ import annotations

# The system each GPU of the development set comes in (clusters.yaml).
CLUSTER_OF_GPU: dict[str, str] = {
    "a100-80gb": "dgx-a100",
    "h100-sxm-80gb": "dgx-h100",
    "b200": "dgx-b200",
    "gb200": "gb200-nvl72",
    "gb300": "gb300-nvl72",
    "a800-80gb": "dgx-a800",
    "h800-80gb": "dgx-h800",
    "h800": "dgx-h800",
    "h200": "hgx-h200",
    "h200-141gb": "hgx-h200",
    "h100-pcie-80gb": "h100-pcie-node",
    "a100-40gb": "dgx-a100",
}
# GPU column values whose GPU preset differs from the cluster's own GPU (same system, other part).
GPU_OVERRIDE: dict[str, str] = {"a100-40gb": "a100-40gb"}

# (phrase in cluster_network, inter-node link preset, NICs per node): fabrics that differ from the preset.
NETWORK_OVERRIDES: tuple[tuple[str, str, int], ...] = (
    # Jean Zay (BLOOM): 4 Omni-Path 100 Gb/s NICs per 8-GPU node, at the rate NCCL reached on them in BigScience's
    # own all-reduce benchmark of January 2022 (links.yaml omnipath-100g-nccl-jz)
    ("4x100Gb/s Omni-Path", "omnipath-100g-nccl-jz", 4),
    # IBM's FSDP blog (2024): "400 Gbps + GPUDirect RDMA per node" (A100) and "800 Gbps per node" (H100) of
    # RoCE, taken as 4 and 8 100 Gb/s NICs per 8-GPU node (the per-node total the blog states)
    ("400 Gbps + GPUDirect RDMA per node", "eth-100g", 4),
    ("800 Gbps per node", "eth-100g", 8),
    # MegaScale (Jiang et al. 2024, arXiv:2402.15627) Sec. 3.6, the cluster of its Table 2 runs, baseline
    # included: "eight 200G NICs on the server is connected to eight different switches in a multi-rail way",
    # switches of Tomahawk 4 chips with 1:1 downlink:uplink at every layer of a 3-layer CLOS, RoCE (its
    # congestion control builds on DCQCN); the row's "exact NIC config not stated" overlooks that section
    ("ByteDance Ampere cluster", "eth-200g", 8),
)
