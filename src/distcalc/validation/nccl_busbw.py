"""Measured NCCL all-reduce bus bandwidth (Azure single 8-GPU nodes, nccl-tests) vs distcalc's NCCL model.

Every row of ``nccl_allreduce_busbw_azure_single_node.csv`` (A100 / H100 / H200, 1 KB–8 GB, in-place) is
priced by :func:`distcalc.collective.nccl_tuner.nccl_estimate` under the conditions of the run that produced it:

* cluster: ND A100 v4 → ``dgx-a100`` (8× A100 SXM4 on NVSwitch, AMD EPYC host, HDR NICs), ND H100 v5 →
  ``dgx-h100``, ND H200 v5 → ``hgx-h200``;
* NCCL release: the row's ``nccl_version`` (2.18.5 for A100/H100, 2.20.5 for H200);
* algorithm: the benchmark script runs ``NCCL_ALGO=NVLS ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 8 -n 40``
  (Azure/AI-benchmarking-guide ``Benchmarks/NVIDIA/NCCLBandwidth.py``), so the H100 and H200 rows are NVLS
  at every size. On A100 NCCL 2.18.5 has no NVLS and, with ``NCCL_ALGO=NVLS``, no algorithm at all; the A100
  table therefore cannot come from that setting and is priced with NCCL's own choice;
* size: the printed labels (1K, 65K, 132K, …, 8G) are powers of two, 2^round(log2(label)).

busbw = M/t · 2(N−1)/N (nccl-tests). The tolerance is the issue's 10 % per size. The H100/H200 rows (NVLS) are
timed as NCCL's NVLS kernel runs (:mod:`distcalc.collective.nccl_nvls`: chunk rules, per-channel work, loop
hand-overs; no constant fitted to these rows). Every run printed here used ``-g 8`` (one host thread drives the
eight GPUs), so the printed time is the slower of the GPUs' time and the host's launch of eight kernels
(:mod:`distcalc.collective.nccl_launch`); the host launch time is measured for DGX-A100-class AMD EPYC hosts
only (NVIDIA/nccl-tests #123), so it applies to the A100 rows (33.7 µs floor) and the H100/H200 rows (Intel
hosts, no measurement) keep the GPU time. The A100 rows are NCCL's choice (Ring with LL, LL128, Simple) timed as
the ring kernel runs (:mod:`distcalc.collective.nccl_ring`: Simple slice hand-overs per loop, 2.18.5's chunk
rounding to the protocol grain); they are within 10 % from 256 MiB up and at 1 MiB, and 12-44 % optimistic from 2
to 128 MiB (README, "Collectives as NCCL runs them").
"""

from __future__ import annotations

import math
from importlib import resources

from distcalc.calibration.nccl_tests import NcclTestsRun, busbw_geomean_error, fit_run, parse_nccl_tests
from distcalc.cluster import load_cluster
from distcalc.collective.busbw import busbw_factor
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_graph import NcclSystem
from distcalc.collective.nccl_constants import NcclAlgo, NcclVersion, parse_version
from distcalc.collective.nccl_launch import nccl_tests_period_s
from distcalc.collective.nccl_tuner import nccl_estimate
from distcalc.validation.base import CaseSet, ValidationCase, read_validation_csv

CSV = "nccl_allreduce_busbw_azure_single_node.csv"
SOURCE = ("Azure/AI-benchmarking-guide@8fd0c6e Azure_Results/ND_{A100_v4,H100_v5,H200_v5}_results.md "
          "'NCCL Bandwidth'; run settings: Benchmarks/NVIDIA/NCCLBandwidth.py")
#: Azure VM → (cluster preset, NCCL_ALGO the run used; None = NCCL's own choice).
RUNS = {"ND_A100_v4": ("dgx-a100", None), "ND_H100_v5": ("dgx-h100", (NcclAlgo.NVLS,)),
        "ND_H200_v5": ("hgx-h200", (NcclAlgo.NVLS,))}
#: ``-g`` of every Azure run (NCCLBandwidth.py: ``all_reduce_perf -b 8 -e 8G -f 2 -g 8 -n 40``).
AZURE_GPUS_PER_THREAD = 8
UNITS = {"K": 1e3, "M": 1e6, "G": 1e9}
TOLERANCE = 0.10


def label_bytes(label: str) -> int:
    """``"132K"`` → 131072: nccl-tests sizes are powers of two; the labels are their truncated decimals."""
    label = label.strip()
    value = float(label[:-1]) * UNITS[label[-1]] if label[-1] in UNITS else float(label)
    return 2 ** round(math.log2(value))


def nccl_rows() -> list[dict[str, object]]:
    """One record per measured row: VM, size, NCCL's algorithm/protocol/channels, predicted and measured busbw."""
    out = []
    for row in read_validation_csv(CSV):
        cluster, algos = RUNS[row["vm"]]
        gpus = int(row["num_gpus"])
        size = label_bytes(row["message_size_label"])
        system = nccl_system(load_cluster(cluster), gpus)
        estimate = nccl_estimate(system, "all-reduce", size, parse_version(row["nccl_version"]), algorithms=algos)
        time_s = nccl_tests_period_s(estimate.time_s, AZURE_GPUS_PER_THREAD, system.cpu_vendor)
        busbw = size / time_s * busbw_factor("all-reduce", gpus) / 1e9
        out.append({"vm": row["vm"], "label": row["message_size_label"], "size_bytes": size,
                    "algorithm": estimate.algorithm.value, "protocol": estimate.protocol.value,
                    "channels": estimate.channels, "predicted_GBps": busbw,
                    "measured_GBps": float(row["busbw_GBps"]), "version": row["nccl_version"]})
    return out


def geomean_abs_error(rows: list[dict[str, object]]) -> dict[str, float]:
    """Per VM: exp(mean(log(1 + |error|))) − 1."""
    by_vm: dict[str, list[float]] = {}
    for r in rows:
        error = abs(float(r["predicted_GBps"]) / float(r["measured_GBps"]) - 1)
        by_vm.setdefault(str(r["vm"]), []).append(math.log1p(error))
    return {vm: math.expm1(sum(v) / len(v)) for vm, v in by_vm.items()}


def _cases() -> list[ValidationCase]:
    return [ValidationCase(
        case=f"{r['vm']} all-reduce {r['label']} busbw", predicted=float(r["predicted_GBps"]),
        published=float(r["measured_GBps"]), unit="GB/s", error_kind="relative", tolerance=TOLERANCE,
        kind="measured", note=f"NCCL {r['version']} {r['algorithm']}/{r['protocol']}, {r['channels']} channels")
        for r in nccl_rows()]


LOG = "nccl_tests_a100_8gpu_all_reduce.log"
LOG_SOURCE = ("published nccl-tests log, 8x A100-SXM4-80GB host 'thanos' (data/validation/README.md): "
              "all_reduce_perf -g 8, then mpirun -np 8 -g 1")
LOG_RUNS = ("one process, -g 8", "mpirun -np 8, -g 1")


def log_rows() -> list[dict[str, object]]:
    """The published A100 log's two runs priced by NCCL's choice on ``dgx-a100`` (the log does not print NCCL's
    version: distcalc's default release, whose even per-channel split has no 2.18.5 chunk rounding, see
    :mod:`distcalc.collective.nccl_ring`) as nccl-tests times them with the run's ``-g``
    (:func:`~distcalc.collective.nccl_launch.nccl_tests_period_s`). busbw from the mean of the two columns."""
    text = (resources.files("distcalc") / "data" / "validation" / LOG).read_text(encoding="utf-8")
    system = nccl_system(load_cluster("dgx-a100"), 8)
    out = []
    for label, run in zip(LOG_RUNS, parse_nccl_tests(text)):
        out += priced_run_rows(system, label, run)
    return out


def priced_run_rows(system: NcclSystem, label: str, run: NcclTestsRun,
                    version: NcclVersion = NcclVersion.V2_20_5, printed: str | None = None) -> list[dict[str, object]]:
    """One record per size of one nccl-tests run: NCCL's choice on ``system`` (``version``'s tuning model),
    timed as nccl-tests times it with the run's ``-g``, and busbw predicted and measured (the mean of the
    out-of-place and in-place columns); ``printed`` is the release the log prints (else the model's)."""
    factor = busbw_factor(run.collective, run.ranks)
    out = []
    for row in run.rows:
        estimate = nccl_estimate(system, run.collective, row.size_bytes, version)
        time_s = nccl_tests_period_s(estimate.time_s, run.gpus_per_thread, system.cpu_vendor)
        measured_s = (row.time_oop_s + row.time_ip_s) / 2
        out.append({"vm": label, "label": str(int(row.size_bytes)), "size_bytes": row.size_bytes,
                    "algorithm": estimate.algorithm.value, "protocol": estimate.protocol.value,
                    "channels": estimate.channels,
                    "version": printed if printed is not None else estimate.version.value,
                    "predicted_GBps": row.size_bytes / time_s * factor / 1e9,
                    "measured_GBps": row.size_bytes / measured_s * factor / 1e9})
    return out


def _log_cases() -> list[ValidationCase]:
    return [ValidationCase(
        case=f"A100 {r['vm']} all-reduce {r['label']} B busbw", predicted=float(r["predicted_GBps"]),
        published=float(r["measured_GBps"]), unit="GB/s", error_kind="relative", tolerance=TOLERANCE,
        kind="measured", note=f"NCCL {r['algorithm']}/{r['protocol']}, {r['channels']} channels")
        for r in log_rows()]


#: The issue's bar for ``calibrate`` on a real log: its fit reproduces the log's busbw within 5 % geomean.
CALIBRATE_GEOMEAN_TOLERANCE = 0.05


def calibrate_case(label: str, run: NcclTestsRun) -> ValidationCase:
    """``calibrate``'s own fit (α and B per protocol regime) against the run it was fitted to; the number is
    exp(mean log(1 + |busbw error|)) − 1 over every size (0 is exact)."""
    fit = fit_run(run)
    worst = max(abs(r["measured_s"] / r["predicted_s"] - 1) for r in fit.residuals)
    return ValidationCase(
        case=f"calibrate on A100 {label}: busbw geomean error", predicted=busbw_geomean_error(fit),
        published=0.0, unit="fraction", error_kind="absolute", tolerance=CALIBRATE_GEOMEAN_TOLERANCE,
        kind="measured", note=f"{len(fit.segments)} regimes, {len(fit.residuals)} sizes, worst size {worst:.1%}")


def _calibrate_cases() -> list[ValidationCase]:
    """One case per run of the shipped log (:func:`calibrate_case`)."""
    text = (resources.files("distcalc") / "data" / "validation" / LOG).read_text(encoding="utf-8")
    return [calibrate_case(label, run) for label, run in zip(LOG_RUNS, parse_nccl_tests(text))]


CASE_SETS = (
    CaseSet("nccl", "NCCL all-reduce busbw, one 8-GPU node (A100/H100/H200), NCCL tuning model vs nccl-tests",
            SOURCE, _cases),
    CaseSet("nccl-tests-a100", "NCCL all-reduce busbw, one 8x A100 node, -g 8 and mpirun -g 1, NCCL tuning model "
            "vs a published nccl-tests log", LOG_SOURCE, _log_cases),
    CaseSet("calibrate-nccl-tests", "calibrate's fit (alpha, B per protocol regime) reproducing the busbw of the "
            "nccl-tests log it was fitted to, 8x A100, per run", LOG_SOURCE, _calibrate_cases),
)
