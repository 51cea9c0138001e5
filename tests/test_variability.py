"""GPU speed variation: the expected maximum of n normals, and the step's wait for its slowest GPU."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.cli import app
from distcalc.parallel import ParallelConfig
from distcalc.variability import (DEFAULT_GPU_SPEED_CV, _normal_grid, expected_max_standard_normal,
                                  slowest_gpu_factor)


@pytest.mark.parametrize("n, expected", [
    (1, 0.0),
    (2, 1 / math.sqrt(math.pi)),              # closed form
    (3, 3 / (2 * math.sqrt(math.pi))),        # closed form
    (5, 1.16296),                             # tables of normal order statistics (e.g. Harter 1961)
    (10, 1.53875),
    (100, 2.50759),
])
def test_expected_maximum_of_normals(n, expected):
    assert expected_max_standard_normal(n) == pytest.approx(expected, abs=2e-5)


def test_expected_maximum_matches_sampling():
    rng = np.random.default_rng(7)
    samples = rng.standard_normal((4000, 280)).max(axis=1)
    assert expected_max_standard_normal(280) == pytest.approx(samples.mean(), abs=4 * samples.std() / math.sqrt(4000))


def test_default_sigma_is_the_published_spread_over_the_whisker_range():
    assert DEFAULT_GPU_SPEED_CV == pytest.approx(0.08 / 5.396, rel=1e-3)


@given(st.integers(1, 100_000), st.integers(1, 100_000), st.floats(0.0, 0.2))
@settings(max_examples=60, deadline=None)
def test_factor_is_one_for_one_gpu_and_grows_with_gpus(a, b, cv):
    small, large = sorted((a, b))
    f = slowest_gpu_factor(np.array([1, small, large]), cv)
    assert f[0] == 1.0
    assert 1.0 <= f[1] <= f[2]
    assert np.all(slowest_gpu_factor(np.array([small, large]), 0.0) == 1.0)


def _gpt3(**kw):
    base = dict(gpus=64, tp=8, pp=8, vpp=3, micro_batch=1, global_batch=64, seq_len=2048, recompute="selective",
                sequence_parallel=True)
    return ParallelConfig(**{**base, **kw})


def test_only_compute_is_scaled_and_exactly_by_the_factor():
    config = _gpt3()
    ideal = analyze("gpt3-175b", "dgx-a100", config, AnalyzeOptions(gpu_speed_cv=0.0))
    real = analyze("gpt3-175b", "dgx-a100", config, AnalyzeOptions())
    factor = real.gpu_variability["slowest_gpu_factor"]
    assert factor == pytest.approx(1 + DEFAULT_GPU_SPEED_CV * expected_max_standard_normal(64), rel=1e-12)
    assert real.time_breakdown["compute_s"] == pytest.approx(factor * ideal.time_breakdown["compute_s"], rel=1e-12)
    assert real.time_breakdown["optimizer_s"] == pytest.approx(factor * ideal.time_breakdown["optimizer_s"], rel=1e-12)
    for key in ("tp_exposed_s", "pp_p2p_s", "embedding_sync_s"):
        assert real.time_breakdown[key] == ideal.time_breakdown[key]
    assert real.step_time_s > ideal.step_time_s
    assert ideal.gpu_variability["slowest_gpu_factor"] == 1.0


@given(st.floats(0.0, 0.1), st.floats(0.0, 0.1))
@settings(max_examples=15, deadline=None)
def test_step_time_never_decreases_with_more_speed_variation(a, b):
    low, high = sorted((a, b))
    config = _gpt3()
    t_low = analyze("gpt3-175b", "dgx-a100", config, AnalyzeOptions(gpu_speed_cv=low)).step_time_s
    t_high = analyze("gpt3-175b", "dgx-a100", config, AnalyzeOptions(gpu_speed_cv=high)).step_time_s
    assert t_low <= t_high


def test_a_single_gpu_waits_for_nobody():
    config = ParallelConfig(gpus=1, micro_batch=1, global_batch=2, seq_len=1024)
    default = analyze("llama3-8b", "dgx-h100", config)
    ideal = analyze("llama3-8b", "dgx-h100", config, AnalyzeOptions(gpu_speed_cv=0.0))
    assert default.step_time_s == ideal.step_time_s


def test_cli_option_and_json_field():
    runner = CliRunner()
    args = ["analyze", "--model", "gpt3-175b", "--cluster", "dgx-a100", "--gpus", "64", "--tp", "8", "--pp", "8",
            "--micro-batch", "1", "--global-batch", "64", "--seq-len", "2048", "--json"]
    out = json.loads(runner.invoke(app, args + ["--gpu-speed-cv", "0"]).stdout)
    assert out["gpu_variability"]["slowest_gpu_factor"] == 1.0 and out["options"]["gpu_speed_cv"] == 0.0
    default = json.loads(runner.invoke(app, args).stdout)
    assert default["gpu_variability"]["slowest_gpu_factor"] > 1.0 and default["step_time_s"] > out["step_time_s"]
    bad = runner.invoke(app, args + ["--gpu-speed-cv", "-0.1"])
    assert bad.exit_code == 2


def test_normal_grid_log_cdf_is_bit_identical_to_erfc_element_by_element():
    """The grid's Φ comes from ``erfc`` on Python floats (start-up speed); it must equal, bit for bit, ``erfc``
    called on each numpy element as first written, so no prediction moves."""
    grid, _, log_cdf = _normal_grid()
    element_by_element = np.log(np.maximum(0.5 * np.array([math.erfc(-x / math.sqrt(2.0)) for x in grid]), 1e-300))
    assert np.array_equal(log_cdf.view(np.int64), element_by_element.view(np.int64))
