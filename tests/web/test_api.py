"""The JSON API equals the CLI's ``--json`` for the same input, answers 422 with the CLI's message, caps
its work, and binds to loopback unless asked."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from distcalc.cli import app

from .cli_json import cli, runner
from .conftest import start_server, wait_until_up

pytestmark = pytest.mark.xdist_group("web")


def post(url: str, path: str, body: object) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


CASES = [
    ("analyze", {}),  # the built-in example
    ("analyze", {"model": "llama3-8b", "cluster": "dgx-a100", "gpus": 16, "tp": 2, "pp": 2, "recompute": "selective",
                 "sequence_parallel": True, "global_batch": 32, "seq_len": 4096}),
    ("analyze", {"model": "mixtral-8x7b", "cluster": "dgx-h100", "gpus": 32, "tp": 2, "ep": 8, "dtype": "fp8",
                 "inter_bandwidth": "200Gbps", "tokens": 1e12}),
    ("memory", {}),
    ("memory", {"model": "llama3-70b", "gpu": "h100-sxm", "gpus": 64, "tp": 8, "pp": 4, "vpp": 5,
                "distributed_optimizer": True, "account_for_embedding_and_loss": False, "comm_buffer": "1GiB"}),
    ("search", {"model": "llama3-8b", "cluster": "dgx-a100", "gpus": "8,16", "global_batch": 32, "top": 5}),
    ("collective", {"kind": "all-reduce"}),
    ("collective", {"kind": "all-gather", "topology": "hierarchical", "gpus": 32, "size": "1KiB..1GiB",
                    "algorithm": "all"}),
    ("collective", {"kind": "send-recv", "topology": "torus", "gpus": 16, "src": 0, "dst": 5}),
    ("simulate", {"kind": "reduce-scatter", "topology": "ring", "gpus": 8, "size": "64MiB", "algorithm": "all"}),
    ("collective", {"kind": "all-gather", "cluster": "dgx-a100", "gpus": 32, "size": "1KiB..1GiB", "algorithm": "all"}),
    ("collective", {"kind": "all-reduce", "cluster": "dgx-h100", "gpus": 16, "size": "8B..8GiB", "algorithm": "nccl",
                    "nccl_version": "2.18.5"}),
    ("simulate", {"kind": "all-reduce", "cluster": "dgx-h100", "gpus": 16, "size": "64MiB"}),
    ("analyze", {"model": "llama3-8b", "cluster": "dgx-h100", "gpus": 16, "tp": 8, "collective_model": "nccl"}),
    ("memory", {"model": "llama3-8b", "tp": 8, "sequence_parallel": False, "distributed_optimizer": False}),
    ("analyze", {"model": "deepseek-v3", "gpus": 2048, "pp": 16, "ep": 64, "first_stage_layers": 4,
                 "last_stage_layers": 1, "global_batch": 15360, "zero": 1, "recompute": "full",
                 "sequence_parallel": False}),
]


@pytest.mark.parametrize("command,request_body", CASES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(CASES)])
def test_api_equals_cli_json(server, command, request_body):
    status, api = post(server, f"/api/{command}", request_body)
    code, expected, stderr = cli(command, request_body)
    assert code == 0, stderr
    assert status == 200, api
    if command == "search":  # the one timing in a payload
        api.pop("wall_time_s"), expected.pop("wall_time_s")
    assert api == expected


def test_presets_equal_cli_json(server):
    with urllib.request.urlopen(server + "/api/presets") as response:
        api = json.loads(response.read())
    code, expected, _ = cli("presets", {})
    assert code == 0 and api == expected
    assert {"llama3-70b", "gpt3-175b"} <= {m["name"] for m in api["models"]}


# One request per kind of bad input: (endpoint, request, field the answer must name, CLI comparable)
INVALID = [
    ("analyze", {"model": "llama3-8b", "cluster": "dgx-a100", "gpus": 16, "tp": 3}, "gpus", True),  # divisibility
    ("analyze", {"model": "llama3-8b", "cluster": "dgx-a100", "gpus": 16, "tp": 8, "pp": 1, "seq_len": 4096,
                 "cp": 1, "global_batch": 7}, "global_batch", True),
    ("analyze", {"model": "no-such-model"}, "model", True),  # unknown preset
    ("analyze", {"model": "llama3-8b", "cluster": "no-such-cluster"}, "cluster", True),
    ("analyze", {"model": "llama3-8b", "cluster": "dgx-a100", "intra_bandwidth": "fast"}, "intra_bandwidth", True),
    ("memory", {"tp": -1}, "tp", True),  # range checked by the library
    ("memory", {"comm_buffer": "lots"}, "comm_buffer", True),  # unit
    ("search", {"model": "llama3-8b", "gpus": "8", "zero": "0,7"}, "zero", True),  # choice list
    ("collective", {"kind": "all-reduce", "size": "-1"}, "size", True),  # bad size
    ("collective", {"kind": "all-sum"}, "kind", True),  # unknown collective
    ("collective", {"kind": "all-reduce", "topology": "hypercube"}, "topology", True),
    ("simulate", {"kind": "all-reduce", "algorithm": "magic"}, "algorithm", True),
    ("collective", {"kind": "all-reduce", "algorithm": "nccl"}, "cluster", True),  # nccl needs a cluster
    ("collective", {"kind": "all-reduce", "cluster": "dgx-h100", "bandwidth": "1GB/s"}, "bandwidth", True),
]


@pytest.mark.parametrize("command,body,field,same_as_cli", INVALID, ids=[f"{c}-{f}" for c, _, f, _ in INVALID])
def test_invalid_input_is_422_with_the_cli_message(server, command, body, field, same_as_cli):
    status, answer = post(server, f"/api/{command}", body)
    assert status == 422, answer
    assert field in [d["field"] for d in answer["detail"]], answer
    code, _, stderr = cli(command, body)
    assert code == 2
    if same_as_cli:
        assert stderr == f"error: {answer['error']}"


@pytest.mark.parametrize("body,field", [
    ({"tp": "eight"}, "tp"),  # wrong type
    ({"zero": 5}, "zero"),  # out of the schema's range
    ({"recompute": "sometimes"}, "recompute"),  # not an enum value
    ({"pipeline": 4}, "pipeline"),  # unknown option
    ({"model": "/etc/hostname"}, "model"),  # a server path is never read
])
def test_schema_errors_are_422_naming_the_field(server, body, field):
    status, answer = post(server, "/api/memory", body)
    assert status == 422 and answer["field"] == field, answer
    assert answer["error"].startswith(f"{field}") or "unknown model" in answer["error"]


def test_uploaded_config_json_is_used(server):
    config = json.loads(open("tests/fixtures/hf/meta-llama-3-8b.json").read())
    body = {"model": "meta-llama-3-8b", "model_config_json": config, "gpu": "h100-sxm", "tp": 2}
    status, api = post(server, "/api/memory", body)
    code, expected, stderr = cli("memory", {"model": "tests/fixtures/hf/meta-llama-3-8b.json", "gpu": "h100-sxm",
                                            "tp": 2})
    assert status == 200 and code == 0, (api, stderr)
    assert api["memory"] == expected["memory"] and api["model"]["parameters"] == expected["model"]["parameters"]


def test_search_space_and_body_are_capped(server):
    status, answer = post(server, "/api/search", {"model": "llama3-8b", "gpus": "8..65536"})
    assert status == 422 and answer["field"] == "gpus" and "limit" in answer["error"]
    status, answer = post(server, "/api/simulate", {"kind": "all-reduce", "gpus": 4096})
    assert status == 422 and answer["field"] == "gpus"
    status, answer = post(server, "/api/memory", b'{"model": "' + b"x" * 300_000 + b'"}')
    assert status == 413
    status, answer = post(server, "/api/memory", {"pp": 4096, "gpus": 4096})
    assert status == 422 and answer["field"] == "pp" and "limit 1024" in answer["error"]
    config = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_hidden_layers": 65536,
              "vocab_size": 1000, "model_type": "llama"}
    status, answer = post(server, "/api/analyze", {"model": "big", "model_config_json": config})
    assert status == 422 and answer["field"] == "model" and "num_hidden_layers 65536" in answer["error"]


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if int(hex_port, 16) == port and state == "0A":  # LISTEN
                found.add(address)
    return found


def test_serve_binds_loopback_by_default():
    process, url = start_server()
    try:
        wait_until_up(url)
        host, port = url.removeprefix("http://").rsplit(":", 1)
        assert host == "127.0.0.1"
        addresses = listening_addresses(int(port))
        assert addresses == {"0100007F"}, addresses  # 127.0.0.1, little-endian hex; nothing else
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_serve_warns_when_asked_for_another_address():
    process, url = start_server("--host", "0.0.0.0")
    try:
        assert url.startswith("http://0.0.0.0:")
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert "warning: binding to 0.0.0.0, not loopback" in stderr


def test_is_loopback():
    from distcalc.web.server import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1") and not is_loopback("example.org")


def test_serve_port_in_use_is_exit_2(server):
    port = server.rsplit(":", 1)[1]
    result = subprocess.run([sys.executable, "-m", "distcalc.cli", "serve", "--port", port], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2 and result.stderr.startswith("error: --host '127.0.0.1'")


@pytest.mark.parametrize("field,value", [("tp", "eight"), ("zero", 5), ("recompute", "sometimes")])
def test_schema_error_message_equals_the_cli_reading_the_same_value_from_config(server, tmp_path, field, value):
    """The CLI's own option parser words a bad --tp its own way; the same value in a --config file goes through
    the request schema the API uses, and both print the same message."""
    status, answer = post(server, "/api/analyze", {"model": "llama3-8b", field: value})
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps({"model": "llama3-8b", field: value}))  # JSON is YAML
    result = runner.invoke(app, ["analyze", "--config", str(path), "--json"])
    assert status == 422 and result.exit_code == 2
    assert result.stderr.strip() == f"error: {answer['error']}"


def test_memory_lines_are_the_cli_segments_and_sum_to_each_stage_total(server):
    """The page draws memory bars from /api/memory-lines: the same labelled lines as ``distcalc memory``, and
    their fields add up to every stage's total (a line missing from the page would leave a gap in the bar)."""
    from distcalc.memory.lines import SEGMENTS

    with urllib.request.urlopen(server + "/api/memory-lines") as response:
        lines = json.loads(response.read())["lines"]
    assert [(line["label"], tuple(line["fields"])) for line in lines] == list(SEGMENTS)
    status, memory = post(server, "/api/memory", {"model": "llama3-70b", "gpu": "h100-sxm", "gpus": 64, "tp": 8,
                                                  "pp": 4, "step_buffer": 4.0, "comm_buffer": "1GiB"})
    assert status == 200, memory
    for stage in memory["memory"]["stages"]:
        parts = sum(stage[field] for line in lines for field in line["fields"])
        assert parts == pytest.approx(stage["total_bytes"], rel=1e-12)
    assert any(stage["optimizer_step_buffers_bytes"] > 0 for stage in memory["memory"]["stages"])
