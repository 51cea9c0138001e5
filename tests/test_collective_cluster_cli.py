"""``collective``/``simulate`` with ``--cluster NAME --gpus N`` and ``--algorithm nccl``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.cluster import load_cluster
from distcalc.placement import group_placement
from distcalc.traffic import Dim

runner = CliRunner()


def _json(*args: str) -> dict:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_cluster_gives_the_topology_analyze_uses():
    out = _json("collective", "all-reduce", "--cluster", "dgx-h100", "--gpus", "16", "--size", "64MiB", "--json")
    expected = group_placement(load_cluster("dgx-h100"), Dim.DP, 16, 1).topology.describe()
    assert out["topology"]["kind"] == "hierarchical"
    assert out["topology"] == json.loads(json.dumps(expected))
    sim = _json("simulate", "all-reduce", "--cluster", "dgx-a100", "--gpus", "8", "--size", "1MiB",
                "--algorithm", "ring", "--json")
    assert sim["verified"] is True


def test_nccl_reports_algorithm_protocol_channels():
    out = _json("collective", "all-reduce", "--cluster", "dgx-h100", "--gpus", "8", "--size", "8GiB",
                "--algorithm", "nccl", "--json")
    row = out["results"][0]
    assert (row["algorithm"], row["protocol"], row["channels"]) == ("nvls", "Simple", 16)
    assert row["time_s"] > 0 and row["busbw_bytes_per_s"] > 0
    assert out["lower_bound_s"] > 0
    small = _json("collective", "all-reduce", "--cluster", "dgx-a100", "--gpus", "8", "--size", "8B",
                  "--algorithm", "nccl", "--json")["results"][0]
    assert small["protocol"] == "LL"


def test_nccl_bad_input_exits_2():
    for args in (["--algorithm", "nccl"], ["--cluster", "dgx-h100", "--algorithm", "nccl", "--nccl-algo", "foo"],
                 ["--cluster", "dgx-h100", "--algorithm", "nccl", "--nccl-version", "9.9"],
                 ["--cluster", "dgx-h100", "--bandwidth", "10GB/s"],
                 ["--cluster", "tpu-v5p-64", "--algorithm", "nccl"]):
        result = runner.invoke(app, ["collective", "all-reduce", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "error:" in result.output
