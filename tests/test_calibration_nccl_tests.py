"""nccl-tests stdout → α and B per protocol regime (``distcalc calibrate LOG``)."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from typer.testing import CliRunner

from distcalc.calibration.nccl_tests import busbw_geomean_error, fit_run, is_nccl_tests_output, parse_nccl_tests
from distcalc.cli import app
from distcalc.errors import ConfigError

LOG = resources.files("distcalc") / "data" / "validation" / "nccl_tests_a100_8gpu_all_reduce.log"  # published

# Synthetic (hand-written, labelled): an older nccl-tests layout (no Group column, float "error" column) and an
# all_gather table of the ≥ 2.13 layout with its "Collective test starting" line, to exercise the parser.
OLD_AND_NEW = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#   Rank  0 Pid   1320 on nodeA device  0 [0x00] Tesla V100-SXM2-16GB
#   Rank  1 Pid   2066 on nodeB device  0 [0x00] Tesla V100-SXM2-16GB
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
         256            64     float     sum    30.00    0.01    0.01  0e+00    31.00    0.01    0.01  0e+00
         512           128     float     sum    30.50    0.02    0.02  0e+00    30.50    0.02    0.02  0e+00
        1024           256     float     sum    31.00    0.03    0.03  0e+00    31.00    0.03    0.03  0e+00
# Collective test starting: all_gather_perf
# nThread 1 nGpus 4 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
#  Rank  0 Group  0 Pid 1 on h device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 1 on h device  1 [0x08] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid 1 on h device  2 [0x09] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid 1 on h device  3 [0x0a] NVIDIA H100 80GB HBM3
        1024            64     float    none      -1    10.00    0.10    0.08      0    10.00    0.10    0.08    N/A
        2048           128     float    none      -1    10.10    0.20    0.15      0    10.10    0.20    0.15    N/A
        4096           256     float    none      -1    10.20    0.40    0.30      0    10.20    0.40    0.30    N/A
"""


def test_published_log_two_runs():
    runs = parse_nccl_tests(LOG.read_text())
    assert [(r.collective, r.ranks, r.nodes, len(r.rows)) for r in runs] == [("all-reduce", 8, 1, 30)] * 2
    assert runs[0].gpu == "NVIDIA A100-SXM4-80GB"
    first = runs[0].rows[-1]
    assert (first.size_bytes, first.time_oop_s, first.busbw_ip) == (4294967296.0, pytest.approx(32336e-6),
                                                                    pytest.approx(231.59e9))


def test_fit_reproduces_the_log():
    single_process, mpi = (fit_run(r) for r in parse_nccl_tests(LOG.read_text()))
    # AICc picks 4 regimes on both runs (the bar: busbw within 5 % geomean of the log fitted).
    # -g 8 (one process drives 8 GPUs): 1.5 % geomean, 4.4 % worst (was 2 regimes, 2.4 %).
    assert len(single_process.segments) == 4
    assert busbw_geomean_error(single_process) == pytest.approx(0.0149, abs=0.002)
    assert max(abs(r["relative_error"]) for r in single_process.residuals) < 0.05
    # mpirun -np 8 -g 1: noisier (the 32K-512K times are not monotone); 3.9 % geomean (was 3 regimes, 5.1 %).
    assert len(mpi.segments) == 4
    assert busbw_geomean_error(mpi) == pytest.approx(0.0393, abs=0.003)
    assert busbw_geomean_error(mpi) < 0.05
    # Both see about the large-message bandwidth of NCCL's 12 rings x 20 GB/s on A100 NVSwitch (94-99 % of it).
    assert mpi.bandwidth_bytes_per_s == pytest.approx(226.3e9, rel=0.01)
    assert single_process.bandwidth_bytes_per_s == pytest.approx(236.9e9, rel=0.01)
    for fit in (single_process, mpi):
        assert fit.segments[-1]["bandwidth_bytes_per_s"] < 240e9


def test_parser_handles_old_and_new_layouts():
    old, gather = parse_nccl_tests(OLD_AND_NEW)
    assert (old.collective, old.ranks, old.nodes) == ("all-reduce", 2, 2)  # inferred: busbw/algbw = 2(n-1)/n = 1
    assert (gather.collective, gather.ranks, gather.nodes) == ("all-gather", 4, 1)
    assert fit_run(gather).tier == "intra" and fit_run(old).tier == "inter"


def test_rejects_text_without_tables():
    with pytest.raises(ConfigError):
        parse_nccl_tests("hello\n# nothing here\n")


def test_calibrate_cli_on_a_log(tmp_path):
    out = tmp_path / "cal.json"
    result = CliRunner().invoke(app, ["calibrate", str(LOG), "--output", str(out), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert len(payload["fits"]) == 2 and payload["fits"][0]["source"] == "nccl-tests"
    saved = json.loads(out.read_text())
    assert saved["backend"] == "nccl" and is_nccl_tests_output(LOG)
    priced = CliRunner().invoke(app, ["collective", "all-reduce", "--gpus", "8", "--size", "1GiB", "--json",
                                      "--calibration", str(out)])
    assert priced.exit_code == 0, priced.output


def test_collective_size_range_prices_each_size_with_its_own_fit_segment(tmp_path):
    """A calibration fitted per size regime prices every size of a --size range as a single --size call does
    (it used to apply the large-message segment to the whole range)."""
    out = tmp_path / "cal.json"
    assert CliRunner().invoke(app, ["calibrate", str(LOG), "--output", str(out)]).exit_code == 0
    base = ["collective", "all-reduce", "--gpus", "8", "--algorithm", "ring", "--json", "--calibration", str(out)]
    ranged = json.loads(CliRunner().invoke(app, base + ["--size", "8B..4GiB"]).stdout)
    by_size = {w["size_bytes"]: w["time_s"] for w in ranged["best"]}
    for size in ("8B", "64KiB", "4GiB"):
        single = json.loads(CliRunner().invoke(app, base + ["--size", size]).stdout)
        assert by_size[single["size_bytes"]] == pytest.approx(single["best_time_s"], rel=1e-12)


def test_bench_rows_in_nccl_tests_layout_read_back():
    from distcalc.bench.nccl_tests_layout import nccl_tests_text

    rows = [{"collective": kind, "tier": "intra", "group_size": 4, "size_bytes": size, "time_s": t,
             "algbw_bytes_per_s": size / t, "busbw_bytes_per_s": size / t * factor}
            for kind, factor in (("all-reduce", 1.5), ("all-gather", 0.75))
            for size, t in ((1024, 20e-6), (4096, 21e-6), (16384, 25e-6), (65536, 40e-6))]
    text = nccl_tests_text({"results": rows, "config": {"warmup": 5, "trials": 20, "dtype": "float32"},
                            "hardware": {"host": "h", "gpu": "NVIDIA H100 80GB HBM3"}, "world_size": 4})
    runs = parse_nccl_tests(text)
    assert [(r.collective, r.ranks) for r in runs] == [("all-reduce", 4), ("all-gather", 4)]
    assert runs[0].rows[2].time_ip_s == pytest.approx(25e-6)
    assert runs[1].rows[-1].busbw_oop == pytest.approx(65536 / 40e-6 * 0.75, abs=0.005e9)  # 2 decimals, as printed


def test_calibrate_plot_overlays_measured_fit_and_model(tmp_path):
    png = tmp_path / "busbw.png"
    result = CliRunner().invoke(app, ["calibrate", str(LOG), "--output", str(tmp_path / "c.json"), "--plot", str(png),
                                      "--cluster", "dgx-a100", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["plot_file"] == str(png) and png.stat().st_size > 10_000


def test_plot_model_curve_is_timed_as_nccl_tests_times_each_run(monkeypatch):
    # The log's first run is -g 8 (one thread launches eight kernels), the second mpirun -g 1: the NCCL-model curve
    # of the first sits on the host launch floor (8 x 4.21 us, collective/nccl_launch.py) at small sizes.
    import distcalc.render.plots.collective as plots
    from distcalc.calibration import calibrate
    from distcalc.cli.calibrate_cmd import _plot_nccl_tests
    from distcalc.collective.nccl_launch import HOST_LAUNCH_S_PER_GPU

    fits = calibrate([str(LOG)]).fits
    assert [f["gpus_per_thread"] for f in fits] == [8, 1]
    captured = {}
    monkeypatch.setattr(plots, "plot_busbw_overlay", lambda series, path, title="": captured.update(series))
    _plot_nccl_tests(fits, "unused.png", "dgx-a100")
    floor_s = 8 * HOST_LAUNCH_S_PER_GPU["amd"]
    sizes, busbw = captured["NCCL model all-reduce N=8 run 1 (dgx-a100)"]
    assert busbw[0] == pytest.approx(sizes[0] / floor_s * 1.75)
    sizes, busbw = captured["NCCL model all-reduce N=8 run 2 (dgx-a100)"]
    assert busbw[0] > sizes[0] / floor_s * 1.75 * 2  # one launch per thread: the GPU time (15 us) sets it


def test_regime_count_is_chosen_by_aicc_not_by_rounding_noise():
    """Synthetic series (labelled): one exact line is one regime; two lines with 1 % noise keep their true edge
    (between 512 KiB and 1 MiB) and the large-size bandwidth, whatever extra range AICc may add for the noise."""
    import numpy as np

    from distcalc.calibration.nccl_tests import fit_regimes

    sizes = 2.0 ** np.arange(3, 33)
    assert len(fit_regimes(sizes, 20e-6 + sizes / 200e9)[0]) == 1
    true_edge = (512 * 1024 * 1024 * 1024) ** 0.5
    for seed in range(10):
        noise = 1 + np.random.default_rng(seed).normal(0, 0.01, sizes.size)
        times = np.where(sizes < 1 << 20, 20e-6 + sizes / 20e9, 40e-6 + sizes / 200e9) * noise
        segments, why = fit_regimes(sizes, times)
        assert 2 <= len(segments) <= 3 and "AICc" in why
        assert any(s.max_size_bytes == pytest.approx(true_edge) for s in segments[:-1])
        assert 1 / segments[-1].seconds_per_byte == pytest.approx(200e9, rel=0.05)
