"""Embedding and loss in the pipeline split (Megatron-Core --account-for-embedding/loss-in-pipeline-split):
the step-time model uses the layers each stage really holds."""

import pytest

from distcalc.analyze import analyze, evaluate_batch
from distcalc.errors import ConfigError
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig

LLAMA405 = dict(gpus=8192, tp=8, pp=16, micro_batch=1, global_batch=2048, seq_len=8192, sequence_parallel=True,
                distributed_optimizer=True)


def test_126_layers_on_16_stages_need_the_split():
    with pytest.raises(ConfigError, match=r"num_hidden_layers\(126\).*account-for-embedding-and-loss"):
        analyze("llama3-405b", "dgx-h100", ParallelConfig(**LLAMA405))
    report = analyze("llama3-405b", "dgx-h100", ParallelConfig(**LLAMA405, account_for_embedding_and_loss=True))
    assert report.step_time_s > 0 and 0 < report.mfu < 1


def test_slowest_stage_is_a_middle_one_with_eight_layers():
    spec = load_model("llama3-405b")
    report = analyze(spec, "dgx-h100", ParallelConfig(**LLAMA405, vpp=8, account_for_embedding_and_loss=True))
    layers_126 = report.pipeline["stage_forward_s"]
    # a uniform 128-layer twin holds 8 layers on every stage: its middle stages equal our middle stages
    twin = spec.model_copy(update={"num_hidden_layers": 128})
    twin_report = analyze(twin, "dgx-h100", ParallelConfig(**LLAMA405, vpp=8))
    assert layers_126 == pytest.approx(twin_report.pipeline["stage_forward_s"], rel=1e-12)
    # ... but its last stage also carries the output layer, so the twin's step is slower
    assert report.step_time_s < twin_report.step_time_s


def test_split_with_two_stages_equals_no_split():
    """80 layers + 2 slots on 2 stages: 40 layers each, exactly the even split."""
    base = dict(gpus=16, tp=8, pp=2, micro_batch=1, global_batch=8, seq_len=4096, sequence_parallel=True)
    plain = analyze("llama3-70b", "dgx-h100", ParallelConfig(**base))
    split = analyze("llama3-70b", "dgx-h100", ParallelConfig(**base, account_for_embedding_and_loss=True))
    assert split.step_time_s == plain.step_time_s
    assert split.memory["total_bytes"] == plain.memory["total_bytes"]


def test_batch_equals_single_configuration_with_the_split():
    configs = [ParallelConfig(**{**LLAMA405, "vpp": v, "account_for_embedding_and_loss": True}) for v in (1, 2, 8)]
    batch = {"tp": [8] * 3, "pp": [16] * 3, "dp": [64] * 3, "vpp": [1, 2, 8], "micro_batch": [1] * 3,
             "global_batch": [2048] * 3, "seq_len": [8192] * 3, "sequence_parallel": [1] * 3,
             "schedule": [1, 2, 2], "zero": [1] * 3, "account_for_embedding_and_loss": [1] * 3}
    out = evaluate_batch("llama3-405b", "dgx-h100", batch)
    for i, config in enumerate(configs):
        report = analyze("llama3-405b", "dgx-h100", config)
        assert out["step_time_s"][i] == pytest.approx(report.step_time_s, rel=1e-12)
        assert out["memory_bytes"][i] == pytest.approx(report.memory["total_bytes"], rel=1e-9)
