"""The simulator's machinery: the executor catches wrong schedules, ring/line phases are what they claim,
routing loads the right links, the CLI prints the contract's keys and fails cleanly."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.simulate import Pattern, generate_schedule, simulate
from distcalc.simulate.execute import execute
from distcalc.simulate.recursive import reach_sets, swing_matchings, xor_matchings
from distcalc.simulate.ring import RingMode, reduce_scatter_rows, ring_steps, shard_bundles
from distcalc.simulate.route import route_schedule
from distcalc.simulate.schedule import Op, Rows, build, sequence
from distcalc.topology import make_topology

runner = CliRunner()


def _ring_schedule(pattern: Pattern, n: int, mode: RingMode) -> tuple:
    rs = reduce_scatter_rows(np.arange(n)[None, :], shard_bundles(n, 2), mode)
    rows = {Pattern.REDUCE_SCATTER: rs, Pattern.ALL_GATHER: rs.reversed(Op.COPY),
            Pattern.ALL_REDUCE: sequence(rs, rs.reversed(Op.COPY))}[pattern]
    return build(pattern, mode.value, n, 2 * n, 1.0, rows), rs


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 40), mode=st.sampled_from(list(RingMode)),
       pattern=st.sampled_from([Pattern.REDUCE_SCATTER, Pattern.ALL_GATHER, Pattern.ALL_REDUCE]))
def test_ring_phases_compute_the_collective_in_the_stated_steps(n, mode, pattern):
    schedule, _ = _ring_schedule(pattern, n, mode)
    assert execute(schedule, elements_per_chunk=3, seed=n).verified
    factor = 2 if pattern == Pattern.ALL_REDUCE else 1
    expected = ring_steps(n, RingMode.UNI if n == 2 and mode != RingMode.LINE else mode)
    assert schedule.steps == factor * expected


@pytest.mark.parametrize("damage", ["drop", "duplicate", "wrong_chunk", "copy_collision"])
def test_executor_rejects_a_damaged_schedule(damage):
    """A schedule that loses, double-counts or misroutes data does not verify."""
    _, rs = _ring_schedule(Pattern.REDUCE_SCATTER, 6, RingMode.UNI)
    rows = rs
    if damage == "drop":
        rows = rs.select(np.arange(rs.size) != rs.size // 2)
    elif damage == "duplicate":
        rows = Rows(*(np.concatenate([a, a[:1]]) for a in rs._fields()))
    elif damage == "wrong_chunk":
        chunk = rs.chunk.copy()
        chunk[0] = (chunk[0] + 2) % 12
        rows = Rows(rs.step, rs.src, rs.dst, chunk, rs.op, rs.tie)
    else:  # two copies of different data into one chunk in one step
        rows = Rows.of([0, 0], [1, 2], [0, 0], [0, 0], Op.COPY)
    schedule = build(Pattern.REDUCE_SCATTER, damage, 6, 12, 1.0, rows)
    result = execute(schedule, elements_per_chunk=2)
    assert not result.verified
    assert result.message


def test_untouched_all_gather_fails_and_nan_marks_missing_data():
    schedule = build(Pattern.ALL_GATHER, "nothing", 4, 4, 1.0, Rows.empty())
    result = execute(schedule)
    assert not result.verified and "wrong on rank" in result.message


@pytest.mark.parametrize("p", [2, 4, 8, 16, 32])
def test_butterfly_matchings_partition_the_ranks(p):
    for matchings in (xor_matchings(p), xor_matchings(p, largest_first=False), swing_matchings(p),
                      swing_matchings(p, mirrored=True)):
        reach = reach_sets(matchings)
        assert reach[0].all() and np.array_equal(reach[-1], np.eye(p, dtype=bool))


def test_overlapping_matchings_are_refused():
    p = 8
    with pytest.raises(ValueError):
        reach_sets([np.arange(p) ^ 1, np.arange(p) ^ 1, np.arange(p) ^ 4])


def test_ring_loads_one_shard_per_link_per_step():
    topo = make_topology("ring", 8, bandwidth_bytes_per_s=1e9, latency_s=0.0)
    schedule = generate_schedule("reduce-scatter", "ring", topo, 8.0)
    loads = route_schedule(schedule, topo).loads  # steps × links, bytes
    used = loads[:, loads.sum(axis=0) > 0]
    assert used.shape == (7, 8)  # 8 clockwise links used, the 8 counter-clockwise idle
    assert np.all(used == 1.0)


def test_torus_route_goes_dimension_order_and_busiest_link_is_reported():
    topo = make_topology("torus", 16, shape=(4, 4), bandwidth_bytes_per_s=100e9, latency_s=5e-6)
    result = simulate("all-to-all", 1 << 20, topo, "direct")
    assert result.verified
    assert result.max_link_bytes == pytest.approx(result.timing.link_bytes.max())
    assert result.busiest_link in result.timing.links


def test_mirrored_instance_takes_the_other_way_round_at_a_tie():
    topo = make_topology("ring", 8, bandwidth_bytes_per_s=100e9, latency_s=5e-6)
    result = simulate("reduce-scatter", 1 << 20, topo, "mirrored-halving")
    assert result.verified
    assert result.time_s == pytest.approx(result.analytic.time_s, rel=1e-9)
    assert int(result.schedule.tie.sum()) > 0


def test_dim_sequential_on_32x32_torus_agrees_at_scale():
    topo = make_topology("torus", 1024, shape=(32, 32), bandwidth_bytes_per_s=100e9, latency_s=5e-6)
    result = simulate("all-reduce", 1 << 30, topo, "dim-sequential")
    assert result.verified
    assert result.time_s == pytest.approx(result.analytic.time_s, rel=1e-9)
    assert result.steps == 64


def _cli_json(*args):
    out = runner.invoke(app, ["simulate", *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_cli_torus_all_reduce_is_verified_and_matches_the_formula(tmp_path):
    payload = _cli_json("all-reduce", "--topology", "torus", "--gpus", "16", "--size", "1MiB", "--bandwidth",
                        "100GB/s", "--latency", "5us")
    for key in ("algorithm", "verified", "time_s", "analytic_time_s", "steps", "bytes_sent_per_gpu",
                "max_link_bytes", "busiest_link", "link_loads"):
        assert key in payload
    assert payload["verified"] is True
    assert payload["time_s"] == pytest.approx(payload["analytic_time_s"], rel=1e-9)
    png = tmp_path / "loads.png"
    out = runner.invoke(app, ["simulate", "all-reduce", "--topology", "torus", "--gpus", "16", "--size", "1MiB",
                              "--plot", str(png)])
    assert out.exit_code == 0, out.output
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_cli_all_algorithms_and_timeline_plot(tmp_path):
    png = tmp_path / "timeline.png"
    payload = _cli_json("all-reduce", "--topology", "hierarchical", "--gpus", "16", "--size", "16MiB",
                        "--algorithm", "all", "--plot", str(png))
    assert all(r["verified"] for r in payload["results"])
    assert {r["algorithm"] for r in payload["results"]} >= {"hierarchical", "rail-ring", "chain-dbt"}
    assert png.exists()


@pytest.mark.parametrize("args,needle", [
    (["all-reduce", "--algorithm", "nope"], "nope"),
    (["all-reduce", "--size", "1XB"], "1XB"),
    (["all-reduce", "--gpus", "0"], "gpus"),
    (["all-sum"], "all-sum"),
    (["all-reduce", "--topology", "torus", "--gpus", "8", "--shape", "3x3"], "3x3"),
    (["all-reduce", "--algorithm", "bucket"], "bucket"),
])
def test_cli_bad_input_exits_2_with_a_message(args, needle):
    out = runner.invoke(app, ["simulate", *args])
    assert out.exit_code == 2
    assert needle in out.output
    assert "Traceback" not in out.output
