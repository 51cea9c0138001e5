"""Golden test: distcalc's NCCL model (2.26.2, the runs' printed release, also for the runs that print none) vs the published multi-node nccl-tests all-reduce runs of NVIDIA/nccl-tests
issue #309 (2-8 nodes of 8x H100, 8x 400 Gb/s IB). The issue's bar (10 % per size, 5 % geomean per series) is not met:
these tolerances pin what the model achieves today so a regression (or an improvement) shows."""

from __future__ import annotations

import csv
from importlib import resources

import pytest

from distcalc.validation import CASE_SETS
from distcalc.validation.nccl_multinode import CSV, geomean_by_run, multinode_rows

ROWS = multinode_rows()


def test_every_row_is_priced_and_the_csv_is_as_printed():
    assert len(ROWS) == 106 and len(CASE_SETS["nccl-multinode"]()) == 106
    path = resources.files("distcalc") / "data" / "validation" / CSV
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):  # the printed busbw follows from the printed time (nccl-tests' formula)
            ranks = int(row["nodes"]) * int(row["gpus_per_node"])
            busbw = float(row["size_bytes"]) / float(row["time_ip_us"]) / 1e3 * 2 * (ranks - 1) / ranks
            assert busbw == pytest.approx(float(row["busbw_ip_GBps"]), abs=max(0.006, 0.003 * busbw)), row


def test_geomean_error_per_run_as_reported():
    # Full sweeps (8 B-16 GiB, NCCL 2.26.2): 5.5 % and 3.9 %; the 1 MiB-8 GiB sweeps of the other cluster, where
    # the NVLS-Tree middle weighs most: 6.3 %, 13.7 %, 16.5 %. Priced with 2.20.5 (before): 5.3, 3.9, 7.9, 14.0,
    # 16.7 %; with NVLS-Tree timed with the NVLS chunk and no tree hops (before that): 8.0, 7.2, 20.0, 24.6, 25.8 %.
    geomean = geomean_by_run(ROWS)
    assert geomean == pytest.approx({"issue309 2 nodes XE9680": 0.055, "issue309 4 nodes VMs": 0.039,
                                     "issue309 2 nodes": 0.063, "issue309 4 nodes": 0.137,
                                     "issue309 8 nodes": 0.165}, abs=0.005)


@pytest.mark.parametrize("run, size, algorithm, busbw, tolerance", [
    # NVLS-Tree across 2 nodes beats the NICs; 2.26.2 starts the NVLS-Tree chunk at NCCL_NVLS_CHUNKSIZE = 128 KiB
    # (+1.0 %; priced with 2.20.5's 512 KiB chunk, fewer step hand-overs: +5.1 %)
    ("issue309 2 nodes XE9680", 1 << 34, "nvls-tree", 469.10, 0.02),
    # NVLS-Tree middle: 128 KiB chunks, the pipeline fills through 2 tree hops (was +36.8 % with no hops)
    ("issue309 2 nodes XE9680", 1 << 26, "nvls-tree", 269.85, 0.07),
    ("issue309 4 nodes VMs", 1 << 24, "nvls-tree", 125.85, 0.02),    # 64 KiB chunks from 4 nodes (was +28.6 %)
    ("issue309 4 nodes VMs", 1 << 34, "ring", 365.45, 0.03),         # 8 x 50 GB/s NICs, ring
    ("issue309 2 nodes XE9680", 64, "tree", 0.00476, 0.05),         # latency: 25.2 us, Tree/LL
])
def test_goldens(run, size, algorithm, busbw, tolerance):
    row = next(r for r in ROWS if r["vm"] == run and r["size_bytes"] == size)
    assert row["algorithm"] == algorithm
    assert row["predicted_GBps"] == pytest.approx(row["measured_GBps"], rel=tolerance)
    assert row["measured_GBps"] == pytest.approx(busbw, rel=0.01)
