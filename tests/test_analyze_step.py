"""Step-time model: contract keys, one implementation for batch and single configs, sanity properties."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, analyze, config_batch, evaluate_batch
from distcalc.cli import app
from distcalc.cluster import load_cluster
from distcalc.parallel import ParallelConfig

runner = CliRunner()
MUST_WORK = ["analyze", "--model", "gpt3-175b", "--cluster", "dgx-a100", "--gpus", "64", "--tp", "8", "--pp", "8",
             "--vpp", "3", "--micro-batch", "1", "--global-batch", "64", "--seq-len", "2048", "--recompute",
             "selective", "--sequence-parallel", "--json"]


def test_cli_json_contract_keys():
    result = runner.invoke(app, MUST_WORK)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in ("model", "step_time_s", "mfu", "hfu", "tokens_per_s", "memory", "time_breakdown", "communication"):
        assert key in data
    assert set(data["model"]) >= {"name", "parameters"}
    assert "compute_s" in data["time_breakdown"] and "total_bytes" in data["memory"]
    for row in data["communication"]:
        assert set(row) >= {"dim", "collective", "size_bytes", "count", "time_s", "exposed_s", "algorithm", "topology"}
    assert 0.3 < data["mfu"] < 0.7


def test_cli_default_example_and_table_view():
    result = runner.invoke(app, ["analyze"])
    assert result.exit_code == 0, result.output
    assert "built-in example" in result.stdout and "time breakdown" in result.stdout
    assert "communication per step" in result.stdout and "memory (worst stage)" in result.stdout


def test_cli_bad_input_exit_2():
    result = runner.invoke(app, ["analyze", "--model", "gpt3-175b", "--cluster", "nope"])
    assert result.exit_code == 2 and "unknown cluster" in result.output
    result = runner.invoke(app, ["analyze", "--model", "gpt3-175b", "--cluster", "dgx-a100", "--tp", "7", "--gpus", "14"])
    assert result.exit_code == 2 and "tp" in result.output


def test_cli_plot(tmp_path):
    path = tmp_path / "a.png"
    result = runner.invoke(app, ["analyze", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "2",
                                 "--pp", "2", "--global-batch", "32", "--plot", str(path)])
    assert result.exit_code == 0, result.output
    assert path.stat().st_size > 10_000


def test_time_to_train():
    config = ParallelConfig(gpus=64, tp=8, pp=2, micro_batch=1, global_batch=64, seq_len=4096)
    report = analyze("llama3-8b", "dgx-h100", config, tokens=1e12)
    assert report.time_to_train_s == pytest.approx(1e12 / report.tokens_per_s)
    assert sum(v for k, v in report.time_breakdown.items() if k not in ("total_s", "tp_on_link_s", "dp_on_link_s")) \
        == pytest.approx(report.step_time_s)


def _random_batch(rng, n):
    tp = rng.choice([1, 2, 4, 8], n)
    pp = rng.choice([1, 2, 4], n)
    dp = rng.choice([1, 2, 4], n)
    vpp = np.where(pp > 1, rng.choice([1, 2], n), 1)
    schedule = np.where(vpp > 1, 2, rng.choice([0, 1, 3], n))
    schedule = np.where(pp == 1, 1, schedule)
    mb = rng.choice([1, 2], n)
    m = rng.choice([1, 2, 4], n) * pp
    return {"tp": tp, "pp": pp, "dp": dp, "vpp": vpp, "schedule": schedule, "micro_batch": mb,
            "global_batch": mb * dp * m, "zero": np.where(dp > 1, rng.choice([0, 1, 2, 3], n), 0),
            "recompute": rng.choice([0, 1, 2], n), "sequence_parallel": np.where(tp > 1, rng.integers(0, 2, n), 0),
            "flash_attention": rng.integers(0, 2, n), "seq_len": 2048}


def test_batch_equals_single_configuration():
    """evaluate_batch and analyze() share the formulas: a random sample agrees both ways."""
    rng = np.random.default_rng(5)
    batch = _random_batch(rng, 24)
    out = evaluate_batch("llama3-8b", "dgx-h100", batch)
    for i in range(24):
        schedule = ("gpipe", "1f1b", "interleaved", "zero-bubble")[int(batch["schedule"][i])]
        config = ParallelConfig(
            tp=int(batch["tp"][i]), pp=int(batch["pp"][i]), dp=int(batch["dp"][i]), vpp=int(batch["vpp"][i]),
            schedule=schedule, micro_batch=int(batch["micro_batch"][i]), global_batch=int(batch["global_batch"][i]),
            zero=int(batch["zero"][i]), recompute=("none", "selective", "full")[int(batch["recompute"][i])],
            sequence_parallel=bool(batch["sequence_parallel"][i]), flash_attention=bool(batch["flash_attention"][i]),
            seq_len=2048)
        assert config_batch(config)["schedule"] == int(batch["schedule"][i])
        report = analyze("llama3-8b", "dgx-h100", config)
        assert report.step_time_s == pytest.approx(float(out["step_time_s"][i]), rel=1e-9)
        assert report.mfu == pytest.approx(float(out["mfu"][i]), rel=1e-9)
        assert report.memory["total_bytes"] == pytest.approx(float(out["memory_bytes"][i]), rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(tp=st.sampled_from([1, 2, 8]), pp=st.sampled_from([1, 2]), dp=st.sampled_from([1, 2]),
       sp=st.booleans(), recompute=st.sampled_from(["none", "selective", "full"]))
def test_degree_one_means_no_communication_on_that_dimension(tp, pp, dp, sp, recompute):
    config = ParallelConfig(tp=tp, pp=pp, dp=dp, micro_batch=1, global_batch=2 * dp * pp, seq_len=2048,
                            sequence_parallel=sp and tp > 1, recompute=recompute, zero=1 if dp > 1 else 0)
    report = analyze("llama3-8b", "dgx-a100", config)
    dims = {row["dim"] for row in report.communication if row["time_s"] > 0}
    assert ("tp" in dims) == (tp > 1)
    assert ("dp" in dims) == (dp > 1)
    assert ("pp" in dims) == (pp > 1)
    assert "cp" not in dims and "ep" not in dims
    if tp == 1:
        assert report.time_breakdown["tp_exposed_s"] == 0
    if pp == 1:
        assert report.time_breakdown["pp_p2p_s"] == 0 and report.time_breakdown["bubble_s"] == pytest.approx(0, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(1.0, 16.0), tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]),
       zero=st.sampled_from([0, 1, 3]), overlap=st.booleans())
def test_faster_inter_node_network_never_increases_step_time(scale, tp, pp, zero, overlap):
    base = load_cluster("dgx-a100")
    faster = load_cluster("dgx-a100", inter_bandwidth_bytes_per_s=base.inter.bandwidth_bytes_per_s * scale)
    batch = {"tp": tp, "pp": pp, "dp": 64 // (tp * pp), "micro_batch": 1, "global_batch": 4 * pp * (64 // (tp * pp)),
             "zero": zero, "sequence_parallel": int(tp > 1), "recompute": 1, "seq_len": 2048}
    options = AnalyzeOptions(overlap_grad_reduce=overlap)
    slow = evaluate_batch("llama3-8b", base, batch, options, memory=False)["step_time_s"]
    fast = evaluate_batch("llama3-8b", faster, batch, options, memory=False)["step_time_s"]
    assert float(fast) <= float(slow) * (1 + 1e-12)


def test_more_micro_batches_lower_bubble_share():
    shares = []
    for m in (8, 16, 32, 64):
        r = evaluate_batch("llama3-8b", "dgx-a100", {"tp": 8, "pp": 4, "micro_batch": 1, "global_batch": m},
                           memory=False)
        shares.append(float(r["bubble_s"] / r["step_time_s"]))
    assert shares == sorted(shares, reverse=True)


def test_moe_and_context_parallel_run():
    config = ParallelConfig(gpus=64, tp=2, ep=8, pp=1, micro_batch=1, global_batch=32, seq_len=4096,
                            sequence_parallel=True)
    report = analyze("mixtral-8x7b", "dgx-h100", config)
    assert report.time_breakdown["ep_exposed_s"] > 0
    config = ParallelConfig(gpus=16, tp=2, cp=4, micro_batch=1, global_batch=2, seq_len=32768, sequence_parallel=True)
    for algorithm in ("ring", "ulysses"):
        report = analyze("llama3-8b", "dgx-h100", config, AnalyzeOptions(cp_algorithm=algorithm))
        assert any(row["dim"] == "cp" for row in report.communication)


def test_torus_cluster_runs():
    config = ParallelConfig(gpus=64, tp=4, micro_batch=1, global_batch=16, seq_len=4096)
    report = analyze("llama3-8b", "tpu-v5p-64", config)
    assert report.groups["dp"]["kind"] == "torus" and report.step_time_s > 0
