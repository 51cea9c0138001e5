"""Interleaved 1F1B with uneven first/last stages (Megatron-Core --decoder-first/last-pipeline-num-layers with
virtual pipelining): executed on the schedule simulator with each chunk's own layers."""

import numpy as np
import pytest

from distcalc.analyze import analyze
from distcalc.errors import ConfigError
from distcalc.memory import memory_report
from distcalc.parallel import ParallelConfig
from distcalc.schedules import PassTimes, execute, get_schedule
from distcalc.search.engine import search
from distcalc.cluster import load_cluster
from distcalc.model import load_model
from distcalc.search.space import SpaceChoices


def _config(**extra):
    return ParallelConfig(**{**dict(gpus=64, tp=2, pp=4, vpp=2, global_batch=256, schedule="interleaved"), **extra})


def test_uneven_ends_equal_to_the_even_split_match_the_closed_form():
    """first = last = L/pp is the even split: the executed plan agrees with Megatron's closed form (which
    prices the slowest stage in steady state and the mean in the fill) to 0.2 %."""
    even = analyze("llama3-8b", "dgx-h100", _config())
    same = analyze("llama3-8b", "dgx-h100", _config(first_stage_layers=8, last_stage_layers=8))
    assert same.step_time_s == pytest.approx(even.step_time_s, rel=2e-3)


def test_lighter_ends_shift_the_work_and_the_bubble_follows_the_chunks():
    """6 + 10 + 10 + 6 layers in chunks of 3 and 5: the middle stages pace the step; the bubble is the
    executed idle time of the busiest device, not the closed form's."""
    light = analyze("llama3-8b", "dgx-h100", _config(first_stage_layers=6, last_stage_layers=6))
    heavy = analyze("llama3-8b", "dgx-h100", _config(first_stage_layers=4, last_stage_layers=4))
    for report in (light, heavy):
        parts = report.time_breakdown
        total = sum(v for k, v in parts.items() if k not in ("total_s", "tp_on_link_s", "dp_on_link_s"))
        assert total == pytest.approx(report.step_time_s, rel=1e-12)
        assert all(np.isfinite(v) and v >= 0 for v in parts.values())
    # moving layers from the ends to the middle stages slows the step (the middle stages are the busiest)
    assert heavy.step_time_s > light.step_time_s


def test_executed_interleaved_with_unequal_chunks_is_its_plan_run():
    """The plan with per-chunk times: a middle device's chunks twice as long as the ends' make the busiest
    device the middle one, and the makespan at least its busy time plus the ends' fill."""
    plan = get_schedule("interleaved").plan(4, 8, 2)
    device = np.array([plan.device_of(0, j) for j in range(plan.virtual_stages)])
    size = np.where((device == 0) | (device == 3), 1.0, 2.0)
    run = execute(plan, PassTimes(size, size, size))
    busy = run.busy_s[:, 0]
    assert busy.tolist() == pytest.approx([8 * 2 * 3.0, 8 * 2 * 6.0, 8 * 2 * 6.0, 8 * 2 * 3.0])
    assert run.makespan_s[0] > busy.max()


def test_vpp_must_divide_every_stage():
    with pytest.raises(ConfigError, match="divisible by vpp"):
        analyze("llama3-8b", "dgx-h100", _config(first_stage_layers=5, last_stage_layers=5))  # 5 layers, 2 chunks
    with pytest.raises(ConfigError, match="zb-v prices equal stages"):
        ParallelConfig(gpus=64, tp=2, pp=4, global_batch=256, schedule="zb-v", first_stage_layers=6)


def test_memory_uses_each_stage_layers_and_interleaved_in_flight():
    report = memory_report("llama3-8b", _config(first_stage_layers=6, last_stage_layers=6), "h100-sxm")
    first, middle = report.stages[0], report.stages[1]
    assert first.layers == 6 and middle.layers == 10
    # Megatron warm-up: stage s holds 2(p − s − 1) + (v − 1)p + 1 chunk micro-batches, chunks of layers / v
    assert first.in_flight_micro_batches == pytest.approx(2 * 3 + 4 + 1)
    assert middle.in_flight_micro_batches == pytest.approx(2 * 2 + 4 + 1)


def test_search_with_uneven_ends_prices_interleaved_rows_like_analyze():
    spec = load_model("llama3-8b")
    result = search(spec, load_cluster("dgx-h100"), 64, global_batch=256, seq_len=4096,
                    choices=SpaceChoices(first_stage_layers=6, last_stage_layers=6, schedule=("1f1b", "interleaved"),
                                         zero=(1,), recompute=("none",), sequence_parallel=(True,)))
    rows = [r for r in result.rows() if r["schedule"] == "interleaved"]
    assert rows
    row = rows[0]
    config = ParallelConfig(gpus=64, tp=row["tp"], pp=row["pp"], vpp=row["vpp"], cp=row["cp"], zero=row["zero"],
                            sequence_parallel=row["sequence_parallel"], micro_batch=row["micro_batch"],
                            global_batch=256, schedule="interleaved", first_stage_layers=6, last_stage_layers=6)
    assert row["step_time_s"] == pytest.approx(analyze(spec, "dgx-h100", config).step_time_s, rel=1e-9)
