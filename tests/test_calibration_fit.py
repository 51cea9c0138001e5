"""Calibration fits on synthetic data (no processes spawned): exact recovery, segment choice, model round trip."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from distcalc.calibration import Calibration, calibrated_device, calibrated_topology, load_calibration, save_calibration
from distcalc.calibration.collectives import fit_collective, holdout_check, model_coefficients
from distcalc.calibration.fit import fit_line, fit_segments
from distcalc.collective import collective_cost
from distcalc.errors import ConfigError
from distcalc.p2p import send_recv_cost
from distcalc.topology import TopologyKind, make_topology

SIZES = np.array([1024.0 * 2**i for i in range(13)])


def _rows(collective: str, n: int, times: np.ndarray, spread: float = 0.1) -> list[dict]:
    return [{"collective": collective, "tier": "intra", "group_size": n, "size_bytes": int(s), "time_s": float(t),
             "p99_time_s": float(t) * (1 + spread), "trials": 20} for s, t in zip(SIZES, times)]


@settings(max_examples=60, deadline=None)
@given(a=st.floats(1e-6, 1e-2), c=st.floats(1e-12, 1e-7))
def test_fit_line_recovers_exact_lines(a, c):
    fitted_a, fitted_c = fit_line(SIZES, a + c * SIZES)
    assert fitted_a == pytest.approx(a, rel=1e-6)
    assert fitted_c == pytest.approx(c, rel=1e-6)


def test_fit_line_respects_bounds():
    # falling times would need a negative slope: the bounded fit keeps c = 0 and a > 0
    a, c = fit_line(SIZES, np.linspace(2e-3, 1e-3, SIZES.size))
    assert c == 0.0 and a > 0


def test_two_segments_only_when_the_data_demand_it():
    # a protocol switch at 64 KiB: small messages cheap latency / poor bandwidth, large the opposite
    times = np.where(SIZES < 65536, 5e-6 + SIZES / 1e9, 40e-6 + SIZES / 10e9)
    segments, why = fit_segments(SIZES, times, np.full(SIZES.size, 0.01))
    assert len(segments) == 2, why
    assert 32768 < segments[0].max_size_bytes < 131072
    # the same data with a spread larger than the one-line misfit: one segment
    segments, why = fit_segments(SIZES, times, np.full(SIZES.size, 5.0))
    assert len(segments) == 1, why


@pytest.mark.parametrize("collective, n, algorithm", [
    ("all-reduce", 4, "ring"), ("all-gather", 4, "ring"), ("reduce-scatter", 3, "ring"),
    ("broadcast", 4, "binomial-tree"), ("reduce", 4, "rabenseifner"), ("all-to-all", 4, "direct"),
    ("send-recv", 2, "p2p"),
])
def test_calibrated_model_reproduces_the_fitted_line(collective, n, algorithm):
    """α, B substituted into the topology give back the measured line at the measured N (model form)."""
    alpha, bandwidth = 30e-6, 2e9
    base = make_topology("switch", n, bandwidth_bytes_per_s=bandwidth, latency_s=alpha)

    def model(size):
        if collective == "send-recv":
            return float(send_recv_cost(size, base, 0, 1).time_s)
        return float(collective_cost(collective, size, base, algorithm).time_s)

    fit = fit_collective(_rows(collective, n, np.array([model(s) for s in SIZES])), "gloo")
    assert fit.algorithm == algorithm
    assert fit.latency_s == pytest.approx(alpha, rel=1e-6)
    assert fit.bandwidth_bytes_per_s == pytest.approx(bandwidth, rel=1e-6)
    assert fit.rms_relative_error < 1e-9
    calibration = Calibration(fits=[fit.as_dict()])
    topo = calibrated_topology(make_topology("switch", n), collective, calibration)
    assert (topo.latency_s, topo.bandwidth_bytes_per_s) == pytest.approx((alpha, bandwidth), rel=1e-6)


def test_model_coefficients_ring_allreduce():
    steps, factor = model_coefficients("all-reduce", 4, "ring")
    assert steps == 6 and factor == pytest.approx(1.5)  # 2(N-1) steps, 2(N-1)/N · M / B


def test_hierarchical_topology_takes_both_tiers(tmp_path):
    fits = []
    for tier, n, alpha, bandwidth in (("intra", 4, 2e-6, 300e9), ("inter", 2, 8e-6, 20e9)):
        times = np.array([float(collective_cost("all-reduce", s, make_topology(
            "switch", n, bandwidth_bytes_per_s=bandwidth, latency_s=alpha), "ring").time_s) for s in SIZES])
        rows = [dict(r, tier=tier) for r in _rows("all-reduce", n, times)]
        fits.append(fit_collective(rows, "gloo").as_dict())
    path = save_calibration(Calibration(fits=fits), tmp_path / "cal.json")
    calibration = load_calibration(path)
    topo = make_topology("hierarchical", 8, gpus_per_node=4)
    tuned = calibrated_topology(topo, "all-reduce", calibration)
    assert tuned.kind is TopologyKind.HIERARCHICAL
    assert (tuned.latency_s, tuned.bandwidth_bytes_per_s) == pytest.approx((2e-6, 300e9), rel=1e-6)
    assert (tuned.inter_latency_s, tuned.inter_bandwidth_bytes_per_s) == pytest.approx((8e-6, 20e9), rel=1e-6)
    # a collective that was not measured borrows the all-reduce fit
    assert calibrated_topology(topo, "gather", calibration).latency_s == pytest.approx(2e-6, rel=1e-6)


def test_holdout_on_exact_data_is_exact():
    times = 50e-6 + SIZES / 3e9
    points = holdout_check(_rows("all-reduce", 4, times, spread=0.0), floor=1e-12)
    assert len(points) == SIZES.size // 2
    assert all(abs(p["relative_error"]) < 1e-9 and p["within"] for p in points)


def test_flat_sweep_gives_infinite_bandwidth_that_survives_the_file(tmp_path):
    fit = fit_collective(_rows("all-reduce", 2, np.full(SIZES.size, 1e-3)), "gloo")
    assert math.isinf(fit.bandwidth_bytes_per_s)
    calibration = load_calibration(save_calibration(Calibration(fits=[fit.as_dict()]), tmp_path / "c.json"))
    assert math.isinf(calibration.fit_for("all-reduce").bandwidth_bytes_per_s)


def test_load_calibration_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_calibration(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something-else"}')
    with pytest.raises(ConfigError, match="not a distcalc calibration file"):
        load_calibration(bad)
    with pytest.raises(ConfigError, match="no collective fits"):
        calibrated_topology(make_topology("switch", 4), "all-reduce", Calibration())


def test_gemm_fit_recovers_the_compute_model_parameters():
    """Synthetic GEMM times from distcalc.compute.device.gemm_time_s with known η_core, η_mem, t0."""
    from distcalc.calibration.compute import fit_gemm
    from distcalc.compute.device import DeviceCompute, gemm_time_s

    truth = DeviceCompute(name="cpu", peak_flops_per_s=1e11, hbm_bandwidth_bytes_per_s=2e10, sm_count=2,
                          l2_bandwidth_bytes_per_s=math.inf, gemm_core_efficiency=0.6, memory_efficiency=0.8,
                          kernel_overhead_s=2e-5, flash_forward_efficiency=0.0, flash_backward_efficiency=0.0)
    rows = []
    for tokens in (16, 64, 256, 1024, 4096):
        for name, n, k in (("qkv", 768, 256), ("mlp-down", 256, 1024), ("thin", 8, 4096)):
            t = float(gemm_time_s(1, tokens, n, k, truth, 4, 4))
            rows.append({"name": name, "tokens": tokens, "m": tokens, "n": n, "k": k, "flops": 2.0 * tokens * n * k,
                         "time_s": t, "flops_per_s": 2.0 * tokens * n * k / t})
    config = {"dtype": "float32", "memory_bandwidth_bytes_per_s": 2e10, "threads": 2}
    fitted = fit_gemm(rows, config, {"cpu": "test"})
    # the CPU path takes P = best measured throughput, so η_core is relative to it: compare η_core·P
    p = fitted["parameters"]
    assert p["gemm_core_efficiency"] * fitted["device_constants"]["peak_flops_per_s"] == pytest.approx(0.6e11, rel=1e-6)
    assert p["memory_efficiency"] == pytest.approx(0.8, rel=1e-6)
    assert p["kernel_overhead_s"] == pytest.approx(2e-5, rel=1e-6)
    assert fitted["rms_relative_error"] < 1e-9
    device = calibrated_device(dataclasses.replace(truth, gemm_core_efficiency=0.1),
                               Calibration(compute=fitted))
    assert device.memory_efficiency == pytest.approx(0.8, rel=1e-6)
