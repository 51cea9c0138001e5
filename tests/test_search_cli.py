"""``distcalc search`` command line: JSON contract, CSV, table, bad input."""

import csv
import json

import pytest
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.search import parse_gpu_counts
from distcalc.search.counts import min_gpus_candidates
from distcalc.errors import ConfigError

runner = CliRunner()
GPT3 = ["search", "--model", "gpt3-175b", "--cluster", "dgx-a100", "--gpus", "64", "--global-batch", "64",
        "--seq-len", "2048"]
RESULT_KEYS = {"tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero", "recompute", "sequence_parallel",
               "schedule", "account_for_embedding_and_loss", "step_time_s", "mfu", "memory_bytes"}


def _json(args):
    result = runner.invoke(app, args + ["--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_contract_and_csv(tmp_path):
    out = tmp_path / "all.csv"
    data = _json(GPT3 + ["--top", "5", "--output", str(out)])
    assert {"evaluated", "feasible", "results", "rejected", "pareto"} <= set(data)
    assert len(data["results"]) == 5
    assert all(RESULT_KEYS <= set(row) for row in data["results"])
    times = [r["step_time_s"] for r in data["results"]]
    assert times == sorted(times)
    assert data["evaluated"] > data["feasible"] > 0
    assert set(data["rejected"]) == {"divisibility", "group_does_not_fit", "incompatible", "oom"}
    assert data["universe"] == data["feasible"] + sum(data["rejected"].values()) + data["equivalent_skipped"]
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == data["feasible"] == data["output"]["rows"]
    assert float(rows[0]["step_time_s"]) == pytest.approx(times[0])
    assert all(row["memory_bytes"] <= 0.95 * data["gpu_memory_bytes"] for row in data["results"])


def test_embedding_loss_split_shown(tmp_path):
    """Llama-3.1-405B (126 layers) at PP16 needs the embedding/loss split: JSON, CSV and the table show it."""
    args = ["search", "--model", "llama3-405b", "--cluster", "dgx-h100", "--gpus", "16384", "--global-batch",
            "2048", "--seq-len", "8192", "--zero", "1", "--recompute", "none", "--schedule", "interleaved"]
    out = tmp_path / "405b.csv"
    data = _json(args + ["--top", "3", "--output", str(out)])
    best = data["results"][0]
    assert best["pp"] == 16 and best["account_for_embedding_and_loss"] is True
    with open(out, newline="") as handle:
        header = next(csv.reader(handle))
    assert header[:13] == ["gpus", "tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero", "recompute",
                           "sequence_parallel", "schedule", "account_for_embedding_and_loss"]
    table = runner.invoke(app, args + ["--top", "1"])
    assert table.exit_code == 0 and "emb/loss split" in table.output


def test_restricted_choices_and_range():
    data = _json(["search", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "4..16", "--global-batch",
                  "32", "--seq-len", "4096", "--zero", "1", "--recompute", "full", "--schedule", "1f1b"])
    assert data["gpus"] == [4, 8, 16]
    assert {r["recompute"] for r in data["results"]} == {"full"}
    assert {r["zero"] for r in data["results"]} <= {0, 1}  # zero 0 only where dp*cp = 1 (equivalent)
    assert data["pareto_gpus"]


def test_min_gpus_cli():
    data = _json(["search", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "64", "--global-batch", "64",
                  "--seq-len", "4096", "--min-gpus"])
    assert data["min_gpus"] == data["gpus"][-1]
    assert data["feasible"] > 0


def test_table_output():
    result = runner.invoke(app, GPT3 + ["--top", "3"])
    assert result.exit_code == 0, result.output
    assert "top 3 distinct configurations by step time" in result.output and "Pareto" in result.output and "headroom" in result.output


@pytest.mark.parametrize("args, fragment", [
    (["--gpus", "0"], "--gpus"), (["--gpus", "8..4"], "below"), (["--gpus", "x"], "not an integer"),
    (["--headroom", "1.5"], "headroom"), (["--global-batch", "0"], "global_batch"),
    (["--zero", "7"], "--zero"), (["--schedule", "pipedream"], "--schedule"), (["--recompute", "half"], "--recompute"),
    (["--model", "no-such-model"], "no-such-model"), (["--cluster", "no-such-cluster"], "no-such-cluster"),
    (["--target-step-time", "fast", "--min-gpus"], "fast"),
])
def test_bad_input_exits_2(args, fragment):
    result = runner.invoke(app, ["search", "--gpus", "8", "--model", "llama3-8b"] + args)
    assert result.exit_code == 2
    assert fragment in result.output
    assert "Traceback" not in result.output


def test_parse_gpu_counts():
    assert parse_gpu_counts("64") == [64]
    assert parse_gpu_counts("8,16, 24") == [8, 16, 24]
    assert parse_gpu_counts("8..64") == [8, 16, 32, 64]
    assert parse_gpu_counts("8..48") == [8, 16, 32, 48]
    with pytest.raises(ConfigError):
        parse_gpu_counts("-1")
    assert min_gpus_candidates(32, 8) == [1, 2, 4, 8, 16, 24, 32]


def test_nothing_valid_still_answers(tmp_path):
    out = tmp_path / "none.csv"
    # 5 GPUs: 5 divides none of 96 heads/layers, 96 + 2 slots, 64 sequences, 2048 tokens (7 would: PP7 on 98 slots)
    # nothing fits: exit 3 (the JSON still answers; --allow-oom exits 0)
    data = _json(["search", "--gpus", "5", "--model", "gpt3-175b", "--global-batch", "64", "--output", str(out),
                  "--allow-oom"])
    assert data["evaluated"] == data["feasible"] == 0 and data["results"] == [] and data["pareto"] == []
    assert data["rejected"]["divisibility"] > 0
    assert out.read_text().splitlines()[0].startswith("gpus,tp,pp")
    table = runner.invoke(app, ["search", "--gpus", "1", "--model", "llama3-405b"])
    assert table.exit_code == 3 and "no configuration fits" in table.output
