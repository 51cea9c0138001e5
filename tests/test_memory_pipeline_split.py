"""The embedding and the loss in the pipeline split (Megatron-Core ``--account-for-embedding-in-pipeline-split``
``--account-for-loss-in-pipeline-split``; Llama 3, Dubey et al. 2024, arXiv:2407.21783 §3.3.2: "reduce one
Transformer layer each from the first and the last stages"): per-stage layers, batch = report, CLI."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.errors import ConfigError
from distcalc.memory import memory_batch, memory_report, memory_worst_stage_bytes_batch
from distcalc.model.dims import model_dims
from distcalc.memory.stage import stage_moe_layers
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig, chunk_layer_range, stage_layout, validate_for_model
from distcalc.parallel_batch import configs_batch

runner = CliRunner()
LLAMA_405B = dict(gpus=16384, tp=8, pp=16, global_batch=2048, seq_len=8192, sequence_parallel=True)


def batch_args(configs: list[ParallelConfig]) -> dict[str, list]:
    """memory_batch keywords for a list of configurations (one row each)."""
    return dict(configs_batch(configs), weight_cache_bytes=[c.dtype.weight_cache_bytes_per_parameter for c in configs])


def test_llama3_405b_pp16_stage_layers():
    report = memory_report("llama3-405b", ParallelConfig(**LLAMA_405B, account_for_embedding_and_loss=True))
    layers = [s.layers for s in report.stages]
    assert layers == [7] + [8] * 14 + [7]
    assert sum(layers) == 126
    # a uniform model: a middle stage holds 8/7 of an edge stage's transformer-layer parameters
    assert report.stages[1].layer_parameters * 7 == report.stages[0].layer_parameters * 8
    assert report.stages[0].layer_parameters == report.stages[15].layer_parameters
    assert report.worst_stage == 1  # the first middle stage: 8 layers and 15 in-flight micro-batches


def test_llama3_405b_pp16_needs_the_split():
    config = ParallelConfig(**LLAMA_405B)
    with pytest.raises(ConfigError, match=r"num_hidden_layers\(126\)"):
        validate_for_model(config, load_model("llama3-405b"))


def test_interleaved_one_layer_per_chunk():
    """pp16 vpp8 with the split: 128 chunks of one slot; chunk 0 holds only the embedding, the last only the loss."""
    assert tuple(map(int, chunk_layer_range(126, 0, 16, 8, 1))) == (0, 0)
    assert tuple(map(int, chunk_layer_range(126, 127, 16, 8, 1))) == (126, 126)
    assert tuple(map(int, chunk_layer_range(126, 16, 16, 8, 1))) == (15, 16)
    config = ParallelConfig(**LLAMA_405B, vpp=8, account_for_embedding_and_loss=True)
    report = memory_report("llama3-405b", config)
    assert [s.layers for s in report.stages] == [7] + [8] * 14 + [7]
    assert sum(s.layers for s in report.stages) == 126


def test_moe_layers_follow_the_chunks():
    dims = model_dims(load_model("deepseek-v3"))  # 3 dense layers, then 58 MoE
    # pp 7 vpp 3: 21 chunks of 3 slots; stage 0 = chunks 0, 7, 14 = layers [0, 2), [20, 23), [41, 44)
    counts = stage_moe_layers(dims, np.arange(7), 7, 3, 1)
    assert counts.tolist() == [6, 8, 9, 9, 9, 9, 8]
    assert int(counts.sum()) == 58
    # without the split: 61 layers on pp 61, one per stage, as before
    assert stage_moe_layers(dims, np.arange(61), 61, 1).tolist() == [0, 0, 0] + [1] * 58



def test_stage_layout_counts_every_layer_once():
    """stage_layout: over the stages the counts sum to L and the MoE counts to the model's MoE layers, with the
    split, interleaving, and uneven ends mixed with even rows in one batch (each row as computed alone)."""
    dims = model_dims(load_model("deepseek-v3"))  # 61 layers, 58 MoE
    stages = np.arange(7)
    layers, moe = stage_layout(dims.layers, dims.moe_cumulative, stages, 7, 3, 1)
    assert float(layers.sum()) == 61.0 and int(moe.sum()) == 58
    assert moe.tolist() == stage_moe_layers(dims, stages, 7, 3, 1).tolist()
    # uneven ends (first 4, last 3): 54 layers over 5 middle stages is not whole; use pp 5: 4 + 3·18 + 3
    uneven = stage_layout(dims.layers, dims.moe_cumulative, np.arange(5), 5, 1, 0, 4, 3)
    assert uneven.layers.tolist() == [4.0, 18.0, 18.0, 18.0, 3.0]
    assert uneven.moe_layers.tolist() == [1, 18, 18, 18, 3]
    mixed = stage_layout(dims.layers, dims.moe_cumulative, np.array([0, 1, 0, 1]), np.array([5, 5, 7, 7]),
                         1, 0, np.array([4, 4, 0, 0]), np.array([3, 3, 0, 0]))
    even = stage_layout(dims.layers, dims.moe_cumulative, np.array([0, 1]), 7, 1)
    assert mixed.moe_layers.tolist() == [1, 18, *even.moe_layers.tolist()]


CASES = [
    ("llama3-405b", dict(LLAMA_405B)),
    ("llama3-405b", dict(LLAMA_405B, vpp=8, zero=1, recompute="selective")),
    ("llama3-405b", dict(LLAMA_405B, gpus=8 * 16 * 4, global_batch=16, schedule="gpipe")),
    ("llama3-405b", dict(LLAMA_405B, gpus=8 * 16 * 4, global_batch=64, schedule="zero-bubble")),
    ("llama3-8b", dict(gpus=17, pp=17, global_batch=68)),  # 34 slots: 2 per stage, 1 layer on the edges
    ("llama3-8b", dict(gpus=16, pp=2, tp=8, vpp=17, global_batch=4)),  # m·vpp caps the interleaved warm-up
    ("mixtral-8x7b", dict(gpus=64, tp=2, pp=2, ep=8, zero=1, global_batch=128)),  # 34 slots: 17 per stage
    ("mixtral-8x7b", dict(gpus=17 * 4, pp=17, ep=4, global_batch=68, recompute="full")),
    ("deepseek-v3", dict(gpus=3 * 64, pp=3, ep=64, zero=1, global_batch=384)),
    ("deepseek-v3", dict(gpus=7 * 8, pp=7, vpp=3, ep=8, zero=3, global_batch=112)),
    ("deepseek-v3", dict(gpus=9 * 8, pp=9, vpp=7, ep=8, global_batch=144)),
    ("deepseek-v3", dict(gpus=21 * 4, pp=21, ep=4, global_batch=168, schedule="gpipe")),
]


def _configs(kwargs: dict) -> list[ParallelConfig]:
    """The configuration with the split, and without it where the layers allow."""
    out = [ParallelConfig(**kwargs, account_for_embedding_and_loss=True)]
    return out + [ParallelConfig(**kwargs)]


@pytest.mark.parametrize("name, kwargs", CASES)
def test_batch_equals_report(name, kwargs):
    spec = load_model(name)
    configs = []
    for config in _configs(kwargs):
        try:
            validate_for_model(config, spec)
        except ConfigError:
            assert not config.account_for_embedding_and_loss
            continue
        configs.append(config)
    reports = [memory_report(spec, c) for c in configs]
    if configs[0].pp > 1:
        assert sum(s.layers for s in reports[0].stages) == spec.num_hidden_layers
        assert reports[0].stages[0].layers == (spec.num_hidden_layers + 2) // configs[0].pp - 1
    batch = memory_batch(spec, **batch_args(configs))  # rows with and without the split in one call
    totals = memory_worst_stage_bytes_batch(spec, **batch_args(configs))
    for row, report in enumerate(reports):
        assert report.total_bytes == max(s.total_bytes for s in report.stages)
        assert int(batch["worst_stage"][row]) == report.worst_stage
        assert float(totals[row]) == pytest.approx(report.total_bytes, rel=1e-9)
        for key, value in report.worst.model_dump().items():
            if key != "stage":
                assert float(batch[key][row]) == pytest.approx(value, rel=1e-9, abs=1e-9), key


def test_batch_equals_report_on_random_sample():
    """Random flagged and unflagged configurations of a uniform and an MoE-mix model, in one call each."""
    rng = np.random.default_rng(3)
    for name, pps in (("llama3-405b", [1, 2, 3, 4, 8, 16, 32, 64]), ("deepseek-v3", [1, 3, 7, 9, 21, 61])):
        spec = load_model(name)
        configs = []
        while len(configs) < 40:
            pp, split = int(rng.choice(pps)), bool(rng.integers(0, 2))
            vpp = int(rng.choice([1, 2, 3, 4, 7, 8])) if pp > 1 else 1
            dp = int(rng.choice([1, 2, 4, 8]))
            try:
                config = ParallelConfig(
                    gpus=8 * pp * dp, tp=8, pp=pp, dp=dp, vpp=vpp,
                    ep=int(rng.choice([1, 2, 4, 8])) if spec.is_moe else 1,
                    zero=int(rng.integers(0, 4)), sequence_parallel=bool(rng.integers(0, 2)),
                    recompute=["none", "selective", "full"][rng.integers(0, 3)], seq_len=int(rng.choice([1024, 8192])),
                    global_batch=dp * int(rng.choice([1, 2, 4, 16, 64])), account_for_embedding_and_loss=split,
                    schedule=None if vpp > 1 else str(rng.choice(["1f1b", "gpipe", "zero-bubble"])))
                validate_for_model(config, spec)
            except ConfigError:
                continue
            configs.append(config)
        reports = [memory_report(spec, c) for c in configs]
        batch = memory_batch(spec, **batch_args(configs))
        np.testing.assert_allclose(batch["total_bytes"], [r.total_bytes for r in reports], rtol=1e-9)
        assert batch["worst_stage"].tolist() == [r.worst_stage for r in reports]
        assert any(c.account_for_embedding_and_loss and c.pp > 2 for c in configs)


@pytest.mark.parametrize("name, kwargs", [("llama3-8b", dict(gpus=8, tp=8)),
                                          ("deepseek-v3", dict(gpus=8, ep=8, zero=3, recompute="full"))])
def test_split_with_one_stage_changes_nothing(name, kwargs):
    spec = load_model(name)
    plain, split = ParallelConfig(**kwargs), ParallelConfig(**kwargs, account_for_embedding_and_loss=True)
    assert memory_report(spec, plain).stages == memory_report(spec, split).stages
    a, b = memory_batch(spec, **batch_args([plain])), memory_batch(spec, **batch_args([split]))
    for key in a:
        assert np.array_equal(a[key], b[key]), key


def test_split_default_is_off():
    spec = load_model("llama3-70b")
    config = ParallelConfig(gpus=64, tp=8, pp=4, global_batch=64)
    args = batch_args([config])
    del args["account_for_embedding_and_loss"]
    assert float(memory_worst_stage_bytes_batch(spec, **args)[0]) == memory_report(spec, config).total_bytes


def test_cli_llama3_405b():
    base = ["memory", "--model", "llama3-405b", "--gpus", "16384", "--tp", "8", "--pp", "16", "--global-batch",
            "2048", "--seq-len", "8192", "--sequence-parallel", "--allow-oom"]  # 101 GiB > 80 GiB: exit 3 without
    result = runner.invoke(app, base + ["--account-for-embedding-and-loss", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["config"]["account_for_embedding_and_loss"] is True
    assert [s["layers"] for s in payload["memory"]["stages"]] == [7] + [8] * 14 + [7]
    table = runner.invoke(app, base + ["--account-for-embedding-and-loss"])
    assert table.exit_code == 0, table.output
    refused = runner.invoke(app, base + ["--no-account-for-embedding-and-loss"])
    assert refused.exit_code == 2
    assert "num_hidden_layers(126)" in refused.output and "account-for-embedding-and-loss" in refused.output
