"""The executed schedules inside analyze, memory, search and the CLI."""

import numpy as np
import pytest
from typer.testing import CliRunner

from distcalc.analyze import analyze
from distcalc.cli import app
from distcalc.cluster import load_cluster
from distcalc.errors import ConfigError
from distcalc.memory import memory_report
from distcalc.model import ModelSpec, load_model
from distcalc.parallel import ParallelConfig
from distcalc.schedules import get_schedule, peak_in_flight
from distcalc.search.engine import search
from distcalc.search.space import CLOSED_FORM_SCHEDULES, DEFAULT_SCHEDULES, SpaceChoices

NEW = ["zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev"]
#: The Zero Bubble paper's 6.2B GPT-like model (Qi et al. 2024 Table 3; vocabulary 32000 as in validation).
GPT_6B = ModelSpec(name="gpt-6.2b", model_type="gpt", hidden_size=4096, num_hidden_layers=30, num_attention_heads=32,
                   intermediate_size=16384, vocab_size=32000, max_position_embeddings=1024, tie_word_embeddings=True,
                   hidden_act="gelu", gated_mlp=False, norm_type="layernorm", position_embedding="learned")


def _config(schedule, **extra):
    return ParallelConfig(**{**dict(gpus=64, tp=2, pp=4, global_batch=256, schedule=schedule), **extra})


@pytest.mark.parametrize("schedule", NEW)
def test_breakdown_adds_up_and_is_finite(schedule):
    report = analyze("llama3-8b", "dgx-h100", _config(schedule))
    parts = report.time_breakdown
    total = sum(v for k, v in parts.items() if k not in ("total_s", "tp_on_link_s", "dp_on_link_s"))
    assert total == pytest.approx(report.step_time_s, rel=1e-12)
    assert all(np.isfinite(v) and v >= 0 for v in parts.values())


def test_zero_bubble_schedules_beat_1f1b_on_the_same_job():
    times = {s: analyze("llama3-8b", "dgx-h100", _config(s)).step_time_s for s in ["1f1b"] + NEW}
    assert times["zb-h1"] < times["1f1b"]
    assert times["zb-h2"] < times["zb-h1"]


def test_memory_uses_the_executed_in_flight_counts_and_dualpipe_parameter_copies():
    reports = {s: memory_report("llama3-8b", _config(s), "h100-sxm") for s in ("1f1b", "zb-h2", "dualpipe", "dualpipev")}
    m = _config("1f1b").num_micro_batches
    for s in ("zb-h2", "dualpipe", "dualpipev"):
        executed = peak_in_flight(get_schedule(s).plan(4, m))
        assert [st.in_flight_micro_batches for st in reports[s].stages] == pytest.approx(executed)
    one, dual = reports["1f1b"].stages[1], reports["dualpipe"].stages[1]  # a middle stage: layers only
    assert dual.weights_bytes == pytest.approx(2 * one.weights_bytes)


def test_search_picks_zb_v_where_the_zero_bubble_authors_show_it_winning():
    """At 1F1B's activation memory ZB-V has the smallest bubble (ZB authors' table: 1F1B (p−1)/m, ZB-1p
    (p−1)/3m, ZB-V 0): searching those three on the paper's 6.2B model on 8 A100s picks ZB-V."""
    result = search(GPT_6B, load_cluster("dgx-a100"), 8, global_batch=96, seq_len=1024,
                    choices=SpaceChoices(schedule=("1f1b", "zb-h1", "zb-v"), zero=(0,), recompute=("none",)))
    best = result.top(1)[0]
    assert best["schedule"] == "zb-v" and best["pp"] > 1


#: The Zero Bubble paper's 28.3B GPT-like model (Qi et al. 2024 Table 3), its largest, trained on 32 A100s.
GPT_28B = ModelSpec(name="gpt-28.3b", model_type="gpt", hidden_size=6144, num_hidden_layers=62, num_attention_heads=48,
                    intermediate_size=24576, vocab_size=32000, max_position_embeddings=1024, tie_word_embeddings=True,
                    hidden_act="gelu", gated_mlp=False, norm_type="layernorm", position_embedding="learned")


def test_default_search_picks_zb_v_on_the_zero_bubble_papers_largest_setup():
    """With no --schedule the search weighs every schedule: on the paper's 28.3B model, 32 A100s and a global
    batch of 96 (Table 4's m = 96 setup) it picks ZB-V (the paper's §6: ZB-V fastest at 1F1B's memory), and
    the closed-form schedules alone are slower."""
    cluster = load_cluster("dgx-a100")
    result = search(GPT_28B, cluster, 32, global_batch=96, seq_len=1024, choices=SpaceChoices(zero=(0, 1)))
    best = result.top(1)[0]
    assert best["schedule"] == "zb-v" and best["pp"] > 1
    closed = search(GPT_28B, cluster, 32, global_batch=96, seq_len=1024,
                    choices=SpaceChoices(zero=(0, 1), schedule=CLOSED_FORM_SCHEDULES)).top(1)[0]
    assert closed["step_time_s"] > best["step_time_s"]


def test_search_picks_dualpipe_for_a_moe_with_sequence_parallel_tp_and_cross_node_ep():
    """DualPipe's setting in the DeepSeek-V3 report (§3.2.1): a MoE whose expert-parallel all-to-all crosses
    nodes, hidden by the overlapped F&B pairs. Mixtral 8x7B on 64 H100s with sequence parallelism (so TP ≥ 2):
    the search over the default schedules picks DualPipe with EP > 1, ahead of every other schedule's best
    (ZB-V). (With TP 1 allowed, ZB-V at TP1 PP2 EP8 is faster, 2.465 s against DualPipe's best 2.524 s.)"""
    spec, cluster = load_model("mixtral-8x7b"), load_cluster("dgx-h100")
    narrow = dict(zero=(1,), recompute=("none",), sequence_parallel=(True,))
    best = search(spec, cluster, 64, global_batch=256, seq_len=4096, choices=SpaceChoices(**narrow)).top(1)[0]
    assert best["schedule"] == "dualpipe" and best["ep"] > 1 and best["tp"] * best["ep"] > 8  # EP across nodes
    others = tuple(s for s in DEFAULT_SCHEDULES if s != "dualpipe")
    other = search(spec, cluster, 64, global_batch=256, seq_len=4096,
                   choices=SpaceChoices(schedule=others, **narrow)).top(1)[0]
    assert other["step_time_s"] > best["step_time_s"]


def test_search_rejects_plans_above_the_execution_budget_by_name():
    result = search(GPT_6B, load_cluster("dgx-a100"), 8, global_batch=4096, seq_len=1024,
                    choices=SpaceChoices(schedule=("1f1b", "zb-v"), zero=(0,), recompute=("none",)))
    rule = next(r for r in result.counts[0].rejections.rules if r.startswith("executed schedule"))
    assert result.counts[0].rejections.rules[rule] > 0
    assert any(row["schedule"] == "zb-v" for row in result.rows())  # smaller plans (more DP) still searched


def test_invalid_schedule_shapes_are_config_errors():
    with pytest.raises(ConfigError, match="even"):
        _config("dualpipe", pp=2, tp=4, global_batch=40)  # 5 micro-batches per replica
    with pytest.raises(ConfigError, match="2 \\* pp"):
        _config("dualpipev", global_batch=32)
    analyze("llama3-8b", "dgx-h100", _config("zb-v", pp=16, tp=1))  # 32 layers into 32 chunks: fine
    with pytest.raises(ConfigError, match="V-shaped"):
        analyze("llama3-8b", "dgx-h100", _config("zb-v", pp=32, tp=1, global_batch=128))  # 64 chunks


def test_cli_rejects_a_bad_shape_with_exit_2():
    result = CliRunner().invoke(app, ["analyze", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "64",
                                      "--tp", "2", "--pp", "4", "--global-batch", "40", "--schedule", "dualpipe"])
    assert result.exit_code == 2
    assert "error: schedule dualpipe" in result.output


@pytest.mark.parametrize("schedule", NEW)
def test_cli_plot_draws_every_schedule(tmp_path, schedule):
    pytest.importorskip("matplotlib")
    path = tmp_path / "plot.png"
    result = CliRunner().invoke(app, ["analyze", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "64",
                                      "--tp", "2", "--pp", "4", "--global-batch", "128", "--schedule", schedule,
                                      "--plot", str(path)])
    assert result.exit_code == 0, result.output
    assert path.stat().st_size > 10_000


@pytest.mark.parametrize("schedule, vpp, extra", [("gpipe", 1, {}), ("1f1b", 1, {}), ("interleaved", 2, {}),
                                                  ("zero-bubble", 1, {}), ("zb-h1", 1, {}), ("zb-h2", 1, {}),
                                                  ("zb-v", 1, {}), ("dualpipe", 1, {}), ("dualpipev", 1, {}),
                                                  ("interleaved", 2, {"first_stage_layers": 6, "last_stage_layers": 6})])
def test_timeline_draws_every_schedule_with_its_passes_and_chunks(schedule, vpp, extra):
    """analyze's timeline: every schedule's plan executed with the report's F, B and W; F, B and W apart where
    the schedule splits the backward, F&B pairs for DualPipe, two chunks on interleaved and V-shaped
    schedules, one row per device (integer stages 0 … pp − 1); uneven ends draw shorter passes."""
    from distcalc.analyze.timeline import timeline_for

    report = analyze("llama3-8b", "dgx-h100", _config(schedule, vpp=vpp, **extra))
    timeline, shown = timeline_for(report)
    kinds = {e.kind for e in timeline.events}
    split = get_schedule(schedule).split_backward
    assert ("W" in kinds) == split and "F" in kinds and "B" in kinds
    assert ("F&B" in kinds) == schedule.startswith("dualpipe")
    assert {e.chunk for e in timeline.events} == ({0, 1} if vpp > 1 or schedule in ("zb-v", "dualpipe", "dualpipev")
                                                  else {0})
    assert {e.stage for e in timeline.events} == set(range(4))
    assert all(isinstance(e.stage, int) and e.end_s > e.start_s for e in timeline.events)
    if split:  # W is the report's own weight-gradient share of a stage's backward
        w = next(e for e in timeline.events if e.kind == "W" and e.stage == 1)
        chunk = 0.5 if get_schedule(schedule).v_shape else 1.0
        assert w.end_s - w.start_s == pytest.approx(report.pipeline["stage_weight_s"] * chunk)
    if extra:
        f_end = next(e for e in timeline.events if e.kind == "F" and e.stage == 0)
        f_mid = next(e for e in timeline.events if e.kind == "F" and e.stage == 1)
        assert (f_end.end_s - f_end.start_s) / (f_mid.end_s - f_mid.start_s) == pytest.approx(6 / 10)
