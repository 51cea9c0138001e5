"""A calibration file (``distcalc calibrate``) drives ``analyze``, ``evaluate_batch`` and ``search``.

The calibrations here are synthetic: sweeps generated from chosen α and B with the collective model's own
coefficients (:func:`distcalc.calibration.collectives.model_coefficients`), fitted by the calibration
module (:func:`fit_sweep`) and written with :func:`save_calibration` — the same file ``calibrate`` writes.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, analyze, config_batch, evaluate_batch
from distcalc.analyze.comm import calibrated_time_s, segment_bounds
from distcalc.calibration import Calibration, load_calibration, save_calibration
from distcalc.calibration.collectives import BACKEND_ALGORITHMS, CollectiveFit, fit_sweep, model_coefficients
from distcalc.cli import app
from distcalc.cluster import load_cluster
from distcalc.collective import collective_cost
from distcalc.compute import load_device
from distcalc.parallel import ParallelConfig, Recompute, Schedule
from distcalc.placement import group_placement
from distcalc.topology import make_topology
from distcalc.traffic import Comm, Dim

runner = CliRunner()
KINDS = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "send-recv")
MODEL, CLUSTER = "llama3-8b", "dgx-h100"
#: TP 8 inside a node, DP 2 across two nodes (one GPU per node: the inter tier)
CONFIG = ParallelConfig(gpus=16, tp=8, micro_batch=1, global_batch=8, seq_len=2048, sequence_parallel=True)


def synthetic(alpha_s: float, bandwidth: float, inter: tuple[float, float] | None = None,
              n: int = 8, backend: str = "nccl") -> Calibration:
    """A calibration fitted to exact sweeps ``t = steps·α + φ·M/B`` of the intra tier (and of the inter
    tier with ``inter = (α, B)``)."""
    tiers = {"intra": (alpha_s, bandwidth), **({"inter": inter} if inter else {})}
    rows = []
    for tier, (alpha, bw) in tiers.items():
        for kind in KINDS:
            steps, phi = model_coefficients(kind, n, BACKEND_ALGORITHMS[backend][kind])
            for exponent in range(10, 27, 2):
                size = float(n * 2**exponent)
                time = steps * alpha + phi * size / bw
                rows.append({"collective": kind, "tier": tier, "group_size": n, "size_bytes": size,
                             "time_s": time, "p99_time_s": 1.05 * time})
    return Calibration(backend=backend, world_size=n, sources=["synthetic"],
                       fits=[fit.as_dict() for fit in fit_sweep(rows, backend)])


@pytest.fixture
def slow_file(tmp_path):
    """NVLink replaced by a 5 GB/s, 50 µs fabric (intra tier only)."""
    return save_calibration(synthetic(50e-6, 5e9), tmp_path / "slow.json")


def _tp_rows(report):
    return [r for r in report.communication if r["dim"] == "tp"]


def test_fit_recovers_the_synthetic_constants(slow_file):
    cal = load_calibration(slow_file)
    for fit in cal.collective_fits():
        assert fit.latency_s == pytest.approx(50e-6, rel=1e-9)
        assert fit.bandwidth_bytes_per_s == pytest.approx(5e9, rel=1e-9)


def test_slow_calibration_makes_tp_slower_fast_makes_it_faster(slow_file, tmp_path):
    base = analyze(MODEL, CLUSTER, CONFIG)
    slow = analyze(MODEL, CLUSTER, CONFIG, calibration=slow_file)
    fast = analyze(MODEL, CLUSTER, CONFIG, calibration=synthetic(1e-7, 5e12))
    key = "tp_on_link_s"
    assert slow.time_breakdown[key] > 10 * base.time_breakdown[key]
    assert fast.time_breakdown[key] < base.time_breakdown[key]
    assert slow.step_time_s > base.step_time_s > fast.step_time_s
    # only the intra tier was measured: the inter-node DP group keeps the preset's η·B, α and fill term
    for report in (slow, fast):
        assert report.time_breakdown["dp_on_link_s"] == pytest.approx(base.time_breakdown["dp_on_link_s"], rel=1e-12)
        assert report.groups["tp"]["calibrated"] == ["intra"] and "calibrated" not in report.groups["dp"]
    assert slow.groups["tp"]["bandwidth_bytes_per_s"] == pytest.approx(5e9)
    assert slow.calibration["collectives"] and "calibration" in slow.to_dict()
    assert base.to_dict().get("calibration") is None
    # compute unchanged (no GEMM fit in this calibration)
    assert slow.time_breakdown["compute_s"] == base.time_breakdown["compute_s"]


def test_calibrated_tp_time_is_the_collective_model_on_measured_links(slow_file):
    """Each TP message costs exactly collective_cost on an N-GPU switch with the fitted α and B, with the
    fit's algorithm: no η on top of the measured B and no extra pipeline-fill term."""
    cal = load_calibration(slow_file)
    report = analyze(MODEL, CLUSTER, CONFIG, calibration=cal)
    assert _tp_rows(report)
    for row in _tp_rows(report):
        fit = cal.fit_for(row["collective"], "intra")
        topo = make_topology("switch", 8, bandwidth_bytes_per_s=fit.bandwidth_bytes_per_s, latency_s=fit.latency_s)
        one = collective_cost(row["collective"], row["size_bytes"], topo, algorithm=fit.algorithm).time_s
        assert row["calibrated"] is True
        assert row["algorithm"] == fit.algorithm
        assert row["time_s"] == pytest.approx(row["count"] * float(one), rel=1e-12)


def test_calibration_equal_to_the_preset_differs_only_by_the_fill_term():
    """A calibration measuring exactly the preset's η·B and α gives the uncalibrated time minus the NCCL
    pipeline fill (which a measurement already contains)."""
    cluster = load_cluster(CLUSTER)
    bw = cluster.intra.bandwidth_bytes_per_s * cluster.intra.efficiency
    report = analyze(MODEL, cluster, CONFIG, calibration=synthetic(cluster.intra.latency_s, bw))
    base = analyze(MODEL, cluster, CONFIG)
    placement = group_placement(cluster, Dim.TP, 8, 1)
    for row, ref in zip(_tp_rows(report), _tp_rows(base)):
        m, n = row["size_bytes"], 8
        passes = {"all-reduce": 2, "reduce-scatter": 1, "all-gather": 1}[row["collective"]]
        fill = (passes * (n - 1) - 1) * min(m / n, placement.pipeline_chunk_bytes) / bw
        assert row["time_s"] == pytest.approx(ref["time_s"] - row["count"] * fill, rel=1e-9)
        assert row["time_s"] < ref["time_s"]


def test_inter_tier_fit_applies_to_groups_across_nodes():
    cal = synthetic(3e-6, 300e9, inter=(40e-6, 2e9))
    base = analyze(MODEL, CLUSTER, CONFIG)
    report = analyze(MODEL, CLUSTER, CONFIG, calibration=cal)
    assert report.groups["dp"]["calibrated"] == ["inter"]
    assert report.groups["dp"]["bandwidth_bytes_per_s"] == pytest.approx(2e9)
    assert report.time_breakdown["dp_on_link_s"] > 5 * base.time_breakdown["dp_on_link_s"]
    # a hierarchical group (2 GPUs per node on 2 nodes) takes intra on B1 and inter on B2
    hier = ParallelConfig(gpus=16, tp=4, micro_batch=1, global_batch=8, seq_len=2048)
    group = analyze(MODEL, CLUSTER, hier, calibration=cal).groups["dp"]
    assert group["kind"] == "hierarchical" and group["calibrated"] == ["inter", "intra"]
    assert group["bandwidth_bytes_per_s"] == pytest.approx(300e9)
    assert group["inter_bandwidth_bytes_per_s"] == pytest.approx(2e9)


def test_two_segment_fit_picks_the_segment_by_message_size():
    small = {"min_size_bytes": 0.0, "max_size_bytes": 2.0**20, "latency_s": 1e-4, "bandwidth_bytes_per_s": 1e9}
    large = {"min_size_bytes": 2.0**20, "max_size_bytes": math.inf, "latency_s": 1e-5, "bandwidth_bytes_per_s": 1e11}
    fit = CollectiveFit("all-gather", "intra", 8, "ring", 7.0, 7 / 8, [small, large])
    cal = Calibration(fits=[fit.as_dict()])
    placement = group_placement(load_cluster(CLUSTER), Dim.TP, 8, 1)
    sizes = np.array([2.0**16, 2.0**19, 2.0**20, 2.0**24])
    times, algorithm = calibrated_time_s(Comm.ALL_GATHER, sizes, placement, cal, segment_bounds(cal), {})
    assert algorithm == "ring"
    for size, time in zip(sizes, times):
        segment = small if size < 2.0**20 else large
        topo = make_topology("switch", 8, bandwidth_bytes_per_s=segment["bandwidth_bytes_per_s"],
                             latency_s=segment["latency_s"])
        assert time == pytest.approx(float(collective_cost("all-gather", size, topo, algorithm="ring").time_s))


def test_gemm_fit_changes_compute(tmp_path):
    device = load_device("h100-sxm", "bf16")
    cal = synthetic(50e-6, 5e9)
    cal.compute = {"device": "h100-sxm", "parameters": {"gemm_core_efficiency": device.gemm_core_efficiency / 2,
                                                         "memory_efficiency": device.memory_efficiency,
                                                         "kernel_overhead_s": device.kernel_overhead_s}}
    path = save_calibration(cal, tmp_path / "gemm.json")
    base = analyze(MODEL, CLUSTER, CONFIG)
    report = analyze(MODEL, CLUSTER, CONFIG, calibration=path)
    assert report.time_breakdown["compute_s"] > 1.3 * base.time_breakdown["compute_s"]
    assert report.calibration["compute"] == {"device": "h100-sxm", "parameters": cal.compute["parameters"],
                                             "applied": True}
    assert report.flops["peak_flops_per_s"] == base.flops["peak_flops_per_s"]  # MFU keeps the datasheet peak
    # a GEMM-only calibration leaves the collectives alone
    compute_only = Calibration(compute=cal.compute)
    only = analyze(MODEL, CLUSTER, CONFIG, calibration=compute_only)
    assert only.time_breakdown["tp_on_link_s"] == base.time_breakdown["tp_on_link_s"]
    assert only.time_breakdown["compute_s"] == report.time_breakdown["compute_s"]
    # a fit made on another device (e.g. a CPU sweep) is not applied to the cluster's GPU
    elsewhere = Calibration(compute=dict(cal.compute, device="Intel(R) Xeon(R) Processor"))
    other = analyze(MODEL, CLUSTER, CONFIG, calibration=elsewhere)
    assert other.time_breakdown["compute_s"] == base.time_breakdown["compute_s"]
    assert other.calibration["compute"]["applied"] is False


def test_evaluate_batch_agrees_with_analyze(slow_file):
    cal = load_calibration(slow_file)
    configs = [CONFIG,
               ParallelConfig(gpus=16, tp=4, pp=2, micro_batch=2, global_batch=16, seq_len=2048,
                              recompute=Recompute.SELECTIVE, schedule=Schedule.ONE_F_ONE_B),
               ParallelConfig(gpus=16, tp=2, micro_batch=1, global_batch=16, seq_len=1024, zero=1)]
    batches = [config_batch(c) for c in configs]
    batch = {k: np.array([b[k] for b in batches]) for k in batches[0]}
    options = AnalyzeOptions(calibration=cal)
    out = evaluate_batch(MODEL, CLUSTER, batch, options, memory=False)
    via_keyword = evaluate_batch(MODEL, CLUSTER, batch, memory=False, calibration=slow_file)
    plain = evaluate_batch(MODEL, CLUSTER, batch, memory=False)
    for i, config in enumerate(configs):
        report = analyze(MODEL, CLUSTER, config, AnalyzeOptions(calibration=cal,
                                                                 distributed_optimizer=config.distributed_optimizer))
        assert out["step_time_s"][i] == pytest.approx(report.step_time_s, rel=1e-12)
        assert out["mfu"][i] == pytest.approx(report.mfu, rel=1e-12)
        for key in ("tp_on_link_s", "dp_on_link_s", "pp_p2p_s", "compute_s"):
            assert out[key][i] == pytest.approx(report.time_breakdown[key], rel=1e-12), key
        assert out["step_time_s"][i] > plain["step_time_s"][i]
    for key in out:
        np.testing.assert_array_equal(out[key], via_keyword[key])
    assert "calibration" not in options.model_dump(mode="json")


def _cli_json(args):
    result = runner.invoke(app, args + ["--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


ANALYZE = ["analyze", "--model", MODEL, "--cluster", CLUSTER, "--gpus", "16", "--tp", "8", "--global-batch", "8",
           "--seq-len", "2048", "--sequence-parallel"]
SEARCH = ["search", "--model", MODEL, "--cluster", CLUSTER, "--gpus", "8", "--global-batch", "16", "--seq-len", "2048",
          "--top", "3"]


def test_analyze_cli_uses_the_calibration(slow_file):
    base = _cli_json(ANALYZE)
    data = _cli_json(ANALYZE + ["--calibration", str(slow_file)])
    assert data["calibration"]["file"] == str(slow_file)
    assert data["time_breakdown"]["tp_on_link_s"] > 10 * base["time_breakdown"]["tp_on_link_s"]
    assert all(r["calibrated"] for r in data["communication"] if r["dim"] == "tp")
    table = runner.invoke(app, ANALYZE + ["--calibration", str(slow_file)])
    assert table.exit_code == 0 and "measured: intra" in table.output and "calibration" in table.output


def test_analyze_table_labels_each_message():
    table = runner.invoke(app, ANALYZE, terminal_width=250)
    assert table.exit_code == 0
    for note in ("g (SP) before QKV and MLP", "conjugate of forward RS (SP)", "re-gather input for wgrad (SP)"):
        assert note in table.output


def test_search_cli_uses_the_calibration(slow_file):
    base = _cli_json(SEARCH)
    data = _cli_json(SEARCH + ["--calibration", str(slow_file)])
    assert data["calibration"] == str(slow_file)
    assert data["results"][0]["step_time_s"] > base["results"][0]["step_time_s"]
    # the ranking is analyze's with the same calibration, one configuration at a time
    for row in data["results"]:
        config = ParallelConfig(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], cp=row["cp"], ep=row["ep"],
                                vpp=row["vpp"], zero=row["zero"], sequence_parallel=row["sequence_parallel"],
                                recompute=Recompute(row["recompute"]), micro_batch=row["micro_batch"],
                                global_batch=16, seq_len=2048, schedule=Schedule(row["schedule"]))
        report = analyze(MODEL, CLUSTER, config, calibration=slow_file)
        assert row["step_time_s"] == pytest.approx(report.step_time_s, rel=1e-9)


@pytest.mark.parametrize("content, fragment", [
    (None, "does not exist"),
    ("{not json", "not valid JSON"),
    ('{"schema": "something-else"}', "not a distcalc calibration file"),
    ('{"schema": "distcalc.calibration/1", "fits": "oops"}', "malformed"),
])
@pytest.mark.parametrize("command", [ANALYZE, SEARCH])
def test_bad_calibration_file_exits_2(tmp_path, content, fragment, command):
    path = tmp_path / "cal.json"
    if content is not None:
        path.write_text(content)
    result = runner.invoke(app, command + ["--calibration", str(path), "--json"])
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output
