"""Measured multi-node NCCL all-reduce (nccl-tests on 2–8 nodes of 8× H100, 400 Gb/s InfiniBand) vs distcalc's
NCCL model.

Every row of ``nccl_tests_h100_multinode_all_reduce.csv`` (five runs published in NVIDIA/nccl-tests issue #309:
2 bare-metal Dell XE9680 nodes and 4 VMs with NCCL 2.26.2, 8 B–16 GiB; 2, 4 and 8 nodes of another 8-node
cluster, NCCL version not printed, 1 MiB–8 GiB; all with NCCL's own choice and ``-g 1``) is priced by
:func:`distcalc.collective.nccl_tuner.nccl_estimate` on ``dgx-h100`` (8× H100 SXM on NVSwitch, 8× 400 Gb/s
NDR per node: what every run reports) with the run's node count, as nccl-tests times it with one GPU per
process (:func:`distcalc.collective.nccl_launch.nccl_tests_period_s`).

The runs that print their release (2.26.2) are priced with NCCL 2.26.2's tuning model
(:mod:`distcalc.collective.nccl_constants`: its latencies, Ring/LL share, NVLS-Tree chunk, channel split); the
runs that print none with the newest modelled release, 2.26.2 too (the issue is from 2025). Against pricing
everything with 2.20.5, per-run geomean error 5.35 → 5.46 % (XE9680: 8–16 GiB +5 → +1 %, but 512 KiB +9.9 →
+29.2 %, where 2.26.2's Tree/LL128 estimate, 54.5 µs, beats NVLS-Tree's, 55.0 µs, by 1 % and the run's time, 70 µs,
says NCCL took NVLS-Tree), 3.93 → 3.88 % (VMs), and 7.89 → 6.32, 14.03 → 13.70, 16.66 → 16.53 % (other cluster). The in-place column is compared, as for the Azure series; the
out-of-place column of these logs has first-size spikes (8 B: 68.5 vs 24.7 µs in-place). Measured busbw comes
from the printed time (nccl-tests: M/t · 2(N−1)/N), which has more digits than the printed busbw at small sizes.

Not included: the issue's runs with ``NCCL_MIN_CTAS=24`` (and ``NCCL_ALGO=Ring``), a channel floor the model
does not take.

How close one model can come: the runs measure the same hardware at the same node count twice, and the pairs
disagree by more than the issue's per-run bar. On the 14 sizes both 4-node runs have (1 MiB–8 GiB), the VMs'
busbw is 1.03–1.27× the other cluster's (≥ 1.10× at 12 of them; 1.12–1.16× from 512 MiB up); the two 2-node runs
agree within 1 % from 32 MiB up but differ 1.10–1.22× from 1 to 16 MiB. Whatever one model predicts at a size,
its errors against the two runs there satisfy log(1 + |e1|) + log(1 + |e2|) ≥ log(2 − 1/r) (r ≥ 1 their ratio;
the least is at the slower run's value), whose mean over the 14 common 4-node sizes is log 1.124 (log 1.114 from
512 MiB up): on those sizes the two runs' geomean errors g1, g2 satisfy (1 + g1)(1 + g2) ≥ 1.124, so at least one
of them is ≥ 6 % whatever the model, short of knowing what differs
between the two clusters (the issue does not say; one run does not print its NCCL version).
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
PRICED_WITH = NcclVersion.V2_26_2
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
            "(2.26.2) vs published nccl-tests runs (2.26.2 / not printed)", SOURCE, _cases),
)

__all__ = ["CASE_SETS", "geomean_by_run", "multinode_rows"]
