"""Event-driven timing (issue 18): no step barrier, per-link α-β messages, data dependencies, circuits.

Invariants (hypothesis): the event time never exceeds the synchronous step time of the same schedule and
never undercuts the busiest link's own work; a pipelined chain over hop classes takes the flow-shop makespan
Σ_h t_h + (k − 1)·max_h t_h, the collective library's formula (flat.pipelined_chain) for any α, B and k.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.collective import CollectiveKind, valid_algorithms
from distcalc.collective.flat import pipelined_chain
from distcalc.simulate import simulate, time_routed
from distcalc.topology import make_topology

runner = CliRunner()
M = float(1 << 20)


def _switch_or_ring(kind: str, n: int, alpha: float, bandwidth: float):
    return make_topology(kind, n, bandwidth_bytes_per_s=bandwidth, latency_s=alpha)


@settings(max_examples=40, deadline=None)
@given(topology=st.sampled_from(["switch", "ring"]), n=st.integers(2, 20),
       kind=st.sampled_from([k for k in CollectiveKind]), pick=st.integers(0, 1000),
       alpha=st.floats(1e-7, 1e-4), size=st.floats(1e3, 1e9))
def test_event_time_lies_between_the_busiest_link_and_the_step_time(topology, n, kind, pick, alpha, size):
    topo = _switch_or_ring(topology, n, alpha, 100e9)
    algorithms = [a for a in valid_algorithms(kind, topo) if a.value not in ("nccl-ring", "nccl-tree")]
    algorithm = algorithms[pick % len(algorithms)].value
    event = simulate(kind, size, topo, algorithm, verify=False, mode="event")
    step = time_routed(event.schedule, topo, "step")
    assert event.timing.mode.value == "event"
    assert event.time_s <= step.time_s * (1 + 1e-9)
    busiest = max((b / lk.bandwidth_bytes_per_s for b, lk in zip(event.timing.link_bytes, event.timing.links)),
                  default=0.0)
    assert event.time_s >= busiest * (1 - 1e-9)
    assert 0.0 <= event.timing.latency_term_s <= event.time_s * (1 + 1e-9)
    assert event.timing.step_time_s.sum() == pytest.approx(event.time_s, rel=1e-9, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(g=st.integers(2, 6), nodes=st.integers(2, 5), a1=st.floats(1e-7, 2e-5), a2=st.floats(1e-7, 2e-5),
       b1=st.floats(1e10, 1e12), b2=st.floats(1e10, 1e12), k=st.integers(1, 12),
       kind=st.sampled_from(["broadcast", "reduce"]))
def test_two_hop_class_chain_is_the_flow_shop_makespan(g, nodes, a1, a2, b1, b2, k, kind):
    topo = make_topology("hierarchical", g * nodes, gpus_per_node=g, bandwidth_bytes_per_s=b1, latency_s=a1,
                         inter_bandwidth_bytes_per_s=b2, inter_latency_s=a2)
    result = simulate(kind, M, topo, "pipelined-chain", segments=k, mode="event")
    assert result.verified
    hops = [(g * nodes - nodes, a1, b1), (nodes - 1, a2, b2)]
    seg = M / k
    times = [a + seg / b for count, a, b in hops if count]
    makespan = sum(count * (a + seg / b) for count, a, b in hops) + (k - 1) * max(times)
    assert result.time_s == pytest.approx(makespan, rel=1e-9)
    assert result.steps == g * nodes - 2 + k
    if k == int(pipelined_chain(M, hops).steps) - (g * nodes - 2):  # the library's own k: the formula itself
        assert result.time_s == pytest.approx(result.analytic.time_s, rel=1e-9)


def test_oversubscribed_uplink_holds_its_circuit():
    """Linear scatter on a 2:1 leaf-spine tree: each cross-leaf message holds the root's link as long as the
    slow uplink takes, so the messages do not overlap (the step model's sequence, exactly)."""
    topo = make_topology("tree", 8, gpus_per_node=4, oversubscription=2.0, bandwidth_bytes_per_s=100e9,
                         latency_s=5e-6)
    event = simulate("scatter", M, topo, "linear", mode="event")
    assert event.time_s == pytest.approx(event.analytic.time_s, rel=1e-9)


@pytest.mark.parametrize("kind,algorithm,gpus", [("all-to-all", "direct", 64), ("all-reduce", "ring", 64)])
def test_synchronous_schedules_time_the_same_in_both_modes(kind, algorithm, gpus):
    topo = _switch_or_ring("switch", gpus, 5e-6, 100e9)
    step = simulate(kind, M, topo, algorithm, verify=False)
    event = simulate(kind, M, topo, algorithm, verify=False, mode="event")
    assert event.time_s == pytest.approx(step.time_s, rel=1e-12)
    assert event.timing.latency_term_s == pytest.approx(step.timing.latency_term_s, rel=1e-12)


def test_cli_event_mode_json_and_bad_mode():
    out = runner.invoke(app, ["simulate", "broadcast", "--topology", "hierarchical", "--gpus", "16",
                              "--gpus-per-node", "8", "--algorithm", "pipelined-chain", "--size", "64MiB",
                              "--mode", "event", "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["mode"] == "event" and payload["verified"]
    assert payload["time_s"] == pytest.approx(payload["analytic_time_s"], rel=1e-9)
    bad = runner.invoke(app, ["simulate", "all-reduce", "--mode", "async"])
    assert bad.exit_code == 2
    assert "error: unknown simulation mode 'async': valid modes are step, event" in bad.output
