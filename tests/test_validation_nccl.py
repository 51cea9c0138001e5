"""Golden test: distcalc's NCCL model vs measured nccl-tests all-reduce busbw on one 8-GPU node (Azure A100 / H100 /
H200). The issue's target (every size within 10 %, geomean <= 5 % per series) is met on H200 (NVLS executed as its
kernel runs, NCCL 2.20.5), nearly on H100 (2.18.5) and not on A100 (NCCL's tuning model, nccl-tests -g 8); these
tolerances pin what the model achieves today so a regression (or an improvement) shows."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.validation import CASE_SETS
from distcalc.validation.nccl_busbw import geomean_abs_error, label_bytes, log_rows, nccl_rows

ROWS = nccl_rows()


def test_labels_are_powers_of_two():
    assert [label_bytes(x) for x in ("1K", "65K", "132K", "524K", "33M", "8G")] == [
        1 << 10, 1 << 16, 1 << 17, 1 << 19, 1 << 25, 1 << 33]


def test_every_row_is_priced_and_large_messages_are_within_10_percent():
    assert len(ROWS) == 72 and len(CASE_SETS["nccl"]()) == 72
    for row in ROWS:
        error = row["predicted_GBps"] / row["measured_GBps"] - 1
        if row["size_bytes"] >= 256 << 20 or row["vm"] == "ND_H200_v5":  # H200: every size
            assert abs(error) <= 0.10, row
        if row["vm"] == "ND_H100_v5":  # 1-8 KiB -12..-15 %, 64 KiB +14 %, 8-16 MiB +12 %
            assert abs(error) <= 0.15, row


@pytest.mark.parametrize("vm, algorithm, protocol, busbw, tolerance", [
    # 12 channels x 20 GB/s = 240 GB/s bus, 22 loops of 30 slice hand-overs (nccl_ring): 239.8 -> 231.7 GB/s
    ("ND_A100_v4", "ring", "Simple", 231.58, 0.01),
    ("ND_H100_v5", "nvls", "Simple", 478.87, 0.01),   # maintainer's peak algbw 275 GB/s x 1.75 = 481 GB/s
    ("ND_H200_v5", "nvls", "Simple", 479.98, 0.01),
])
def test_8gib_golden(vm, algorithm, protocol, busbw, tolerance):
    row = next(r for r in ROWS if r["vm"] == vm and r["label"] == "8G")
    assert (row["algorithm"], row["protocol"]) == (algorithm, protocol)
    assert row["predicted_GBps"] == pytest.approx(busbw, rel=tolerance)


def test_geomean_error_per_series_as_reported():
    # Issue target: <= 0.05. Tuner time alone: A100 0.372, H100 0.297, H200 0.232; NVLS as executed
    # (nccl_nvls): H100 0.056, H200 0.027; A100 (Ring, NCCL's tuner) with the -g 8 host launch floor of a DGX A100
    # (nccl_launch, 33.7 us): 0.372 -> 0.219; Ring/Simple timed by its loops' slice hand-overs (nccl_ring):
    # 0.219 -> 0.193; NCCL 2.18.5's chunk rounding to the protocol grain (busiest channel, nccl_ring) -> 0.172
    # (the 2-128 MiB rows, LL128 +12 to +44 %, Simple +17 to +24 %, and the -g 8 host-bound <= 512 KiB rows
    # +10 to +33 % are still optimistic).
    geomean = geomean_abs_error(ROWS)
    assert geomean["ND_A100_v4"] == pytest.approx(0.172, abs=0.01)
    assert geomean["ND_H100_v5"] == pytest.approx(0.056, abs=0.005)
    assert geomean["ND_H200_v5"] == pytest.approx(0.027, abs=0.005)


def test_validate_cli_runs_the_set():
    result = CliRunner().invoke(app, ["validate", "--set", "nccl", "--json"])
    assert result.exit_code == 0, result.output
    assert '"name": "nccl"' in result.stdout


def test_published_a100_log_with_and_without_single_process_launch():
    # NCCL's model on the published 8x A100 log: -g 8 (one thread launches 8 kernels per all-reduce, ~39 us floor
    # here, 33.7 us on the DGX A100 the launch floor is measured on) is 58 % off in geomean with the GPU time alone
    # and 19 % with the launch floor; the same host with one process per GPU (mpirun -g 1, floor one launch) 24 %;
    # both within 10 % from 1 GiB up (512 MiB of the -g 8 run has out-of-place 4.63 ms vs in-place 4.25 ms).
    rows = log_rows()
    assert len(rows) == 60 and len(CASE_SETS["nccl-tests-a100"]()) == 60
    geomean = geomean_abs_error(rows)
    # Ring/Simple slice hand-overs (nccl_ring): -g 8 0.191 -> 0.172, -g 1 0.238 -> 0.218.
    assert geomean["one process, -g 8"] == pytest.approx(0.172, abs=0.01)
    assert geomean["mpirun -np 8, -g 1"] == pytest.approx(0.218, abs=0.01)
    for row in rows:
        if row["size_bytes"] >= 1 << 30:
            assert abs(row["predicted_GBps"] / row["measured_GBps"] - 1) <= 0.10, row
        if row["vm"] == "one process, -g 8" and row["size_bytes"] <= 16 << 10:  # host-bound: 33.7 vs 38.4-42.1 us
            assert 0.15 <= row["predicted_GBps"] / row["measured_GBps"] - 1 <= 0.22, row


def test_calibrate_set_scores_the_fit_on_its_own_log():
    from distcalc.validation import CASE_SETS

    cases = CASE_SETS["calibrate-nccl-tests"]()
    # AICc picks 4 regimes on both runs: -g 8 run 1.5 % geomean, mpirun -g 1 run 3.9 % (non-monotone 32K-512K);
    # with at most 3 regimes and the halving rule they were 2.4 % and 5.06 %.
    assert [round(c.predicted, 3) for c in cases] == [0.015, 0.039]
    assert [c.passed for c in cases] == [True, True]
