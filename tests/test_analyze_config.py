"""`distcalc analyze --config FILE`: the YAML the web page exports reproduces the run; options on the command
line override it; a bad file is exit 2 with a one-line message."""

import json

from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.jobs.analyze import AnalyzeRequest, request_to_yaml

runner = CliRunner()
OPTIONS = ["--model", "llama3-8b", "--cluster", "dgx-a100", "--gpus", "16", "--tp", "2", "--pp", "2",
           "--recompute", "selective", "--no-flash-attention", "--inter-bandwidth", "100Gbps"]


def run(args):
    result = runner.invoke(app, ["analyze", *args, "--json"])
    return result.exit_code, (json.loads(result.stdout) if result.exit_code == 0 else result.stderr)


def test_config_yaml_reproduces_the_options(tmp_path):
    request = AnalyzeRequest(model="llama3-8b", cluster="dgx-a100", gpus=16, tp=2, pp=2, recompute="selective",
                             flash_attention=False, inter_bandwidth="100Gbps")
    path = tmp_path / "run.yaml"
    path.write_text(request_to_yaml(request))
    assert run(["--config", str(path)]) == run(OPTIONS)


def test_command_line_overrides_the_config(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(request_to_yaml(AnalyzeRequest(model="llama3-8b", cluster="dgx-a100", gpus=16, tp=2)))
    code, payload = run(["--config", str(path), "--tp", "4"])
    assert code == 0 and payload["config"]["tp"] == 4 and payload["config"]["dp"] == 4
    assert payload == run(["--model", "llama3-8b", "--cluster", "dgx-a100", "--gpus", "16", "--tp", "4"])[1]


def test_the_example_is_written_out_in_full(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(request_to_yaml(AnalyzeRequest()))
    assert "model: llama3-70b" in path.read_text()
    assert run(["--config", str(path)]) == run([])


def test_bad_config_is_exit_2(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model: llama3-8b\npipeline: 4\n")
    code, stderr = run(["--config", str(path)])
    assert code == 2 and stderr.startswith("error: --config") and "unknown option(s) pipeline" in stderr
    path.write_text("- a list\n")
    code, stderr = run(["--config", str(path)])
    assert code == 2 and "does not hold a mapping" in stderr
