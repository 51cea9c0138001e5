"""A newcomer's first runs: one hardware vocabulary, readable help, honest headlines, shared defaults and run
files, presets, human units, distinct search results, one error style (all through the CLI runner)."""

import json
import re

import pytest
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.run_file import DEFAULTS, dump_run_file, load_run_file
from distcalc.units import format_time

runner = CliRunner()


def _run(args, **kwargs):
    return runner.invoke(app, args, **kwargs)


# 1. one hardware vocabulary ---------------------------------------------------------------------------------

def test_gpu_override_names_the_network_that_remains():
    result = _run(["analyze", "--model", "llama3-8b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "8"])
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith("hardware: 8× a100-80gb") and "dgx-a100 (chosen for --gpu a100-80gb)" in first
    assert "nvlink3" in first and "ib-hdr" in first


def test_gpu_the_cluster_cannot_host_is_refused():
    result = _run(["analyze", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpu", "a100-40gb"])
    assert result.exit_code == 2
    assert "cannot host it" in result.output and "nvlink3" in result.output and "dgx-a100" in result.output


def test_same_link_gpu_replaces_and_keeps_the_network():
    result = _run(["memory", "--cluster", "dgx-h100", "--gpu", "h200", "--tp", "8", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["hardware"] == {"cluster": "dgx-h100", "cluster_origin": "preset", "gpu": "h200",
                                "gpu_origin": "--gpu, replacing h100-sxm", "overrides": [],
                                "intra_link": "nvlink4", "inter_link": "ib-ndr"}


def test_cluster_from_a_yaml_file(tmp_path):
    path = tmp_path / "mycluster.yaml"
    path.write_text("gpu: h100-sxm\ngpus_per_node: 4\nintra: nvlink4\ninter: eth-400g\nnics_per_node: 4\n")
    result = _run(["search", "--model", "llama3-8b", "--cluster", str(path), "--gpus", "16", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["hardware"]["cluster_origin"] == "file mycluster.yaml" and data["hardware"]["inter_link"] == "eth-400g"
    bad = tmp_path / "bad.yaml"
    bad.write_text("gpu: h100-sxm\n")
    result = _run(["memory", "--cluster", str(bad)])
    assert result.exit_code == 2 and "needs the keys gpu, gpus_per_node and intra" in result.output


@pytest.mark.parametrize("command", ["collective", "simulate"])
def test_collective_and_simulate_take_the_cluster(command):
    result = _run([command, "allreduce", "--cluster", "dgx-h100", "--gpus", "16", "--size", "16MiB"])
    assert result.exit_code == 0, result.output
    assert "hierarchical 2×8" in result.output
    assert result.stdout.startswith("hardware: 16× h100-sxm")
    clash = _run([command, "allreduce", "--cluster", "dgx-h100", "--bandwidth", "10GB/s"])
    assert clash.exit_code == 2 and "give one" in clash.output


# 2. help that reads at 80 columns ------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["memory", "analyze", "search", "collective", "simulate", "presets"])
def test_help_at_80_columns_keeps_every_option_name_whole(command):
    import typer.main

    result = _run([command, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0
    text = result.stdout
    click_command = typer.main.get_command(app).get_command(None, command)
    names = [opt for param in click_command.params for opt in param.opts + param.secondary_opts
             if opt.startswith("--")]
    assert names
    for name in names:
        assert re.search(rf"(^|[\s/,]){re.escape(name)}($|[\s/,=])", text, re.M), f"{name} cut in {command} --help"
    assert "<bool>" not in text and "╭" not in text
    assert not re.search(r"\d\.\d{7,}", text), "unrounded default"
    assert max(len(line) for line in text.splitlines()) <= 80


def test_numeric_options_state_their_unit():
    text = _run(["memory", "--help"], env={"COLUMNS": "80"}).stdout
    for fragment in ("tokens per sequence", "sequences per micro-batch", "(bytes, e.g. 512MiB)", "(fraction"):
        assert fragment in " ".join(text.split())


# 3. honest headlines ------------------------------------------------------------------------------------------

def test_analyze_that_does_not_fit_says_so_first_and_exits_3():
    result = _run(["analyze", "--model", "llama3-8b", "--gpus", "1"])
    assert result.exit_code == 3
    assert result.stdout.splitlines()[0].startswith("does not fit: the worst pipeline stage needs")
    allowed = _run(["analyze", "--model", "llama3-8b", "--gpus", "1", "--allow-oom", "--json"])
    assert allowed.exit_code == 0
    assert json.loads(allowed.stdout)["fits"] is False


def test_memory_and_search_exit_3_when_nothing_fits():
    result = _run(["memory", "--model", "llama3-70b", "--json"])
    assert result.exit_code == 3 and json.loads(result.stdout)["fits"] is False
    result = _run(["search", "--model", "llama3-405b", "--gpus", "1"])
    assert result.exit_code == 3 and result.stdout.startswith("does not fit: no configuration")
    fits = _run(["memory", "--model", "llama3-8b", "--tp", "8", "--json"])
    assert fits.exit_code == 0 and json.loads(fits.stdout)["fits"] is True


# 4. one set of defaults, printed; run files ----------------------------------------------------------------------

@pytest.mark.parametrize("command", ["memory", "analyze", "search"])
def test_one_set_of_defaults_printed_in_the_header(command):
    args = [command, "--json", "--allow-oom"] + (["--tp", "1"] if command == "analyze" else [])
    data = json.loads(_run(args).stdout)
    settings = data["settings"]
    assert settings["model"] == {"value": DEFAULTS.model, "origin": "default"}
    assert settings["seq_len"] == {"value": DEFAULTS.seq_len, "origin": "default"}
    assert str(settings["gpus"]["value"]) == str(DEFAULTS.gpus)
    assert data["hardware"]["cluster"] == DEFAULTS.cluster and data["hardware"]["cluster_origin"] == "default"
    table = _run([command, "--allow-oom"] + (["--tp", "1"] if command == "analyze" else []))
    assert f"settings: model {DEFAULTS.model} (default)" in table.stdout


def test_run_file_with_command_line_override(tmp_path):
    run = tmp_path / "run.yaml"
    run.write_text(dump_run_file({"model": "llama3-70b", "gpus": 64, "tp": 8, "pp": 4, "seq_len": 8192,
                                  "global_batch": 128, "sequence_parallel": True}, "analyze"))
    result = _run(["analyze", "--config", str(run), "--json", "--pp", "2", "--allow-oom"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["config"]["pp"] == 2 and data["config"]["tp"] == 8 and data["config"]["sequence_parallel"] is True
    assert data["settings"]["seq_len"] == {"value": 8192, "origin": "run file"}
    assert data["settings"]["model"]["origin"] == "run file"


def test_run_file_errors_are_one_line(tmp_path):
    run = tmp_path / "run.yaml"
    run.write_text("seq-lenght: 8192\n")
    result = _run(["memory", "--config", str(run)])
    assert result.exit_code == 2
    assert "unknown key 'seq-lenght' (did you mean 'seq_len'?)" in result.output
    assert result.output.startswith("error:") and len(result.output.strip().splitlines()) == 1


def test_run_file_round_trip(tmp_path):
    from distcalc.parallel import Recompute

    path = tmp_path / "r.yaml"
    path.write_text(dump_run_file({"seq_len": 8192, "recompute": Recompute.FULL, "gpu": None}))
    assert load_run_file(path, ["seq_len", "recompute", "gpu"]) == {"seq_len": 8192, "recompute": "full"}


# 5. presets, did you mean, Hugging Face cache ----------------------------------------------------------------

@pytest.mark.parametrize("kind, name, fragment", [("models", "llama3-70b", "80 layers"),
                                                 ("gpus", "h100-sxm", "989 TFLOP/s"),
                                                 ("clusters", "dgx-h100", "nvlink4"),
                                                 ("links", "ib-ndr", "per direction")])
def test_presets_lists_key_numbers_and_sources(kind, name, fragment):
    data = json.loads(_run(["presets", kind, "--json"]).stdout)
    row = next(r for r in data[kind] if r["name"] == name)
    assert fragment in row["key numbers"] and row["source"]


@pytest.mark.parametrize("args, hint", [
    (["memory", "--model", "llama3-7b"], "did you mean 'llama3-70b'"),
    (["memory", "--gpu", "h100"], "did you mean"),
    (["analyze", "--cluster", "dgx-h10"], "did you mean 'dgx-h100'"),
    (["presets", "modls"], "did you mean 'models'"),
])
def test_did_you_mean(args, hint):
    result = _run(args)
    assert result.exit_code == 2 and hint in result.output


def _hf_cache(root, repo_id, config):
    folder = root / ("models--" + repo_id.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config))


def test_hugging_face_repo_id_from_the_local_cache(tmp_path, monkeypatch):
    config = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
              "max_position_embeddings": 8192}
    _hf_cache(tmp_path, "meta-llama/Meta-Llama-3-8B", config)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    result = _run(["memory", "--model", "meta-llama/Meta-Llama-3-8B", "--tp", "8", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["model"]["name"] == "Meta-Llama-3-8B" and data["model"]["parameters"] == 8_030_261_248
    missing = _run(["memory", "--model", "meta-llama/Llama-2-7b"])
    assert missing.exit_code == 2 and "no config.json for this Hugging Face repo in the local cache" in missing.output


# 7. human units ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, fragment", [
    (["collective", "allreduce", "--bandwidth", "400"], "a bare number would be 400 B/s"),
    (["collective", "allreduce", "--size", "1gib"], "did you mean '1GiB'?"),
    (["collective", "allreduce", "--size", "400"], "a bare number would be 400 bytes"),
    (["memory", "--comm-buffer", "512"], "give the unit"),
    (["analyze", "--model", "llama3-8b", "--inter-bandwidth", "400gbps"], "did you mean '400Gbps'?"),
])
def test_units_refused_with_a_hint(args, fragment):
    result = _run(args)
    assert result.exit_code == 2 and fragment in result.output


def test_durations_in_minutes_hours_days():
    assert format_time(90.0) == "1.5 min"
    assert format_time(2 * 3600.0) == "2 h"
    assert format_time(4.7e6) == "54.4 days"
    assert format_time(59.0) == "59 s"
    result = _run(["collective", "allreduce", "--bandwidth", "1MB/s", "--size", "64GiB"])
    assert result.exit_code == 0, result.output
    assert "best: direct 1.392 days" in result.stdout  # 2 steps of 7/8 · 64 GiB at 1 MB/s = 120,259 s


# 8. search: distinct configurations, useful front, plot ----------------------------------------------------------

def test_search_top_is_distinct_and_front_useful(tmp_path):
    plot = tmp_path / "search.png"
    args = ["search", "--model", "llama3-70b", "--gpus", "256", "--global-batch", "512", "--seq-len", "8192",
            "--top", "5"]
    data = json.loads(_run(args + ["--json", "--plot", str(plot)]).stdout)
    rows = data["results"]
    assert len(rows) == 5 and data["results_equivalent_collapsed"] >= 1
    keys = {(r["step_time_s"], r["memory_bytes"]) for r in rows}
    assert len(keys) == 5  # no two rows are the same result
    assert plot.stat().st_size > 10_000
    table = _run(args).stdout
    assert "distinct configurations" in table and "equivalent ones collapsed" in table
    assert "slower than 2× the fastest left out" in table


# 10. one error style -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, fragment", [
    (["memory", "--tpp", "3"], "no such option: --tpp"),
    (["memory", "--tp", "x"], "'--tp'"),
    (["nonsense"], "no such command 'nonsense'"),
    (["collective", "allreduce", "--size"], "requires an argument"),
    (["memory", "--model", "gpt-5"], "unknown model 'gpt-5'"),
])
def test_every_refusal_is_one_error_line(args, fragment):
    result = _run(args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.output


# 6. uneven pipeline splits ---------------------------------------------------------------------------------------

DSV3_PP16 = ["--model", "deepseek-v3", "--gpus", "2048", "--pp", "16", "--ep", "64", "--first-stage-layers", "4",
             "--last-stage-layers", "1", "--global-batch", "15360", "--seq-len", "4096", "--zero", "1",
             "--recompute", "full"]


def test_deepseek_v3_on_pp16_with_its_real_batch():
    even = DSV3_PP16[:8] + DSV3_PP16[12:]  # without --first/--last-stage-layers
    assert "--first-stage-layers" not in even and "--last-stage-layers" not in even
    refused = _run(["memory", *even])
    assert refused.exit_code == 2 and "uneven ends with --first-stage-layers" in refused.output
    memory = json.loads(_run(["memory", *DSV3_PP16, "--json", "--allow-oom"]).stdout)
    stages = memory["memory"]["stages"]
    assert [s["layers"] for s in stages] == [4] + [4] * 14 + [1]
    assert stages[0]["moe_layers"] == 1 and stages[1]["moe_layers"] == 4  # DeepSeek-V3's first 3 layers are dense
    result = _run(["analyze", *DSV3_PP16, "--json", "--allow-oom"])
    assert result.exit_code in (0, 3), result.output
    data = json.loads(result.stdout)
    assert data["config"]["first_stage_layers"] == 4 and data["config"]["last_stage_layers"] == 1
    assert data["config"]["global_batch"] == 15360 and data["step_time_s"] > 0


def test_uneven_ends_refused_when_they_do_not_split():
    result = _run(["memory", "--model", "llama3-70b", "--gpus", "64", "--tp", "8", "--pp", "4",
                   "--first-stage-layers", "7"])
    assert result.exit_code == 2 and "do not split evenly over the other 3 of pp(4) stages" in result.output
    # interleaved: every chunk of a stage holds its layers / vpp (Megatron-Core), so each count divides by vpp
    result = _run(["analyze", "--model", "llama3-70b", "--gpus", "64", "--tp", "8", "--pp", "4", "--vpp", "3",
                   "--first-stage-layers", "8"])
    assert result.exit_code == 2 and "must each be divisible by vpp(3)" in result.output
    result = _run(["analyze", "--model", "llama3-70b", "--gpus", "64", "--tp", "8", "--pp", "4", "--schedule", "zb-v",
                   "--first-stage-layers", "8"])
    assert result.exit_code == 2 and "executed schedule zb-v prices equal stages" in result.output


def test_uneven_ends_change_the_stage_that_paces_the_step():
    base = ["analyze", "--model", "llama3-70b", "--gpus", "64", "--tp", "8", "--pp", "4", "--global-batch", "64",
            "--json", "--allow-oom"]
    even = json.loads(_run(base).stdout)
    heavy = json.loads(_run(base + ["--first-stage-layers", "17", "--last-stage-layers", "17"]).stdout)
    light = json.loads(_run(base + ["--first-stage-layers", "23", "--last-stage-layers", "23"]).stdout)
    # 17/23/23/17 layers: the middle stages pace; 23/17/17/23: the ends (with embedding and head) pace
    assert heavy["step_time_s"] > even["step_time_s"] and light["step_time_s"] > heavy["step_time_s"]


def test_search_prices_uneven_ends_like_analyze(tmp_path):
    out = tmp_path / "uneven.csv"
    args = ["search", "--model", "deepseek-v3", "--gpus", "256", "--global-batch", "512", "--seq-len", "4096",
            "--first-stage-layers", "4", "--last-stage-layers", "1", "--zero", "1", "--recompute", "full",
            "--schedule", "1f1b", "--output", str(out), "--json", "--allow-oom", "--top", "400"]
    data = json.loads(_run(args).stdout)
    assert data["feasible"] > 0 and (data["first_stage_layers"], data["last_stage_layers"]) == (4, 1)
    assert all((r["first_stage_layers"], r["last_stage_layers"]) == ((4, 1) if r["pp"] > 1 else (0, 0))
               for r in data["results"])
    import csv

    rows = [r for r in csv.DictReader(out.open()) if r["pp"] == "16"]
    assert rows
    row = min(rows, key=lambda r: float(r["step_time_s"]))
    again = json.loads(_run(["analyze", "--model", "deepseek-v3", "--gpus", "256", "--tp", row["tp"], "--pp", "16",
                             "--cp", row["cp"], "--ep", row["ep"], "--micro-batch", row["micro_batch"],
                             "--global-batch", "512", "--seq-len", "4096", "--zero", "1", "--recompute", "full",
                             "--first-stage-layers", "4", "--last-stage-layers", "1", "--json", "--allow-oom"]
                            + (["--sequence-parallel"] if row["sequence_parallel"] == "True" else [])).stdout)
    assert again["step_time_s"] == pytest.approx(float(row["step_time_s"]), rel=1e-9)
    assert again["memory"]["total_bytes"] == pytest.approx(float(row["memory_bytes"]), rel=1e-9)


# 9. plots ------------------------------------------------------------------------------------------------------

@pytest.fixture
def saved_figures(monkeypatch):
    """The matplotlib figures the CLI saves (drawn, then kept for inspection)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figures = []
    original = Figure.savefig

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        figures.append(self)

    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


def _renderer(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the CLI closed the figure: give it a canvas again
    canvas.draw()
    return canvas.get_renderer()


def _inside(fig, artist):
    renderer = _renderer(fig)
    box, frame = artist.get_window_extent(renderer), fig.bbox
    return box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y1 <= frame.y1 + 1


def test_analyze_plot_integer_stages_no_w_legend_titles_inside(tmp_path, saved_figures):
    result = _run(["analyze", "--model", "llama3-8b", "--gpus", "16", "--tp", "2", "--pp", "4", "--global-batch",
                   "64", "--plot", str(tmp_path / "a.png")])
    assert result.exit_code == 0, result.output
    fig = saved_figures[-1]
    timeline = fig.axes[1]
    assert list(timeline.get_yticks()) == [0, 1, 2, 3]
    assert [t.get_text() for t in timeline.get_legend().get_texts()] == ["F", "B"]
    assert "W weight-grad" not in timeline.get_title()
    for axes in fig.axes:
        assert _inside(fig, axes.title)
    zero_bubble = _run(["analyze", "--model", "llama3-8b", "--gpus", "16", "--tp", "2", "--pp", "4", "--global-batch",
                        "64", "--schedule", "zero-bubble", "--plot", str(tmp_path / "z.png")])
    assert zero_bubble.exit_code == 0
    assert [t.get_text() for t in saved_figures[-1].axes[1].get_legend().get_texts()] == ["F", "B", "W"]


def test_byte_axes_read_in_binary_units(tmp_path, saved_figures):
    result = _run(["collective", "allreduce", "--cluster", "dgx-h100", "--gpus", "256", "--size", "1KiB..1GiB",
                   "--plot", str(tmp_path / "c.png")])
    assert result.exit_code == 0, result.output
    fig = saved_figures[-1]
    _renderer(fig)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert "1 GiB" in labels and "4 KiB" in labels and not any("^" in label for label in labels)
    assert _inside(fig, fig.axes[0].title) and "\n" in fig.axes[0].get_title()  # the long title wraps


def test_bench_plot_draws_the_p1_p99_band(tmp_path):
    from matplotlib.collections import PolyCollection

    from distcalc.render.plots.bench import _percentile_band, plot_busbw

    rows = [{"collective": "all-reduce", "tier": "intra", "size_bytes": 2 ** k, "busbw_bytes_per_s": 1e9 * k,
             "time_s": 1e-3, "p1_time_s": 0.8e-3, "p99_time_s": 1.5e-3} for k in range(10, 14)]
    low, high = _percentile_band(rows)
    assert all(lo < r["busbw_bytes_per_s"] / 1e9 < hi for lo, hi, r in zip(low, high, rows))
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    seen = []
    original = Figure.savefig
    try:
        Figure.savefig = lambda self, *a, **k: (seen.append(self), original(self, *a, **k))[1]
        plot_busbw(rows, tmp_path / "b.png")
    finally:
        Figure.savefig = original
        plt.close("all")
    assert any(isinstance(c, PolyCollection) for c in seen[0].axes[0].collections)
    assert _percentile_band([{k: v for k, v in rows[0].items() if k != "p1_time_s"}]) is None


def test_search_plot_colours_by_layout(tmp_path, saved_figures):
    result = _run(["search", "--model", "llama3-8b", "--gpus", "16", "--plot", str(tmp_path / "s.png")])
    assert result.exit_code == 0, result.output
    legend = [t.get_text() for t in saved_figures[-1].axes[0].get_legend().get_texts()]
    assert any(t.startswith("TP") for t in legend) and "Pareto front" in legend


def test_uneven_ends_are_refused_on_executed_schedules():
    """The executed schedules (zb-h1, zb-h2, zb-v, dualpipe, dualpipev) price equal stages: uneven ends are
    refused there (exit 2) and not searched, while 1f1b keeps them."""
    args = ["--model", "deepseek-v3", "--gpus", "2048", "--pp", "16", "--ep", "64", "--first-stage-layers", "4",
            "--last-stage-layers", "1", "--global-batch", "15360", "--zero", "1", "--recompute", "full"]
    refused = _run(["memory", *args, "--schedule", "zb-h2"])
    assert refused.exit_code == 2 and "executed schedule zb-h2" in refused.output
    result = _run(["search", "--model", "deepseek-v3", "--gpus", "2048", "--first-stage-layers", "4",
                   "--last-stage-layers", "1", "--global-batch", "15360", "--schedule", "1f1b,zb-h2", "--zero", "1",
                   "--recompute", "full", "--top", "20", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"]
    assert rows and all(r["schedule"] == "1f1b" for r in rows if r["pp"] > 1)
    assert any(r["pp"] > 1 and r["first_stage_layers"] == 4 for r in rows)
