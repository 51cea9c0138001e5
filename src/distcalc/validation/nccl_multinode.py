"""Measured multi-node NCCL all-reduce (nccl-tests on 2–8 nodes of 8× H100, 400 Gb/s InfiniBand) vs distcalc's
NCCL model.

Every row of ``nccl_tests_h100_multinode_all_reduce.csv`` (five runs published in NVIDIA/nccl-tests issue #309:
2 bare-metal Dell XE9680 nodes and 4 VMs with NCCL 2.26.2, 8 B–16 GiB; 2, 4 and 8 nodes of another 8-node
cluster, NCCL version not printed, 1 MiB–8 GiB; all with NCCL's own choice and ``-g 1``) is priced by
:func:`distcalc.collective.nccl_tuner.nccl_estimate` on ``dgx-h100`` (8× H100 SXM on NVSwitch, 8× 400 Gb/s
NDR per node: what every run reports) with the run's node count, as nccl-tests times it with one GPU per
process (:func:`distcalc.collective.nccl_launch.nccl_tests_period_s`).

The modelled NCCL releases are 2.18.5 and 2.20.5; these runs used 2.26.2 or an unprinted version, so they are
priced with 2.20.5, the newest modelled — a different release (2.23 added PAT, later ones retuned NVLS-Tree),
which is part of what these cases measure. The in-place column is compared, as for the Azure series; the
out-of-place column of these logs has first-size spikes (8 B: 68.5 vs 24.7 µs in-place). Measured busbw comes
from the printed time (nccl-tests: M/t · 2(N−1)/N), which has more digits than the printed busbw at small sizes.

Not included: the issue's runs with ``NCCL_MIN_CTAS=24`` (and ``NCCL_ALGO=Ring``), a channel floor the model
does not take.
"""

from __future__ import annotations

from distcalc.cluster import load_cluster
from distcalc.collective.busbw import busbw_factor
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_constants import NcclVersion
from distcalc.collective.nccl_launch import nccl_tests_period_s
from distcalc.collective.nccl_tuner import nccl_estimate
from distcalc.validation.base import CaseSet, ValidationCase, read_validation_csv
from distcalc.validation.nccl_busbw import geomean_abs_error as geomean_by_run

CSV = "nccl_tests_h100_multinode_all_reduce.csv"
SOURCE = "NVIDIA/nccl-tests issue #309 (2025-05/06): nccl-tests all_reduce_perf on 2, 4 and 8 nodes of 8x H100, " \
         "8x 400 Gb/s InfiniBand per node"
CLUSTER = "dgx-h100"
#: The newest release whose tuning model distcalc reproduces: runs of later or unprinted releases are priced with it.
PRICED_WITH = NcclVersion.V2_20_5
TOLERANCE = 0.10


def _version(printed: str) -> NcclVersion:
    return next((v for v in NcclVersion if v.value == printed.strip()), PRICED_WITH)


def multinode_rows() -> list[dict[str, object]]:
    """One record per measured row: run, size, NCCL's algorithm/protocol/channels, predicted and measured busbw."""
    out = []
    cluster = load_cluster(CLUSTER)
    for row in read_validation_csv(CSV):
        gpus = int(row["nodes"]) * int(row["gpus_per_node"])
        system = nccl_system(cluster, gpus)
        size = float(row["size_bytes"])
        version = _version(row["nccl_version"])
        estimate = nccl_estimate(system, "all-reduce", size, version)
        time_s = nccl_tests_period_s(estimate.time_s, 1, system.cpu_vendor)
        factor = busbw_factor("all-reduce", gpus) / 1e9
        out.append({"vm": row["run"], "label": str(int(size)), "size_bytes": size, "nodes": int(row["nodes"]),
                    "algorithm": estimate.algorithm.value, "protocol": estimate.protocol.value,
                    "channels": estimate.channels, "version": version.value,
                    "run_version": row["nccl_version"] or "not printed",
                    "predicted_GBps": size / time_s * factor,
                    "measured_GBps": size / (float(row["time_ip_us"]) * 1e-6) * factor})
    return out



def _cases() -> list[ValidationCase]:
    return [ValidationCase(
        case=f"{r['vm']} all-reduce {r['label']} B busbw", predicted=float(r["predicted_GBps"]),
        published=float(r["measured_GBps"]), unit="GB/s", error_kind="relative", tolerance=TOLERANCE,
        kind="measured", group=str(r["vm"]),
        note=f"NCCL {r['run_version']} run priced with {r['version']}: {r['algorithm']}/{r['protocol']}, "
             f"{r['channels']} channels")
        for r in multinode_rows()]


CASE_SETS = (
    CaseSet("nccl-multinode", "NCCL all-reduce busbw on 2-8 nodes of 8x H100 (400 Gb/s IB), NCCL tuning model "
            "(2.20.5) vs published nccl-tests runs (2.26.2 / not printed)", SOURCE, _cases),
)

__all__ = ["CASE_SETS", "geomean_by_run", "multinode_rows"]
