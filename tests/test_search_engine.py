"""Search agrees with analyze / memory one configuration at a time, and finds good configurations."""

from functools import lru_cache

import numpy as np
import pytest

from distcalc.analyze import analyze
from distcalc.cluster import load_cluster
from distcalc.memory import memory_report
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig, Recompute, Schedule
from distcalc.search import engine, search
from distcalc.search.engine import Job, memory_bytes_batch
from distcalc.search.readable import config_row
from distcalc.search.space import COLUMNS, SpaceChoices, enumerate_space, limits_for_model

HEADROOM = 0.05
CASES = {  # (model, cluster, gpus, global batch, sequence length)
    "gpt3": ("gpt3-175b", "dgx-a100", 64, 64, 2048),
    "mixtral": ("mixtral-8x7b", "dgx-h100", 16, 32, 4096),
    "llama-cp": ("llama3-8b", "dgx-h100", 16, 16, 16384),
    "llama405": ("llama3-405b", "dgx-h100", 16384, 2048, 8192),  # 126 layers: PP16 needs the emb/loss split
}


STRATA = (
    lambda r: r["cp"] > 1, lambda r: r["ep"] > 1, lambda r: r["vpp"] > 1, lambda r: r["zero"] == 3,
    lambda r: r["zero"] == 1 and r["pp"] > 1, lambda r: r["recompute"] == "full",
    lambda r: r["schedule"] == "gpipe", lambda r: r["schedule"] == "zero-bubble",
    lambda r: r["sequence_parallel"] and r["dp"] > 1, lambda r: r["micro_batch"] > 1 and r["tp"] > 1,
)


@lru_cache(maxsize=None)
def _search(case: str, split: bool = True):
    model, cluster, gpus, batch, seq = CASES[case]
    return search(load_model(model), load_cluster(cluster), gpus, global_batch=batch, seq_len=seq, headroom=HEADROOM,
                  choices=SpaceChoices(embedding_loss_split=split))


def _config(row: dict, batch: int, seq: int) -> ParallelConfig:
    return ParallelConfig(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], cp=row["cp"], ep=row["ep"], vpp=row["vpp"],
                          zero=row["zero"], sequence_parallel=row["sequence_parallel"],
                          recompute=Recompute(row["recompute"]), micro_batch=row["micro_batch"],
                          global_batch=batch, seq_len=seq, schedule=Schedule(row["schedule"]),
                          account_for_embedding_and_loss=row["account_for_embedding_and_loss"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_search_equals_analyze_on_random_sample(case):
    model, cluster, _, batch, seq = CASES[case]
    result = _search(case)
    rows = result.rows()
    assert result.feasible == len(rows) > 20
    rng = np.random.default_rng(6)
    sample = [rows[i] for i in rng.choice(len(rows), size=12, replace=False)] + rows[:2]
    for feature in STRATA:  # plus one configuration of every kind the case has
        sample += [r for r in rows if feature(r)][:1]
    if case == "llama-cp":
        assert any(r["cp"] > 1 for r in sample)
    if case == "mixtral":
        assert any(r["ep"] > 1 for r in sample)
    for row in sample:
        report = analyze(model, cluster, _config(row, batch, seq))
        assert row["step_time_s"] == pytest.approx(report.step_time_s, rel=1e-9), row
        assert row["mfu"] == pytest.approx(report.mfu, rel=1e-9), row
        assert row["memory_bytes"] == pytest.approx(report.memory["total_bytes"], rel=1e-9), row
        assert row["memory_bytes"] <= (1 - HEADROOM) * result.gpu_memory_bytes


@pytest.mark.parametrize("case", ["gpt3", "mixtral"])
def test_memory_pruning_equals_memory_report(case):
    """Memory of random valid configurations (kept or pruned) equals distcalc.memory.memory_report."""
    model, cluster_name, gpus, batch, seq = CASES[case]
    spec, cluster = load_model(model), load_cluster(cluster_name)
    space = enumerate_space(limits_for_model(spec, seq_len=seq, global_batch=batch, gpus_per_node=8), gpus)
    memory = memory_bytes_batch(Job(spec, cluster, batch, seq), space.configs)
    rng = np.random.default_rng(1)
    for i in rng.choice(space.size, size=15, replace=False):
        row = {"gpus": gpus, **config_row(space.configs, int(i))}
        expected = memory_report(spec, _config(row, batch, seq), cluster.gpu).total_bytes
        assert memory[i] == pytest.approx(expected, rel=1e-9), row


@pytest.mark.parametrize("case", ["llama405", "mixtral"])
def test_memory_in_blocks_equals_one_call(case, monkeypatch):
    """The memory pass runs in blocks of rows (cache-sized temporaries): every row's memory is the same bits
    as in one call over all rows, block edges anywhere (llama405 mixes rows with and without the
    embedding/loss split inside a block)."""
    model, cluster_name, gpus, batch, seq = CASES[case]
    spec, cluster = load_model(model), load_cluster(cluster_name)
    space = enumerate_space(limits_for_model(spec, seq_len=seq, global_batch=batch, gpus_per_node=8), gpus)
    job = Job(spec, cluster, batch, seq)
    rows = np.random.default_rng(3).choice(space.size, size=min(space.size, 5000), replace=False)
    configs = {k: v[np.sort(rows)] for k, v in space.configs.items()}
    whole = memory_bytes_batch(job, configs)
    monkeypatch.setattr(engine, "MEMORY_BLOCK_ROWS", 777)
    blocks = memory_bytes_batch(job, configs)
    assert np.array_equal(whole.view(np.uint64), blocks.view(np.uint64))



@pytest.mark.parametrize("case", ["llama405", "mixtral", "gpt3"])
def test_step_metrics_without_breakdown_are_the_full_evaluations_bits(case):
    """The search asks evaluate_batch for step time and MFU alone (``breakdown=False``: no breakdown keys,
    no busy-time pass over the executed schedules): the same bits as the full evaluation, on a sample that
    holds executed schedules (ZB-H2, ZB-V, DualPipe(V)) and closed forms."""
    from distcalc.analyze import AnalyzeOptions, evaluate_batch

    model, cluster_name, gpus, batch, seq = CASES[case]
    spec, cluster = load_model(model), load_cluster(cluster_name)
    space = enumerate_space(limits_for_model(spec, seq_len=seq, global_batch=batch, gpus_per_node=8), gpus)
    rows = np.sort(np.random.default_rng(5).choice(space.size, size=min(space.size, 4000), replace=False))
    configs = dict({k: v[rows] for k, v in space.configs.items()}, global_batch=batch, seq_len=seq, flash_attention=1)
    assert len({int(s) for s in configs["schedule"][configs["pp"] > 1]}) >= 4
    full = evaluate_batch(spec, cluster, configs, AnalyzeOptions(), memory=False)
    lean = evaluate_batch(spec, cluster, configs, AnalyzeOptions(), memory=False, breakdown=False)
    assert set(lean) == {"step_time_s", "mfu"}
    for key in lean:
        assert np.array_equal(full[key].view(np.uint64), lean[key].view(np.uint64)), key

def _assert_priced_like_analyze(row: dict, case: str) -> None:
    model, cluster, _, batch, seq = CASES[case]
    report = analyze(model, cluster, _config(row, batch, seq))
    assert row["step_time_s"] == pytest.approx(report.step_time_s, rel=1e-9), row
    assert row["mfu"] == pytest.approx(report.mfu, rel=1e-9), row
    assert row["memory_bytes"] == pytest.approx(report.memory["total_bytes"], rel=1e-9), row


def test_llama3_405b_pp16_with_the_embedding_loss_split():
    """126 layers do not divide by 16, but 126 + 2 slots do (Llama 3 §3.3.2): the search now finds feasible
    PP16 configurations, all with the split on, priced as analyze prices them; without the split none."""
    result = _search("llama405")
    pp16 = [r for r in result.rows() if r["pp"] == 16]
    assert pp16 and all(r["account_for_embedding_and_loss"] for r in pp16)
    for row in [pp16[0], pp16[len(pp16) // 2], pp16[-1]] + [r for r in pp16 if r["vpp"] > 1][:1]:
        _assert_priced_like_analyze(row, "llama405")
    assert not any(r["pp"] == 16 for r in _search("llama405", split=False).rows())
    rejected = result.rejections()
    assert result.universe == result.feasible + rejected.total + rejected.equivalent


def test_even_splits_unchanged_by_the_split_option():
    """GPT-3 175B (96 layers): the configurations whose layers split evenly (flag 0) are exactly those of a
    search without the split, with identical step time, MFU and memory; the split adds only the others
    (pp 2 with vpp 7 or 49, dividing 98)."""
    with_split, without = _search("gpt3"), _search("gpt3", split=False)
    key = ("gpus", *COLUMNS)
    metrics = ("step_time_s", "mfu", "memory_bytes")
    new = {tuple(r[k] for k in key): tuple(r[m] for m in metrics) for r in with_split.rows()}
    old = {tuple(r[k] for k in key): tuple(r[m] for m in metrics) for r in without.rows()}
    assert not any(k[-1] for k in old)
    assert {k: v for k, v in new.items() if not k[-1]} == old
    added = [k for k in new if k[-1]]
    assert added and {(k[2], k[6]) for k in added} <= {(2, 7), (2, 49)}  # (pp, vpp)


def test_rejection_accounting():
    result = _search("gpt3")
    rejected = result.rejections()
    assert result.universe == result.feasible + rejected.total + rejected.equivalent
    assert rejected.by_reason["oom"] == result.evaluated - result.feasible > 0
    assert rejected.by_reason["group_does_not_fit"] > 0 and rejected.by_reason["divisibility"] > 0


def test_gpt3_best_beats_korthikanti():
    """Issue 6: the best configuration for GPT-3 175B on 64 A100-80GB at global batch 64 is at least as fast
    as Korthikanti et al.'s hand-picked TP8 PP8 vpp3 (micro-batch 1, selective recompute + SP) as analyze
    prices it, and fits with the headroom."""
    result = _search("gpt3")
    best = result.top(1)[0]
    korthikanti = ParallelConfig(gpus=64, tp=8, pp=8, vpp=3, micro_batch=1, global_batch=64, seq_len=2048,
                                 recompute=Recompute.SELECTIVE, sequence_parallel=True)
    reference = analyze("gpt3-175b", "dgx-a100", korthikanti)
    assert best["step_time_s"] <= reference.step_time_s
    assert best["memory_bytes"] <= (1 - HEADROOM) * result.gpu_memory_bytes
    # Korthikanti's configuration itself is among the feasible ones, priced identically.
    match = [r for r in result.rows() if (r["tp"], r["pp"], r["vpp"], r["micro_batch"], r["recompute"],
                                          r["sequence_parallel"]) == (8, 8, 3, 1, "selective", True)]
    assert len(match) == 1 and match[0]["step_time_s"] == pytest.approx(reference.step_time_s, rel=1e-9)


def test_top_is_sorted_and_pareto_not_dominated():
    result = _search("mixtral")
    top = result.top(20)
    times = [r["step_time_s"] for r in top]
    assert times == sorted(times) and times[0] == min(r["step_time_s"] for r in result.rows())
    all_t = np.array([r["step_time_s"] for r in result.rows()])
    all_m = np.array([r["memory_bytes"] for r in result.rows()])
    front = result.pareto_memory()
    assert front
    for r in front:
        dominated = (all_t <= r["step_time_s"]) & (all_m <= r["memory_bytes"]) & (
            (all_t < r["step_time_s"]) | (all_m < r["memory_bytes"]))
        assert not dominated.any()
    assert front[-1]["step_time_s"] == min(all_t)  # the fastest is on the front
    assert front[0]["memory_bytes"] == min(all_m)  # and the smallest


def test_gpu_range_and_min_gpus():
    spec, cluster = load_model("llama3-8b"), load_cluster("dgx-h100")
    full = search(spec, cluster, [1, 2, 4, 8, 16], global_batch=32, seq_len=4096)
    best = {c.gpus: (c.metrics["step_time_s"].min() if c.feasible else np.inf) for c in full.counts}
    front = full.pareto_gpus()
    assert [r["gpus"] for r in front] == sorted(r["gpus"] for r in front)
    assert all(a["step_time_s"] > b["step_time_s"] for a, b in zip(front, front[1:]))
    target = float(np.median([t for t in best.values() if np.isfinite(t)]))
    found = search(spec, cluster, [1, 2, 4, 8, 16], global_batch=32, seq_len=4096, min_gpus=True,
                   target_step_time_s=target)
    expected = min(g for g, t in best.items() if t <= target)
    assert found.min_gpus == expected
    assert found.counts[-1].gpus == expected  # stopped there
    nothing = search(spec, cluster, [1, 2], global_batch=32, seq_len=4096, min_gpus=True, target_step_time_s=1e-6)
    assert nothing.min_gpus is None


def test_headroom_prunes_more():
    spec, cluster = load_model("gpt3-175b"), load_cluster("dgx-a100")
    loose = _search("gpt3")
    tight = search(spec, cluster, 64, global_batch=64, seq_len=2048, headroom=0.3)
    assert 0 < tight.feasible < loose.feasible
    assert tight.evaluated == loose.evaluated
    assert max(r["memory_bytes"] for r in tight.top(tight.feasible)) <= 0.7 * tight.gpu_memory_bytes
    assert tight.top(1)[0]["step_time_s"] >= loose.top(1)[0]["step_time_s"]
