"""The per-message rows of `analyze` add up to the step-time breakdown, dimension by dimension."""

import pytest

from distcalc.analyze import analyze
from distcalc.cluster import load_cluster
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig

CONFIGS = [
    dict(gpus=64, tp=4, pp=8, cp=2, dp=1, vpp=6, micro_batch=2, global_batch=64, zero=3, sequence_parallel=True),
    dict(gpus=64, tp=8, cp=8, dp=1, micro_batch=1, global_batch=64, recompute="full", sequence_parallel=True, zero=3),
    dict(gpus=64, tp=8, pp=8, vpp=3, micro_batch=1, global_batch=64, recompute="selective", sequence_parallel=True),
    dict(gpus=64, tp=8, pp=2, dp=4, micro_batch=1, global_batch=64, zero=1),
]


def _report(fields):
    return analyze(load_model("gpt3-175b"), load_cluster("dgx-a100"), ParallelConfig(seq_len=2048, **fields)).to_dict()


@pytest.mark.parametrize("fields", CONFIGS)
@pytest.mark.parametrize("dim", ["cp", "dp"])
def test_rows_add_up_to_breakdown(fields, dim):
    data = _report(fields)
    rows = sum(c["exposed_s"] for c in data["communication"] if c["dim"] == dim)
    assert rows == pytest.approx(data["time_breakdown"][f"{dim}_exposed_s"], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("fields", CONFIGS)
def test_tp_rows_bracket_the_slowest_stage(fields):
    """TP rows list the first stage's embedding and the last stage's logits collectives together; the breakdown
    is the slowest stage's, which has the per-layer collectives plus at most those of its own end."""
    data = _report(fields)
    tp_rows = [c for c in data["communication"] if c["dim"] == "tp"]
    ends = ("embedding", "logits", "scatter/gather")
    per_layer = sum(c["exposed_s"] for c in tp_rows if not any(word in c["note"] for word in ends))
    every_row = sum(c["exposed_s"] for c in tp_rows)
    assert per_layer * (1 - 1e-9) <= data["time_breakdown"]["tp_exposed_s"] <= every_row * (1 + 1e-9)
