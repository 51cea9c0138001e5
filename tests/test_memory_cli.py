"""`distcalc memory` command line."""

import json

import pytest
from typer.testing import CliRunner

from distcalc.cli import app

runner = CliRunner()
ISSUE_ARGS = ["memory", "--model", "llama3-70b", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "8", "--pp", "4",
              "--dp", "2", "--micro-batch", "1", "--global-batch", "512", "--seq-len", "8192", "--recompute",
              "selective", "--sequence-parallel", "--zero", "1"]


def test_issue_example_json_contract():
    result = runner.invoke(app, ISSUE_ARGS + ["--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["model"]["name"] == "llama3-70b" and payload["model"]["parameters"] == 70_553_706_496
    memory = payload["memory"]
    for key in ("total_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                "activations_per_layer_bytes", "stages", "bytes_per_parameter", "worst_stage"):
        assert key in memory
    assert len(memory["stages"]) == 4
    assert memory["total_bytes"] == max(s["total_bytes"] for s in memory["stages"])
    assert isinstance(payload["fits"], bool)
    # ZeRO-1 over dp=2: optimizer states halved, 2 + 4 + 12/2 bytes per parameter
    assert memory["sharding"]["optimizer_divisor"] == 2 and memory["bytes_per_parameter"]["total"] == 18


def test_issue_example_table():
    result = runner.invoke(app, ISSUE_ARGS)
    assert result.exit_code == 0, result.output
    assert "stage 0" in result.stdout and "total" in result.stdout and "fits" in result.stdout


def test_plot(tmp_path):
    path = tmp_path / "memory.png"
    result = runner.invoke(app, ["memory", "--model", "llama3-8b", "--gpus", "8", "--pp", "4", "--plot", str(path)])
    assert result.exit_code == 0, result.output
    assert path.stat().st_size > 1000


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "gpt-5"], "unknown model 'gpt-5'"),
        (["--gpu", "v100"], "unknown gpu 'v100'"),
        (["--gpus", "64", "--tp", "8", "--pp", "4", "--dp", "3"], "tp(8) * pp(4) * cp(1) * dp(3) = 96 != gpus(64)"),
        (["--model", "llama3-70b", "--tp", "3", "--gpus", "3"], "is not divisible by tp(3)"),
        (["--recompute", "some"], "some"),
    ],
)
def test_bad_input_exits_2(args, message):
    result = runner.invoke(app, ["memory", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
