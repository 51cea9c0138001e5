"""Time a routed schedule: per step, α of the step + the busiest directed link's bytes / its bandwidth.

    T = Σ_s [ α_s + max_l (bytes_{s,l} / B_l) ]

α_s is the latency of the slowest transfer of step s (:mod:`.route`); links are full duplex, so the two
directions of a wire are separate links. This is the spec's cost model (docs/spec/collectives.md §1: "Time = number of
sequential steps·α + bytes crossing the busiest port or link / B"), applied step by step to the real traffic
instead of to a closed form. Reductions are free (γ = 0, as in the collective library).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from distcalc.simulate.route import LinkLoads
from distcalc.topology import Link


class TimingMode(str, enum.Enum):
    """How a routed schedule is timed: ``step`` (synchronous steps, this module) or ``event`` (chunk-level
    events per link, :mod:`distcalc.simulate.events`)."""

    STEP = "step"
    EVENT = "event"


@dataclass
class Timing:
    """Totals of a simulated collective (seconds, bytes)."""

    time_s: float
    latency_term_s: float
    bandwidth_term_s: float
    steps: int
    bytes_sent_per_gpu: float
    step_time_s: np.ndarray
    step_latency_s: np.ndarray
    step_max_link_bytes: np.ndarray  # bytes on each step's bottleneck link (the one with the most bytes / B)
    link_bytes: np.ndarray
    links: list[Link]
    max_link_bytes: float  # the most bytes any directed link carries in total
    busiest_link: Link | None  # the link busy longest (bytes / bandwidth)
    mode: TimingMode = TimingMode.STEP


def time_schedule(loads: LinkLoads, gpus: int) -> Timing:
    steps = loads.loads.shape[0]
    if steps == 0 or loads.loads.size == 0:
        zero = np.zeros(steps)
        return Timing(0.0, 0.0, 0.0, steps, 0.0, zero, zero, zero, np.zeros(len(loads.links)), loads.links, 0.0, None)
    link_time = loads.loads / loads.bandwidth_bytes_per_s[None, :]
    bottleneck = link_time.argmax(axis=1)  # the link that sets each step's bandwidth time
    step_bw = link_time[np.arange(steps), bottleneck]
    step_time = loads.step_latency_s + step_bw
    link_bytes = loads.loads.sum(axis=0)
    busiest = int(np.argmax(link_bytes / loads.bandwidth_bytes_per_s))  # longest busy time (= most bytes if uniform)
    return Timing(
        time_s=float(step_time.sum()),
        latency_term_s=float(loads.step_latency_s.sum()),
        bandwidth_term_s=float(step_bw.sum()),
        steps=steps,
        bytes_sent_per_gpu=float(loads.sent_bytes_per_node[:gpus].max()),
        step_time_s=step_time,
        step_latency_s=loads.step_latency_s,
        step_max_link_bytes=loads.loads[np.arange(steps), bottleneck],
        link_bytes=link_bytes,
        links=loads.links,
        max_link_bytes=float(link_bytes.max()),
        busiest_link=loads.links[busiest],
    )
