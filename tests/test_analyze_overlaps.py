"""analyze states which overlaps it assumed, per dimension, with the exposed time it charged."""

import json

import pytest
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.cli import app
from distcalc.parallel import ParallelConfig

CONFIG = ParallelConfig(gpus=256, tp=4, pp=4, dp=16, micro_batch=1, global_batch=512, seq_len=4096,
                        distributed_optimizer=True)


def _by_dim(report):
    return {row["dim"]: row for row in report.overlaps}


def test_every_dimension_in_use_is_stated_with_its_exposed_time():
    report = analyze("llama2-70b", "dgx-h100", CONFIG, AnalyzeOptions(distributed_optimizer=True))
    rows = _by_dim(report)
    assert set(rows) == {"tp", "pp", "dp"}
    bd = report.time_breakdown
    assert rows["tp"]["exposed_s"] == pytest.approx(bd["tp_exposed_s"])
    assert rows["pp"]["exposed_s"] == pytest.approx(bd["pp_p2p_s"])
    assert rows["dp"]["exposed_s"] == pytest.approx(bd["dp_exposed_s"])
    # no userbuffers by default; the backward collectives asynchronous as Megatron-Core launches them
    assert rows["tp"]["hidden_behind"].startswith("39 %") and "tp_async_backward" in rows["tp"]["reason"]
    sync = _by_dim(analyze("llama2-70b", "dgx-h100", CONFIG, AnalyzeOptions(distributed_optimizer=True,
                                                                            tp_async_backward=False)))
    assert sync["tp"]["hidden_behind"].startswith("nothing")
    assert "overlap_grad_reduce" in rows["dp"]["reason"]


def test_options_change_the_statement():
    options = AnalyzeOptions(tp_overlap_efficiency=1.0, pipeline_p2p_overlap=True, overlap_grad_reduce=False,
                             distributed_optimizer=True)
    rows = _by_dim(analyze("llama2-70b", "dgx-h100", CONFIG, options))
    assert "userbuffers" in rows["tp"]["reason"]
    assert "overlap_p2p_comm" in rows["pp"]["reason"]
    assert rows["dp"]["hidden_behind"].startswith("nothing")


def test_fsdp_statement_and_json():
    config = ParallelConfig(gpus=64, dp=64, zero=3, micro_batch=1, global_batch=64, seq_len=4096)
    report = analyze("llama2-7b", "dgx-a100", config)
    (row,) = report.overlaps
    assert "FSDP" in row["collectives"] and "18.9 %" in row["reason"]
    assert json.loads(json.dumps(report.to_dict()))["overlaps"][0]["dim"] == "dp"


def test_cli_prints_the_overlap_table():
    result = CliRunner().invoke(app, ["analyze", "--model", "llama2-7b", "--cluster", "dgx-a100", "--gpus", "64",
                                      "--dp", "64", "--zero", "3", "--seq-len", "4096"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "overlaps assumed" in result.output


def test_cli_overlap_slowdown_and_reduce_bytes_options():
    """--overlap-slowdown 0 (free overlap) and bf16 reduction are faster than the defaults; bad values exit 2."""
    base = ["analyze", "--model", "llama2-7b", "--cluster", "dgx-a100", "--gpus", "64", "--dp", "64", "--zero", "3",
            "--seq-len", "4096", "--json"]
    runner = CliRunner()
    step = lambda extra: json.loads(runner.invoke(app, base + extra).output)["step_time_s"]  # noqa: E731
    default = step([])
    assert step(["--overlap-slowdown", "0"]) < default
    assert step(["--grad-reduce-bytes", "2"]) < default
    assert runner.invoke(app, base + ["--overlap-slowdown", "1.5"]).exit_code == 2
