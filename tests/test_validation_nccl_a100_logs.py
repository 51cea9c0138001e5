"""Golden test: distcalc's NCCL model (2.18.5) vs two further published 8x A100 nccl-tests all-reduce logs.

What they show, with the Azure ND A100 v4 series and the 'thanos' log beside them (README, "Collectives as NCCL
runs them"): the 2-128 MiB shortfall against NCCL's model is common to every run where one thread drives the eight
GPUs (-g 8, three hosts, NCCL 2.18.5 / 2.19.3 / unprinted), and absent from 32 MiB up where each GPU has its own
process. The tolerances pin what the model achieves today so a regression (or an improvement) shows."""

from __future__ import annotations

import pytest

from distcalc.validation import CASE_SETS
from distcalc.validation.nccl_a100_logs import a100_log_rows
from distcalc.validation.nccl_busbw import geomean_abs_error, log_rows, nccl_rows

ROWS = a100_log_rows()
G8 = "dkh NCCL 2.19.3 -g 8"
NP8 = "NCCL 2.16.2 one process per GPU"


def _errors(label: str) -> dict[int, float]:
    return {int(r["size_bytes"]): float(r["predicted_GBps"]) / float(r["measured_GBps"]) - 1
            for r in ROWS if r["vm"] == label}


def test_both_logs_are_parsed_and_priced():
    assert len(ROWS) == 31 and len(CASE_SETS["nccl-a100-logs"]()) == 31
    assert sorted(_errors(G8)) == [1 << k for k in range(3, 28)]
    assert sorted(_errors(NP8)) == [1 << k for k in range(25, 31)]
    for r in ROWS:  # NCCL's pick on one 8x A100 node: Ring, LL below 2 MiB, LL128 to 16 MiB, Simple above
        assert r["algorithm"] == "ring"
        size = int(r["size_bytes"])
        assert r["protocol"] == ("LL" if size < 2 << 20 else "LL128" if size <= 16 << 20 else "Simple"), r


def test_one_process_per_gpu_run_is_within_ten_percent_at_every_size():
    # 32 MiB-1 GiB, Ring/Simple: -2.8, -7.7, +5.4, +1.7, +0.3, -0.5 %; geomean 3.0 %.
    errors = _errors(NP8)
    assert max(abs(e) for e in errors.values()) <= 0.08
    assert geomean_abs_error(ROWS)[NP8] == pytest.approx(0.030, abs=0.005)


def test_single_thread_run_as_reported():
    errors = _errors(G8)
    # host-bound up to 128 KiB: the DGX A100 launch floor (33.7 us) against this host's 35-37 us: +5 to +10 %
    assert all(0.0 < errors[s] <= 0.10 for s in errors if s <= 16 << 10)
    # 256 KiB-128 MiB: 11-48 % optimistic, as on the other two -g 8 runs (Azure, 'thanos')
    assert all(0.10 < errors[s] <= 0.50 for s in errors if s >= 256 << 10)
    assert geomean_abs_error(ROWS)[G8] == pytest.approx(0.150, abs=0.01)


def test_single_thread_runs_agree_with_each_other_and_not_with_one_process_per_gpu():
    """The measured evidence the README states: at 4-128 MiB the three -g 8 runs (three hosts, three NCCL builds)
    are within 4 % of their mean; the one-process-per-GPU runs are 1.10-1.27x faster than that mean at 4-64 MiB."""
    measured = {}
    for r in nccl_rows() + log_rows() + ROWS:
        measured.setdefault(str(r["vm"]), {})[int(r["size_bytes"])] = float(r["measured_GBps"])
    g8 = [measured["ND_A100_v4"], measured["one process, -g 8"], measured[G8]]
    np8 = [measured["mpirun -np 8, -g 1"], measured[NP8]]
    for size in (1 << k for k in range(22, 28)):
        mean = sum(run[size] for run in g8) / 3
        assert all(abs(run[size] / mean - 1) <= 0.04 for run in g8), size
        if size <= 64 << 20:
            assert all(1.10 <= run[size] / mean <= 1.27 for run in np8 if size in run), size


def test_calibrate_reproduces_each_further_log_within_five_percent():
    # AICc keeps 3 ranges on the 2.19.3 -g 8 run (1.4 %, worst size 4.1 %) and 1 on the six-size 2.16.2 run
    # (2.4 %, worst 5.8 %): the bar (5 % geomean) holds on logs the fit was not developed on.
    cases = CASE_SETS["calibrate-nccl-a100-logs"]()
    assert [round(c.predicted, 3) for c in cases] == [0.014, 0.024]
    assert all(c.passed for c in cases)
