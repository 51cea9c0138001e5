"""bench pieces that need no process group: conventions, file naming, shapes, parameter counts, CLI errors."""

from __future__ import annotations

import csv
import json
import re
from importlib import resources

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from distcalc.bench.collectives import BenchCollective, aligned_size, busbw_factor, tier_groups
from distcalc.bench.gemm import GemmConfig, layer_shapes
from distcalc.bench.results import default_filename, hardware_tag
from distcalc.bench.training import TrainingConfig
from distcalc.cli import app
from distcalc.errors import BenchError, ConfigError
from distcalc.measurements import load_result_file

pytestmark = pytest.mark.xdist_group("bench")

CSV_NAMES = {"all_reduce": "all-reduce", "reduce_scatter": "reduce-scatter", "all_gather": "all-gather",
             "alltoall": "all-to-all", "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "send-recv"}


def _published_factors() -> dict[str, str]:
    text = resources.files("distcalc").joinpath("data/validation/nccl_tests_busbw_factors.csv").read_text()
    return {row["collective"]: row["busbw_over_algbw_factor"] for row in csv.DictReader(text.splitlines())}


@pytest.mark.parametrize("n", [2, 3, 4, 8, 64])
def test_busbw_factors_match_the_published_table(n):
    published = _published_factors()
    for csv_name, ours in CSV_NAMES.items():
        expression = published[csv_name]
        assert re.fullmatch(r"[0-9n*()/+\- ]+", expression)
        expected = eval(expression, {"__builtins__": {}}, {"n": n})  # noqa: S307 - vetted arithmetic
        assert busbw_factor(ours, n) == pytest.approx(expected)


def test_aligned_size_and_tiers():
    assert aligned_size(1024, 4, 3) == 1020 and aligned_size(4, 4, 4) == 16 and aligned_size(4096, 4, 4) == 4096
    assert tier_groups(4, None) == {"intra": [[0, 1, 2, 3]]}
    assert tier_groups(4, 2) == {"intra": [[0, 1], [2, 3]], "inter": [[0, 2], [1, 3]]}
    with pytest.raises(BenchError, match="does not divide"):
        tier_groups(6, 4)


def test_result_file_naming_and_validation(tmp_path):
    hardware = {"host": "Node_7.cluster", "device": "cpu", "cpu": "x"}
    assert hardware_tag(hardware) == "node-7-cluster-cpu"
    assert re.fullmatch(r"bench-collectives-node-7-cluster-cpu-\d{8}\.json", default_filename("collectives", hardware))
    gpu = {"host": "h", "device": "cuda", "gpu": "NVIDIA H100 80GB HBM3"}
    assert hardware_tag(gpu) == "h-nvidia-h100-80gb-hbm3"
    with pytest.raises(BenchError, match="does not exist"):
        load_result_file(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"theme": "collectives"}))
    with pytest.raises(BenchError, match="not a distcalc bench file"):
        load_result_file(bad)


def test_gemm_shapes_follow_the_layer():
    config = GemmConfig(hidden=512, ffn=2048, heads=8, kv_heads=2, vocab=1000, tp=2, tokens=[64])
    shapes = {name: (m, n, k) for name, m, n, k in layer_shapes(config, 64)}
    assert shapes == {"qkv": (64, (512 + 2 * 2 * 64) // 2, 512), "out-proj": (64, 512, 256),
                      "mlp-up": (64, 1024, 512), "mlp-down": (64, 512, 1024), "logits": (64, 500, 512)}


@pytest.mark.parametrize("mode, extra", [("dp", {}), ("tp", {}), ("tp", {"sequence_parallel": True}), ("pp", {})])
def test_analytic_parameters_equal_the_torch_layer(mode, extra):
    """distcalc.model's layer_parameters (dp/tp/pp split) against the real torch modules' parameters."""
    torch = pytest.importorskip("torch")
    from distcalc.bench.layers import TensorParallel, TransformerLayer
    from distcalc.bench.prediction import parameters_per_rank

    config = TrainingConfig(mode=mode, world_size=4, hidden=64, heads=4, layers=4, **extra)
    tp = TensorParallel(None, None, 4 if mode == "tp" else 1)
    layers = config.layers // 4 if mode == "pp" else config.layers
    model = torch.nn.Sequential(*[TransformerLayer(64, 4, 256, tp) for _ in range(layers)])
    assert sum(p.numel() for p in model.parameters()) == parameters_per_rank(config)


def test_training_config_errors_name_the_value():
    with pytest.raises((ConfigError, ValidationError), match="heads 6 is not divisible by the TP degree 4"):
        TrainingConfig(mode="tp", world_size=4, heads=6, hidden=96)
    with pytest.raises((ConfigError, ValidationError), match="layers 3 is not divisible"):
        TrainingConfig(mode="pp", world_size=2, layers=3)
    with pytest.raises((ConfigError, ValidationError), match="needs --mode tp"):
        TrainingConfig(mode="dp", world_size=2, sequence_parallel=True)


@pytest.mark.parametrize("args, message", [
    (["bench", "collectives", "--sizes", "1XB..2KiB"], "1XB"),
    (["bench", "collectives", "--collectives", "all-reduce,bogus"], "valid names are"),
    (["bench", "training", "--mode", "zz"], "zz"),
    (["bench", "training", "--mode", "tp", "--nproc", "3"], "not divisible by the TP degree 3"),
    (["bench", "collectives", "--nproc", "2", "--backend", "nccl"], "nccl"),
    (["calibrate", "missing-file.json"], "does not exist"),
    (["bench", "collectives", "--nproc", "1"], "at least 2 ranks"),
    (["bench", "gemm", "--peak-flops", "fast"], "--peak-flops"),
])
def test_bad_input_exits_2_with_a_message(args, message):
    torch = pytest.importorskip("torch")
    if "nccl" in args and torch.cuda.is_available():
        pytest.skip("nccl is valid here")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_gemm_bench_and_its_calibration(tmp_path):
    """A tiny real GEMM sweep on this machine, then the compute-model fit (structure only, never speed)."""
    pytest.importorskip("torch")
    results, calibration = tmp_path / "gemm.json", tmp_path / "cal.json"
    runner = CliRunner()
    bench = runner.invoke(app, ["bench", "gemm", "--hidden", "64", "--heads", "4", "--vocab", "128", "--tokens",
                                "16..128", "--trials", "3", "--warmup", "1", "--json", "--output", str(results)])
    assert bench.exit_code == 0, bench.output
    payload = json.loads(bench.stdout)
    assert {r["name"] for r in payload["results"]} == {"qkv", "out-proj", "mlp-up", "mlp-down", "logits"}
    assert len(payload["results"]) == 5 * 4
    fitted = runner.invoke(app, ["calibrate", str(results), "--output", str(calibration), "--json"])
    assert fitted.exit_code == 0, fitted.output
    compute = json.loads(fitted.stdout)["compute"]
    assert compute["form"] == "distcalc.compute.device.gemm_time_s"
    assert set(compute["parameters"]) == {"gemm_core_efficiency", "memory_efficiency", "kernel_overhead_s"}
    assert len(compute["residuals"]) == 20
    assert json.loads(calibration.read_text())["compute"]["parameters"] == compute["parameters"]
