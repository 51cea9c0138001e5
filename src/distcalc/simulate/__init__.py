"""Executable collective simulator: runs every algorithm of :mod:`distcalc.collective` on simulated ranks.

    from distcalc.simulate import simulate
    result = simulate("all-reduce", 1 << 20, topo, algorithm="auto")
    result.verified, result.time_s, result.analytic.time_s, result.busiest_link

Pipeline: :mod:`.plans` generates the schedule (the algorithm itself, step by step), :mod:`.execute` runs it
on real NumPy buffers and checks the collective's result, :mod:`.route` puts every transfer on the
topology's links, :mod:`.timing` applies α + busiest-link/B per step (``mode="step"``), or :mod:`.events`
times every chunk transfer as an event on its links with no step barrier (``mode="event"``: pipelined and
concurrent schedules overlap). The byte accounting uses the real M; the executed data is
``elements_per_chunk`` numbers per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distcalc.simulate.budget import check_before_generation, check_schedule, out_of_memory
from distcalc.simulate.events import DENSE_READY_ENTRIES, time_events
from distcalc.simulate.execute import Execution, execute
from distcalc.simulate.plans import generate_schedule, to_schedule
from distcalc.simulate.plans_grid import rail_ring_channels
from distcalc.simulate.route import route_schedule
from distcalc.simulate.schedule import Op, Pattern, Schedule
from distcalc.simulate.schedule_formula import schedule_formula
from distcalc.simulate.timing import Timing, TimingMode, time_schedule
from distcalc.topology import Topology

__all__ = ["Op", "Pattern", "Schedule", "SimulationResult", "generate_schedule", "simulate", "simulate_schedule",
           "execute", "Execution", "Timing", "TimingMode", "node_name", "parse_mode", "time_routed"]


@dataclass
class SimulationResult:
    """A simulated collective: verification, timing and link loads, next to the analytic cost."""

    collective: str
    algorithm: str
    size_bytes: float
    topology: Topology
    schedule: Schedule
    execution: Execution
    timing: Timing
    analytic: Any = None  # distcalc.collective.CollectiveCost: the closed form of the schedule as simulated
    spec: Any = None  # the library's spec formula where the schedule has its own closed form (.schedule_formula)

    @property
    def verified(self) -> bool:
        return self.execution.verified

    @property
    def time_s(self) -> float:
        return self.timing.time_s

    @property
    def steps(self) -> int:
        return self.timing.steps

    @property
    def bytes_sent_per_gpu(self) -> float:
        return self.timing.bytes_sent_per_gpu

    @property
    def max_link_bytes(self) -> float:
        return self.timing.max_link_bytes

    @property
    def busiest_link(self):
        return self.timing.busiest_link

    def as_dict(self) -> dict:
        """JSON record (docs/design.md §4 keys of ``distcalc simulate``)."""
        t = self.timing
        link = t.busiest_link
        used = t.link_bytes[t.link_bytes > 0]
        out = {
            "collective": self.collective,
            "algorithm": self.algorithm,
            "mode": t.mode.value,
            "size_bytes": self.size_bytes,
            "topology": self.topology.describe(),
            "verified": self.verified,
            "verification": self.execution.message,
            "time_s": t.time_s,
            "latency_term_s": t.latency_term_s,
            "bandwidth_term_s": t.bandwidth_term_s,
            "steps": t.steps,
            "bytes_sent_per_gpu": t.bytes_sent_per_gpu,
            "max_link_bytes": t.max_link_bytes,
            "busiest_link": None if link is None else {
                "src": node_name(link.src), "dst": node_name(link.dst), "tier": link.tier.value,
                "bytes": float(t.link_bytes[t.links.index(link)]),
                "bandwidth_bytes_per_s": link.bandwidth_bytes_per_s},
            "link_loads": {
                "links": len(t.links), "links_used": int(used.size),
                "total_bytes": float(t.link_bytes.sum()),
                "mean_bytes_per_used_link": float(used.mean()) if used.size else 0.0,
                "min_bytes_per_used_link": float(used.min()) if used.size else 0.0,
                "max_bytes": t.max_link_bytes,
            },
            "schedule": {"chunks": self.schedule.chunks, "chunk_bytes": self.schedule.chunk_bytes,
                         "transfers": int(self.schedule.src.size), **self.schedule.notes},
        }
        if self.analytic is not None:
            a = self.analytic
            out.update(analytic_time_s=float(a.time_s), analytic_steps=int(a.steps),
                       analytic_bytes_sent_per_gpu=float(a.bytes_sent_per_gpu),
                       analytic_latency_term_s=float(a.latency_term_s),
                       analytic_bandwidth_term_s=float(a.bandwidth_term_s), formula_id=a.formula_id)
        if self.spec is not None:
            out.update(spec_time_s=float(self.spec.time_s), spec_formula_id=self.spec.formula_id)
        return out


def node_name(node: Any) -> Any:
    """A topology node id as JSON-friendly text: GPUs stay ints, ("rail", 0) becomes "rail-0"."""
    return node if isinstance(node, (int, str)) else "-".join(str(x) for x in node)


def parse_mode(mode: TimingMode | str) -> TimingMode:
    """``step`` or ``event`` → :class:`TimingMode`; anything else raises ConfigError naming the valid ones."""
    try:
        return TimingMode(mode)
    except ValueError:
        from distcalc.errors import ConfigError

        valid = ", ".join(m.value for m in TimingMode)
        raise ConfigError(f"unknown simulation mode {mode!r}: valid modes are {valid}") from None


def time_routed(schedule: Schedule, topo: Topology, mode: TimingMode | str = TimingMode.STEP) -> Timing:
    """Time a schedule on ``topo``: synchronous steps (:mod:`.timing`) or chunk-level events (:mod:`.events`;
    a schedule of independent rings, ``notes["ring_channels"]``, runs one channel per ring)."""
    if parse_mode(mode) == TimingMode.EVENT:
        rings = schedule.notes.get("ring_channels")
        return time_events(schedule, topo, None if rings is None else rail_ring_channels(schedule.chunk, rings))
    return time_schedule(route_schedule(schedule, topo), topo.gpus)


def simulate_schedule(schedule: Schedule, topo: Topology, elements_per_chunk: int = 1, seed: int = 0,
                      verify: bool = True, mode: TimingMode | str = TimingMode.STEP) -> tuple[Execution, Timing]:
    """Execute (optionally) and time an already generated schedule."""
    execution = execute(schedule, elements_per_chunk, seed) if verify else Execution(True, "not executed")
    return execution, time_routed(schedule, topo, mode)


def simulate(kind: Any, size_bytes: float, topo: Topology, algorithm: Any = "auto", *, elements_per_chunk: int = 1,
             seed: int = 0, segments: int | None = None, verify: bool = True,
             mode: TimingMode | str = TimingMode.STEP) -> SimulationResult:
    """Generate, execute, verify, route and time one collective; attach the analytic cost of the same
    algorithm. ``algorithm="auto"`` simulates the algorithm the analytic model picks. ``mode``: ``step``
    (synchronous steps) or ``event`` (chunk-level events per link, pipelined schedules overlap).

    Where the schedule as simulated has its own closed form (:mod:`.schedule_formula`: pipelined trees at
    their finite k; dimension-concurrent phases without barriers in event mode), ``result.analytic`` is that
    form and ``result.spec`` the library's spec formula (the k → ∞ F18/H03/F20, the phase-synchronous T04)."""
    from distcalc.collective import collective_cost, parse_algorithm, parse_kind

    mode = parse_mode(mode)
    kind = parse_kind(kind)
    choice = parse_algorithm(algorithm)
    analytic = collective_cost(kind, float(size_bytes), topo, "auto" if choice in ("auto", "all") else choice)
    name = analytic.algorithm.value
    if segments is None and name == "pipelined-chain" and topo.gpus > 1:
        segments = int(analytic.steps) - (topo.gpus - 2)  # the library's optimal k: steps = N − 2 + k
    pick = None
    if name == "dim-concurrent" or (name == "direct" and kind.value == "all-to-all"):
        def pick(plans):
            """The candidate with the shortest simulated time (the library picks its best); a candidate may be
            a function that builds it, built only if no earlier one already reaches the library's formula."""
            best = None
            for plan in plans:
                plan = plan() if callable(plan) else plan
                time_s = time_routed(to_schedule(kind.value, name, topo, float(size_bytes), plan), topo, mode).time_s
                if best is None or time_s < best[0]:
                    best = (time_s, plan)
                if time_s <= analytic.time_s * (1 + 1e-12) and kind.value == "all-to-all":
                    break
            return best[1]
    check_before_generation(kind.value, name, topo.gpus, elements_per_chunk if verify else 0)
    try:
        schedule = generate_schedule(kind.value, name, topo, float(size_bytes), segments, pick)
        # step timing holds a steps × links load matrix; event timing a (node, chunk) table of ready times
        table = (schedule.steps * len(topo.links()) if mode == TimingMode.STEP
                 else min(schedule.nodes * schedule.chunks, DENSE_READY_ENTRIES))
        check_schedule(kind.value, name, schedule.nodes, schedule.chunks, int(schedule.src.size),
                       elements_per_chunk if verify else 0, table)
        execution, timing = simulate_schedule(schedule, topo, elements_per_chunk, seed, verify, mode)
    except MemoryError:  # the exact size is known only while generating: report it, never a traceback
        raise out_of_memory(kind.value, name, topo.gpus) from None
    spec = None
    own = schedule_formula(kind, analytic, topo, float(size_bytes), schedule, mode)
    if own is not None:
        spec, analytic = analytic, own
    return SimulationResult(kind.value, name, float(size_bytes), topo, schedule, execution, timing, analytic, spec)

