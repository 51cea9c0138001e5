"""Bad input never crashes, hangs or lies (issue 19): every example of the issue, through the CLI.

Each case asserts exit code 2 and exactly one ``error: ...`` line naming the bad value (or, where the input
was valid, a correct answer), no traceback, and that nothing was written where it should not be.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_fuzz import calibration_text
from distcalc.calibration import load_calibration
from distcalc.cli import app
from distcalc.errors import ConfigError
from distcalc.model import load_model

runner = CliRunner()
HF = Path(__file__).parent / "fixtures" / "hf"


def refused(args: list[str], *needles: str, budget_s: float = 30.0) -> str:
    """Run the CLI; assert exit 2, one ``error:`` line holding every needle, within ``budget_s``."""
    start = time.monotonic()
    result = runner.invoke(app, [str(a) for a in args])
    elapsed = time.monotonic() - start
    text = result.output
    assert result.exit_code == 2, (result.exit_code, text, result.exception)
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), text
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert elapsed < budget_s, elapsed
    return lines[0]


def calibration_file(tmp_path: Path, edit=None, name: str = "cal.json") -> Path:
    """A real calibration (:func:`cli_fuzz.calibration_text`: fitted to an exact synthetic gloo sweep),
    optionally edited as data (``edit`` changes it in place) or as text (``edit`` returns the new text)."""
    data = json.loads(calibration_text())
    path = tmp_path / name
    edited = edit(data) if edit is not None else None
    path.write_text(edited if isinstance(edited, str) else json.dumps(data))
    return path


# ------------------------------------------------------------------------------------------- output paths
@pytest.mark.parametrize("args, needle", [
    (["collective", "all-reduce", "--plot", "x.xyz"], "'.xyz'"),
    (["collective", "scatter", "--plot", "x.jpgz"], "'.jpgz'"),
    (["analyze", "--plot", "x.xyz"], "'.xyz'"),
    (["memory", "--plot", "x.xyz"], "'.xyz'"),
    (["simulate", "all-reduce", "--plot", "x.jpgz"], "'.jpgz'"),
])
def test_plot_with_an_unknown_extension_lists_the_valid_ones(args, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    refused(args, needle, ".png, .pdf, .svg")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["collective", "all-reduce"], ["memory"], ["analyze"],
                                     ["simulate", "all-reduce", "--gpus", "4"]])
def test_plot_into_a_missing_folder(command, tmp_path):
    target = tmp_path / "missing" / "x.png"
    refused(command + ["--plot", target], "does not exist", "missing")
    assert not target.parent.exists()


def test_plot_without_suffix_gets_none_appended(tmp_path, monkeypatch):
    """``--plot /dev/full`` wrote ``/dev/full.png``: a path without a suffix is refused, never extended."""
    monkeypatch.chdir(tmp_path)
    refused(["collective", "all-reduce", "--plot", "/dev/full"], "'/dev/full'", "no suffix")
    refused(["collective", "all-reduce", "--plot", "figure"], "'figure'", "no suffix")
    assert not Path("/dev/full.png").exists() and list(tmp_path.iterdir()) == []


def test_search_output_into_a_missing_folder(tmp_path):
    refused(["search", "--model", "llama3-8b", "--gpus", "8", "--output", tmp_path / "missing" / "x.csv"],
            "does not exist")
    refused(["search", "--model", "llama3-8b", "--gpus", "8", "--output", tmp_path / "x.txt"], "'.txt'", ".csv")


def test_valid_plot_is_written_exactly_where_named(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "fig.svg"
    result = runner.invoke(app, ["collective", "all-reduce", "--size", "1KiB..4KiB", "--plot", str(target), "--json"])
    assert result.exit_code == 0, result.output
    assert target.is_file() and json.loads(result.stdout)["plot"] == str(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.svg"]


# ------------------------------------------------------------------------------------------- model files
def test_hf_config_with_a_string_width_is_refused_not_inflated(tmp_path):
    """``"n_embd": "768"`` made GPT-2 a 14-quadrillion-parameter model (``4 * "768"``)."""
    config = json.loads((HF / "gpt2.json").read_text())
    config["n_embd"] = "768"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    refused(["memory", "--model", path, "--seq-len", "1024"], "n_embd", "'768'", "integer")
    with pytest.raises(ConfigError, match="n_embd must be an integer"):
        load_model(path)


@pytest.mark.parametrize("family, field, value, needle", [
    ("gpt2.json", "n_head", 0, "n_head must be in 1..16,384, got 0"),
    ("meta-llama-3-8b.json", "num_attention_heads", 0, "num_attention_heads must be in"),
    ("meta-llama-3-8b.json", "num_key_value_heads", 0, "num_key_value_heads must be in"),
    ("meta-llama-3-8b.json", "hidden_size", [4096], "hidden_size must be an integer, got list"),
    ("meta-llama-3-8b.json", "hidden_size", 4096.0, "hidden_size must be an integer, got float"),
    ("meta-llama-3-8b.json", "num_hidden_layers", True, "num_hidden_layers must be an integer, got bool"),
    ("meta-llama-3-8b.json", "vocab_size", 10**30, "vocab_size must be in"),
    ("meta-llama-3-8b.json", "tie_word_embeddings", "false", "tie_word_embeddings must be true or false"),
    ("gpt2.json", "attn_pdrop", "0.1", "attn_pdrop must be a number"),
    ("mixtral-8x7b-v0.1.json", "num_local_experts", -1, "num_local_experts must be in 0..16,384"),
    ("meta-llama-3-8b.json", "hidden_act", 3, "hidden_act must be text"),
])
def test_hf_config_fields_of_the_wrong_type_or_zero(tmp_path, family, field, value, needle):
    config = json.loads((HF / family).read_text())
    config[field] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    refused(["memory", "--model", path], needle, str(path))


def test_valid_hf_config_still_loads():
    assert load_model(HF / "gpt2.json").parameters == 124_439_808


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_deeply_nested_model_file(tmp_path, suffix):
    path = tmp_path / f"deep{suffix}"
    path.write_text("[" * 100_000 + "]" * 100_000)
    refused(["memory", "--model", path], "nested deeper than 32 levels")


def test_yaml_alias_bomb_is_refused_at_once(tmp_path):
    """A 384-byte alias bomb ran for minutes at 1-2 GB and the message embedded the expanded input."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{','.join(['*' + previous] * 9)}]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size < 400
    message = refused(["memory", "--model", path], "aliases", "not accepted", budget_s=5.0)
    assert "lol" not in message and len(message) < 300


@pytest.mark.parametrize("content, needle", [
    (b"\xff\xfe\x00binary\x80", "not UTF-8 text"),
    (b"hidden_size: .nan\n", "hidden_size is nan"),
    (b"- just\n- a list\n", "does not hold a mapping"),
    (b"{unclosed: [1, 2\n", "not valid YAML"),
])
def test_broken_model_files(tmp_path, content, needle):
    path = tmp_path / "model.yaml"
    path.write_bytes(content)
    refused(["memory", "--model", path], needle)


def test_oversized_model_file(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * (1 << 20) + "\n")
    refused(["memory", "--model", path], "the limit is 1,048,576 bytes")


def test_long_text_in_a_model_file_is_quoted_short(tmp_path):
    path = tmp_path / "model.yaml"
    path.write_text(f"name: {'x' * 5000}\nhidden_size: 64\n")
    message = refused(["memory", "--model", path], "field name must be at most 500 characters")
    assert len(message) < 400
    path.write_text("hidden_size: 64\nnum_hidden_layers: 2\nnum_attention_heads: 4\nintermediate_size: 256\n"
                    f"vocab_size: 100\nbogus_field: {'y' * 5000}\n")
    message = refused(["memory", "--model", path], "bogus_field", "Extra inputs are not permitted")
    assert len(message) < 400


def test_unknown_model_name_is_quoted_short():
    message = refused(["memory", "--model", "m" * 5000], "unknown model")
    assert len(message) < 600


# ------------------------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("edit, needle", [
    (lambda d: d["fits"][0].update(bandwidth_bytes_per_s=-5e9), "fits[0].bandwidth_bytes_per_s must be > 0"),
    (lambda d: d["fits"][0]["segments"][0].update(bandwidth_bytes_per_s=-5e9),
     "fits[0].segments[0].bandwidth_bytes_per_s must be > 0"),
    (lambda d: d["fits"][1]["segments"][0].update(latency_s=-1e-6), "fits[1].segments[0].latency_s must be >= 0"),
    (lambda d: d["fits"][0]["segments"][0].update(latency_s="5us"), "latency_s must be a number"),
    (lambda d: d["fits"][0].update(segments=[]), "segments must be a non-empty list"),
    (lambda d: d["fits"][0].update(tier="rack"), "tier must be one of intra, inter"),
    (lambda d: d["fits"][0].update(group_size=0), "group_size must be in"),
    (lambda d: json.dumps(d).replace(str(d["fits"][0]["latency_s"]), "NaN", 1), "NaN is not a finite number"),
    (lambda d: json.dumps(d).replace(str(d["fits"][0]["latency_s"]), "Infinity", 1), "Infinity is not a finite"),
])
def test_bad_calibration_values_are_refused_everywhere(tmp_path, edit, needle):
    """A negative bandwidth made ``search`` rank a −298 s step first and ``collective`` report −6.4 s."""
    path = calibration_file(tmp_path, edit)
    with pytest.raises(ConfigError):
        load_calibration(path)
    for command in (["collective", "all-reduce", "--gpus", "4"], ["analyze", "--model", "llama3-8b", "--gpus", "8"],
                    ["search", "--model", "llama3-8b", "--gpus", "8"]):
        refused(command + ["--calibration", path], needle, "cal.json")


def test_binary_calibration_file(tmp_path):
    path = tmp_path / "cal.json"
    path.write_bytes(b"\xff\xfe\x00\x01binary\x80\x81")
    refused(["collective", "all-reduce", "--calibration", path], "not UTF-8 text", "0xff")


def test_valid_calibration_gives_positive_times(tmp_path):
    path = calibration_file(tmp_path)
    result = runner.invoke(app, ["collective", "all-reduce", "--gpus", "4", "--calibration", str(path), "--json"])
    assert result.exit_code == 0, result.output
    times = [r["time_s"] for r in json.loads(result.stdout)["results"]]
    assert times and all(math.isfinite(t) and t > 0 for t in times)


# ------------------------------------------------------------------------------------------- numeric options
@pytest.mark.parametrize("args, needles", [
    (["collective", "all-reduce", "--gpus", str(10**12)], ("--gpus 1000000000000", "1..1,048,576")),
    (["topologies", "--gpus", str(10**12)], ("--gpus 1000000000000",)),
    (["simulate", "all-reduce", "--gpus", str(10**12)], ("--gpus 1000000000000", "1..8,192")),
    (["memory", "--tp", str(10**12)], ("--tp 1000000000000",)),
    (["analyze", "--tokens", "-1"], ("--tokens -1", "(0, 1e+18]")),
    (["analyze", "--tokens", "nan"], ("--tokens nan",)),
    (["analyze", "--tp-overlap", "2"], ("--tp-overlap 2",)),
    (["collective", "send-recv", "--src", "1", "--dst", "1"], ("--src 1 --dst 1", "different ranks")),
    (["collective", "send-recv", "--dst", "8"], ("--dst 8", "0..7")),
    (["collective", "all-reduce", "--topology", "tree", "--oversubscription", "nan"], ("--oversubscription nan",)),
    (["simulate", "all-reduce", "--seed", "-1"], ("--seed -1",)),
    (["simulate", "all-reduce", "--gpus", "4096", "--elements", str(10**8)], ("--elements 100000000",)),
    (["search", "--gpus", "1,2,3," + ",".join(str(n) for n in range(4, 400)), "--model", "llama3-8b"],
     ("at most 256 are searched",)),
    (["collective", "all-reduce", "--gpus", "abc"], ("--gpus", "'abc'")),
    (["memory", "--allocator-reserve", "1.5"], ("--allocator-reserve 1.5",)),
])
def test_numeric_options_are_range_checked_up_front(args, needles):
    refused(args, *needles, budget_s=10.0)


@pytest.mark.parametrize("args, needle", [
    (["simulate", "all-reduce", "--gpus", "4096"], "transfers"),
    (["simulate", "all-gather", "--gpus", "2048", "--elements", "4096"], "executed buffers"),
])
def test_simulations_that_cannot_fit_are_refused_before_allocating(args, needle):
    refused(args, needle, "budget", budget_s=60.0)


def test_send_recv_between_two_ranks_is_answered():
    result = runner.invoke(app, ["collective", "send-recv", "--src", "0", "--dst", "3", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)["results"][0]
    assert record["time_s"] > 0 and record["algbw_bytes_per_s"] > 0


# ------------------------------------------------------------------------------------------- bench
@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_bench_timeout_must_be_positive_and_finite(value):
    refused(["bench", "collectives", "--nproc", "2", "--timeout", value], f"--timeout {value}", "(0, 86400]",
            budget_s=10.0)


def test_bench_output_checked_before_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "existing.json").mkdir()
    refused(["bench", "collectives", "--nproc", "2", "--output", "existing.json"], "is a folder", budget_s=10.0)
    refused(["bench", "collectives", "--nproc", "2", "--output", "existing"], "no suffix", budget_s=10.0)
    refused(["bench", "collectives", "--nproc", "2", "--output", "/nonexistent/x.json"], "does not exist",
            budget_s=10.0)
    assert not Path("/nonexistent").exists()
    refused(["bench", "gemm", "--output", "sub/x.json"], "does not exist", budget_s=10.0)
    assert not (tmp_path / "sub").exists()


@pytest.mark.parametrize("args, needle", [
    (["bench", "gemm", "--tokens", "1048576", "--hidden", "65536"], "largest GEMM operands"),
    (["bench", "collectives", "--sizes", "1KiB..1TiB"], "--sizes '1KiB..1TiB' needs about 3072.0 GiB"),
    (["bench", "training", "--mode", "dp", "--hidden", "65536", "--layers", "1024"], "weights, gradients"),
])
def test_bench_runs_that_cannot_fit_in_host_memory_are_refused(args, needle):
    pytest.importorskip("torch")
    refused(args, needle, "more than half of this machine's memory", budget_s=20.0)


def test_bench_gemm_device_is_checked():
    refused(["bench", "gemm", "--device", "tpu"], "--device 'tpu'", "cpu, cuda or cuda:N", budget_s=10.0)


def test_calibrate_checks_its_output_first(tmp_path):
    refused(["calibrate", tmp_path / "results.json", "--output", tmp_path / "missing" / "c.json"], "does not exist")


def test_bench_result_rows_are_validated(tmp_path):
    row = {"collective": "all-reduce", "tier": "intra", "group_size": 2, "size_bytes": 1024, "time_s": -1.0,
           "p99_time_s": 1e-5, "trials": 5, "algbw_bytes_per_s": 1e8, "busbw_bytes_per_s": 1e8}
    envelope = {"schema": "distcalc.bench/1", "theme": "collectives", "created": "x", "hardware": {},
                "versions": {}, "backend": "gloo", "world_size": 2, "config": {}, "results": [row]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(envelope))
    refused(["calibrate", path, "--output", tmp_path / "c.json"], "results[0].time_s")
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("command", ["memory", "analyze"])
def test_a_zero_or_negative_degree_without_gpus_is_refused_by_name(command):
    # found by benchmarks/fuzz_cli.py (seed 20261125): the default GPU count divided by tp·pp·cp = 0
    refused([command, "--model", "llama2-7b", "--pp", "0", "--cp", "-2"], "pp(0) must be >= 1")
