"""analyze --collective-model nccl: opt-in NCCL pricing; the default stays the α-β model, bit for bit."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.calibration import Calibration
from distcalc.cli import app
from distcalc.errors import ConfigError
from distcalc.parallel import ParallelConfig

CONFIG = ParallelConfig(gpus=64, tp=8, pp=2, global_batch=128, seq_len=4096)


def test_default_is_alpha_beta_and_unchanged():
    default = analyze("llama3-70b", "dgx-h100", CONFIG)
    explicit = analyze("llama3-70b", "dgx-h100", CONFIG, AnalyzeOptions(collective_model="alpha-beta"))
    assert default.step_time_s == explicit.step_time_s
    assert not any(str(r["algorithm"]).startswith("nccl ") for r in default.communication)


def test_nccl_prices_tuned_collectives_and_keeps_the_rest():
    report = analyze("llama3-70b", "dgx-h100", CONFIG, AnalyzeOptions(collective_model="nccl"))
    algorithms = {(r["dim"], r["collective"]): r["algorithm"] for r in report.communication}
    assert algorithms[("tp", "all-reduce")].startswith("nccl nvls/")  # TP = 8 on one H100 node: NVLS
    assert algorithms[("pp", "send-recv")] == "p2p"                   # point-to-point keeps the α-β price
    assert 0 < report.step_time_s < float("inf")


def test_nccl_and_calibration_are_exclusive():
    with pytest.raises(ConfigError):
        analyze("llama3-70b", "dgx-h100", CONFIG,
                AnalyzeOptions(collective_model="nccl", calibration=Calibration(fits=[{"collective": "all-reduce"}])))


def test_cli_option():
    result = CliRunner().invoke(app, ["analyze", "--model", "llama3-8b", "--cluster", "dgx-a100", "--gpus", "16",
                                      "--tp", "2", "--collective-model", "nccl", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["communication"]
    assert any(r["algorithm"].startswith("nccl ring/") for r in rows)
    bad = CliRunner().invoke(app, ["analyze", "--collective-model", "bogus"])
    assert bad.exit_code == 2
