"""Megatron-LM's non-flash core attention keeps its raw scores in a persistent GlobalMemoryBuffer
(b·a/t·s·s elements of the activation dtype), held on top of the activations where flash attention is off."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.memory import MemoryBasis, MemoryOptions, memory_report
from distcalc.memory.activations import attention_score_buffer_bytes
from distcalc.memory.batch import memory_batch
from distcalc.model import load_model
from distcalc.model.dims import model_dims
from distcalc.parallel import ParallelConfig
from distcalc.parallel_batch import configs_batch
from distcalc.validation.published import comparisons
from distcalc.validation.published.stack_kernels import attention_score_buffer

BUFFER = MemoryOptions(attention_score_buffer=True)


def _config(flash: bool, **kw) -> ParallelConfig:
    base = dict(gpus=16, tp=2, pp=4, dp=2, micro_batch=2, global_batch=64, seq_len=2048, flash_attention=flash,
                dtype="fp16")
    base.update(kw)
    return ParallelConfig(**base)


def test_buffer_is_one_score_tensor_of_the_local_heads():
    dims = model_dims(load_model("gpt3-175b"))  # 96 heads
    assert attention_score_buffer_bytes(dims, 2048, 2, 8, 1) == pytest.approx(2.0 * 2 * 96 / 8 * 2048 * 2048)
    assert attention_score_buffer_bytes(dims, 2048, 2, 8, 2) == pytest.approx(2.0 * 2 * 96 / 8 * 1024 * 2048)


def test_added_only_without_flash_and_only_for_stacks_that_keep_it():
    plain = memory_report("gpt3-175b", _config(False))
    kept = memory_report("gpt3-175b", _config(False), options=BUFFER)
    flash = memory_report("gpt3-175b", _config(True), options=BUFFER)
    expected = 2.0 * 2 * 96 / 2 * 2048 * 2048
    for a, b in zip(plain.stages, kept.stages):
        assert a.attention_buffer_bytes == 0.0
        assert b.attention_buffer_bytes == pytest.approx(expected)
        assert b.activations_bytes - a.activations_bytes == pytest.approx(expected)
        assert b.peak_bytes(MemoryBasis.ALLOCATED) - a.peak_bytes(MemoryBasis.ALLOCATED) == pytest.approx(expected)
    assert all(s.attention_buffer_bytes == 0.0 for s in flash.stages)


@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 8), t=st.sampled_from([1, 2, 4, 8]), flash=st.booleans())
def test_batch_path_agrees_with_the_report(b, t, flash):
    config = _config(flash, tp=t, dp=2, gpus=t * 8, micro_batch=b, global_batch=16 * b)
    report = memory_report("gpt3-175b", config, options=BUFFER)
    batch = memory_batch(load_model("gpt3-175b"), **configs_batch([config]), options=BUFFER)
    assert int(batch["worst_stage"][0]) == report.worst_stage
    assert float(batch["attention_buffer_bytes"][0]) == pytest.approx(report.worst.attention_buffer_bytes, rel=1e-12)
    assert float(batch["total_bytes"][0]) == pytest.approx(report.total_bytes, rel=1e-12)


def test_zero_bubble_rows_hold_the_buffer_and_other_stacks_do_not():
    runs = {c.run.source: c.run for c in comparisons()}
    assert attention_score_buffer(runs["ZeroBubble_Qi2024_T4"])
    for source in ("Narayanan2021_Table1", "BLOOM_prequel_sweep_2022-02-21", "SimuMax_B200_v1.2_2026",
                   "FlagPerf_nvidia_llama3_8B-megatron"):
        assert not attention_score_buffer(runs[source])


def test_cli_flag_adds_the_line_only_when_asked_and_without_flash():
    import json

    from typer.testing import CliRunner

    from distcalc.cli import app

    args = ["memory", "--model", "megatron-22b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "8", "--pp", "1",
            "--micro-batch", "2", "--global-batch", "2", "--seq-len", "2048", "--recompute", "selective",
            "--dtype", "fp16", "--json"]
    runner = CliRunner()

    def worst(extra):
        result = runner.invoke(app, args + extra)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)["memory"]  # the worst stage's lines

    without, kept = worst(["--no-flash-attention"]), worst(["--no-flash-attention", "--attention-score-buffer"])
    assert without["attention_buffer_bytes"] == 0.0
    assert kept["attention_buffer_bytes"] == pytest.approx(2.0 * 2 * 64 / 8 * 2048 * 2048)  # 64 heads, t = 8
    assert worst(["--attention-score-buffer"])["attention_buffer_bytes"] == 0.0  # flash attention: none
    result = runner.invoke(app, args[:-1] + ["--no-flash-attention"])
    assert "attention-score buffer" not in result.output
