"""CLI contract of ``distcalc collective`` and ``distcalc topologies`` (design §4)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from distcalc.cli import app

runner = CliRunner()
HIER = ["collective", "all-reduce", "--topology", "hierarchical", "--gpus", "64", "--gpus-per-node", "8",
        "--size", "1GiB", "--intra-bandwidth", "450GB/s", "--intra-latency", "1us", "--inter-bandwidth",
        "50GB/s", "--inter-latency", "5us"]


def _output(result) -> str:
    try:
        return result.output + (result.stderr or "")
    except ValueError:  # stderr not captured separately
        return result.output


def test_hierarchical_json_contract():
    result = runner.invoke(app, HIER + ["--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {"collective", "size_bytes", "topology", "results", "best", "lower_bound_s"} <= set(payload)
    assert payload["collective"] == "all-reduce" and payload["size_bytes"] == 2**30
    assert payload["topology"]["kind"] == "hierarchical" and payload["topology"]["gpus"] == 64
    (record,) = payload["results"]
    assert {"algorithm", "time_s", "latency_term_s", "bandwidth_term_s", "steps", "bytes_sent_per_gpu"} <= set(record)
    assert record["algorithm"] == payload["best"]
    assert record["time_s"] == pytest.approx(record["latency_term_s"] + record["bandwidth_term_s"])
    assert payload["lower_bound_s"] <= record["time_s"]


def test_hierarchical_table_and_all_sorted():
    result = runner.invoke(app, HIER)
    assert result.exit_code == 0 and "chain-dbt" in result.output and "lower bound" in result.output
    result = runner.invoke(app, HIER + ["--algorithm", "all", "--json"])
    times = [r["time_s"] for r in json.loads(result.stdout)["results"]]
    assert len(times) >= 4 and times == sorted(times)


def test_size_range_reports_busbw():
    result = runner.invoke(app, ["collective", "all-reduce", "--gpus", "8", "--size", "1KiB..8KiB", "--json"])
    payload = json.loads(result.stdout)
    assert payload["size_bytes"] == [1024, 2048, 4096, 8192]
    for record in payload["results"]:
        assert record["busbw_bytes_per_s"] == pytest.approx(record["algbw_bytes_per_s"] * 2 * 7 / 8)
        assert record["algbw_bytes_per_s"] == pytest.approx(record["size_bytes"] / record["time_s"])


@pytest.mark.parametrize("args, needle", [
    (["--size", "-1"], "'-1'"), (["--size", "1XB"], "'1XB'"), (["--gpus", "0"], "--gpus 0"),
    (["--topology", "mesh", "--shape", "3x3", "--gpus", "8"], "3x3"), (["--topology", "foo"], "'foo'"),
    (["--algorithm", "foo"], "'foo'"), (["--bandwidth", "0"], "'0'"), (["--algorithm", "swing"], "swing"),
])
def test_bad_input_exits_2_without_traceback(args, needle):
    result = runner.invoke(app, ["collective", "all-reduce"] + args)
    assert result.exit_code == 2
    text = _output(result)
    assert needle in text and "Traceback" not in text


def test_unknown_collective():
    result = runner.invoke(app, ["collective", "all-sum"])
    assert result.exit_code == 2 and "all-sum" in _output(result)


def test_send_recv_and_topologies():
    result = runner.invoke(app, ["collective", "send-recv", "--size", "1MiB", "--json"])
    payload = json.loads(result.stdout)
    assert payload["results"][0]["time_s"] == pytest.approx(5e-6 + 2**20 / 100e9)
    result = runner.invoke(app, ["topologies", "--json"])
    kinds = {t["kind"]: t["algorithms"] for t in json.loads(result.stdout)["topologies"]}
    assert set(kinds) == {"ring", "tree", "switch", "hierarchical", "mesh", "torus"}
    assert "in-network" in kinds["switch"]["all-reduce"] and "dim-concurrent" in kinds["torus"]["all-reduce"]
    assert runner.invoke(app, ["topologies"]).exit_code == 0


def test_plot(tmp_path):
    path = tmp_path / "t.png"
    result = runner.invoke(app, ["collective", "all-gather", "--size", "1KiB..1MiB", "--plot", str(path)])
    assert result.exit_code == 0, result.output
    assert path.stat().st_size > 1000


def test_help_lists_the_collectives_not_the_topologies():
    # the command's argument help names the collectives (a topology-kinds import once shadowed the list)
    result = runner.invoke(app, ["collective", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(_output(result).split())
    assert "Collective: all-reduce, reduce-scatter, all-gather" in text
    assert "Collective: ring" not in text
