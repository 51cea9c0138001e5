"""Transformer Engine 2.3+ keeps one cached 16-bit dummy weight gradient per distinct linear weight shape
(``get_dummy_wgrad``): a persistent memory line, on every basis."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.memory import MemoryBasis, MemoryOptions, memory_report
from distcalc.memory.batch import memory_batch
from distcalc.memory.te_dummy_wgrad import DummyWgrad, dummy_wgrad_bytes, te_dummy_wgrad_mode
from distcalc.model import load_model
from distcalc.model.dims import model_dims
from distcalc.parallel import ParallelConfig
from distcalc.parallel_batch import configs_batch
from distcalc.validation.published import comparisons

LINEAR = MemoryOptions(te_dummy_wgrad=DummyWgrad.LINEAR)


def _config(**kw) -> ParallelConfig:
    base = dict(gpus=8, tp=8, pp=1, dp=1, micro_batch=1, global_batch=4, seq_len=4096)
    base.update(kw)
    return ParallelConfig(**base)


def test_one_dummy_per_distinct_shape_of_a_llama_layer():
    # Llama 3 70B at TP 8: QKV (64 + 2·8)·128/8 × 8192, output 8192 × 8192/8, gate+up 2·28672/8 × 8192,
    # down 8192 × 28672/8; 80 layers share the four shapes: 2 B each
    dims = model_dims(load_model("llama3-70b"))
    expected = 2.0 * (1280 * 8192 + 8192 * 1024 + 7168 * 8192 + 8192 * 3584)
    assert float(dummy_wgrad_bytes(dims, DummyWgrad.LINEAR, 80, 0, 8)) == pytest.approx(expected)
    assert float(dummy_wgrad_bytes(dims, DummyWgrad.LINEAR, 1, 0, 8)) == pytest.approx(expected)
    assert float(dummy_wgrad_bytes(dims, DummyWgrad.NONE, 80, 0, 8)) == 0.0
    assert float(dummy_wgrad_bytes(dims, DummyWgrad.LINEAR, 0, 0, 8)) == 0.0  # a stage without layers


def test_shapes_that_coincide_on_a_rank_share_one_dummy():
    # TP 1 of a square-attention model: the output projection h × h is one shape; QKV 3h × h another
    dims = model_dims(load_model("gpt3-175b"))
    h, f = 12288, 4 * 12288
    expected = 2.0 * (3 * h * h + h * h + f * h + h * f)
    assert float(dummy_wgrad_bytes(dims, DummyWgrad.LINEAR, 96, 0, 1)) == pytest.approx(expected)


def test_grouped_expert_dummies_only_from_te_2_10():
    dims = model_dims(load_model("mixtral-8x7b"))
    linear = float(dummy_wgrad_bytes(dims, DummyWgrad.LINEAR, 0, 32, 1))
    grouped = float(dummy_wgrad_bytes(dims, DummyWgrad.LINEAR_AND_GROUPED, 0, 32, 1))
    h, fe = 4096, 14336
    assert grouped - linear == pytest.approx(2.0 * (2 * fe * h + h * fe))


def test_release_sets_the_mode():
    assert te_dummy_wgrad_mode(None) is DummyWgrad.NONE
    assert te_dummy_wgrad_mode((2, 2)) is DummyWgrad.NONE
    assert te_dummy_wgrad_mode((2, 3)) is DummyWgrad.LINEAR
    assert te_dummy_wgrad_mode((2, 10)) is DummyWgrad.LINEAR_AND_GROUPED
    assert te_dummy_wgrad_mode((2, 11), fused_wgrad_accumulation=False) is DummyWgrad.NONE


def test_the_line_adds_to_every_basis():
    plain = memory_report("llama3-70b", _config())
    kept = memory_report("llama3-70b", _config(), options=LINEAR)
    dummy = kept.worst.weight_gradient_dummies_bytes
    assert dummy > 0 and plain.worst.weight_gradient_dummies_bytes == 0.0
    reserve = MemoryOptions().allocator_reserve_fraction
    for basis in (MemoryBasis.ALLOCATED, MemoryBasis.RESERVED, MemoryBasis.DEVICE):
        grown = kept.worst.peak_bytes(basis) - plain.worst.peak_bytes(basis)
        assert grown == pytest.approx(dummy * (1.0 if basis is MemoryBasis.ALLOCATED else 1.0 + reserve))


@settings(max_examples=20, deadline=None)
@given(t=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]),
       mode=st.sampled_from(list(DummyWgrad)))
def test_batch_path_agrees_with_the_report(t, pp, mode):
    options = MemoryOptions(te_dummy_wgrad=mode)
    config = _config(tp=t, pp=pp, gpus=t * pp, global_batch=4 * pp)
    report = memory_report("llama3-70b", config, options=options)
    batch = memory_batch(load_model("llama3-70b"), **configs_batch([config]), options=options)
    assert int(batch["worst_stage"][0]) == report.worst_stage
    assert float(batch["weight_gradient_dummies_bytes"][0]) == pytest.approx(
        report.worst.weight_gradient_dummies_bytes, rel=1e-12)
    assert float(batch["total_bytes"][0]) == pytest.approx(report.total_bytes, rel=1e-12)


def test_simumax_rows_run_te_2_11_and_other_sources_do_not_count_it():
    for c in comparisons():
        if c.inputs is None:
            continue
        expected = DummyWgrad.LINEAR_AND_GROUPED if c.run.source.startswith("SimuMax") else DummyWgrad.NONE
        assert c.inputs.memory_options.te_dummy_wgrad is expected, c.run.case_id


def test_simumax_dense_rows_agree_within_two_percent_with_the_dummies():
    # the Llama 3 70B / 405B rows (torch.cuda.max_memory_allocated, TE 2.11): -1.5 ... -8.6 % without the line
    errors = [c.predicted_memory_gib / c.measured_memory_gib - 1 for c in comparisons()
              if c.run.source.startswith("SimuMax") and "llama3" in c.run.case_id and c.predicted_memory_gib]
    assert len(errors) == 31
    assert max(abs(e) for e in errors) < 0.025


def test_cli_option_adds_the_line():
    args = ["memory", "--model", "llama3-70b", "--gpu", "b200", "--gpus", "8", "--tp", "8", "--pp", "1",
            "--micro-batch", "1", "--global-batch", "4", "--seq-len", "4096", "--json", "--allow-oom"]
    runner = CliRunner()
    plain = json.loads(runner.invoke(app, args).output)["memory"]
    kept = json.loads(runner.invoke(app, args + ["--te-dummy-wgrad", "linear"]).output)["memory"]
    assert plain["weight_gradient_dummies_bytes"] == 0.0
    assert kept["weight_gradient_dummies_bytes"] == pytest.approx(2.0 * (1280 + 1024 + 7168 + 3584) * 8192)
    bad = runner.invoke(app, args + ["--te-dummy-wgrad", "bogus"])
    assert bad.exit_code == 2
