"""Turn a ``bench collectives`` sweep into α and B per collective and tier, in the model's own terms.

For each (collective, tier) the sweep's median times are fitted with ``t = a + c·M`` (:mod:`.fit`; two
segments where the data demand it). The collective model (:func:`distcalc.collective.collective_cost`) on
an ideal switch of the measured group size N, with the algorithm the backend runs
(:data:`BACKEND_ALGORITHMS`), has the form ``t = steps·α + φ·M/B``; evaluating it once with α = B = 1 gives
``steps`` and ``φ``, so

    α = a / steps,      B = φ / c.

With these α and B substituted into the topology, the model reproduces the fitted line exactly for the
measured N and algorithm, and extrapolates to other N and algorithms through its formulas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distcalc.calibration.fit import Segment, fit_segments, predict, relative_residuals

SEND_RECV = "send-recv"

#: Algorithm the backend runs, per collective (the model's name), with its source.
BACKEND_ALGORITHMS: dict[str, dict[str, str]] = {
    "gloo": {
        "all-reduce": "ring",  # gloo/allreduce.cc: ring reduce-scatter + ring allgather, segmented
        "reduce-scatter": "ring",  # modelled as the ring reduce-scatter (the first half of allreduce.cc)
        "all-gather": "ring",  # gloo/allgather.cc: ring
        "broadcast": "binomial-tree",  # gloo/broadcast.cc: binomial tree from the root
        "reduce": "rabenseifner",  # gloo/reduce.cc: ring reduce-scatter then gather to the root
        "all-to-all": "direct",  # gloo/alltoall.cc: every rank sends its block to every peer
        SEND_RECV: "p2p",
    },
    "nccl": {
        "all-reduce": "ring", "reduce-scatter": "ring", "all-gather": "ring",
        "broadcast": "pipelined-chain", "reduce": "pipelined-chain",  # NCCL ring-chain broadcast/reduce
        "all-to-all": "pairwise", SEND_RECV: "p2p",
    },
}


@dataclass
class CollectiveFit:
    """α and B of one collective on one tier, fitted to a sweep (``segments``: the raw fit, ascending)."""

    collective: str
    tier: str
    group_size: int
    algorithm: str
    steps: float
    bandwidth_factor: float
    segments: list[dict[str, float]]
    residuals: list[dict[str, float]] = field(default_factory=list)
    rms_relative_error: float = 0.0
    decision: str = ""
    topology: str = "switch"

    @property
    def latency_s(self) -> float:
        """α of the large-message segment (the one a topology gets when no size is given)."""
        return self.segments[-1]["latency_s"]

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """B of the large-message segment."""
        return self.segments[-1]["bandwidth_bytes_per_s"]

    def segment_for(self, size_bytes: float | None) -> dict[str, float]:
        """The segment holding ``size_bytes`` (the last one when None)."""
        if size_bytes is None:
            return self.segments[-1]
        for segment in self.segments:
            if size_bytes < segment["max_size_bytes"]:
                return segment
        return self.segments[-1]

    def as_dict(self) -> dict[str, Any]:
        return {"collective": self.collective, "tier": self.tier, "group_size": self.group_size,
                "algorithm": self.algorithm, "topology": self.topology, "latency_s": self.latency_s,
                "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s, "steps": self.steps,
                "bandwidth_factor": self.bandwidth_factor, "segments": self.segments,
                "rms_relative_error": self.rms_relative_error, "decision": self.decision,
                "residuals": self.residuals}


def model_coefficients(collective: str, n: int, algorithm: str) -> tuple[float, float]:
    """``(steps, φ)`` of the model ``t = steps·α + φ·M/B`` on an N-GPU ideal switch (α = B = 1)."""
    from distcalc.collective import collective_cost
    from distcalc.p2p import send_recv_cost
    from distcalc.topology import make_topology

    topo = make_topology("switch", n, bandwidth_bytes_per_s=1.0, latency_s=1.0)
    reference = float(n) * 2.0**30  # large and divisible: no chunk rounding in the bandwidth term
    if collective == SEND_RECV:
        cost = send_recv_cost(reference, topo, 0, 1 if n > 1 else 0)
    else:
        cost = collective_cost(collective, reference, topo, algorithm=algorithm)
    return float(cost.latency_term_s), float(cost.bandwidth_term_s) / reference


def _segment_record(segment: Segment, steps: float, factor: float) -> dict[str, float]:
    latency = segment.intercept_s / steps if steps > 0 else 0.0
    bandwidth = factor / segment.seconds_per_byte if segment.seconds_per_byte > 0 else math.inf
    return {"min_size_bytes": segment.min_size_bytes, "max_size_bytes": segment.max_size_bytes,
            "intercept_s": segment.intercept_s, "seconds_per_byte": segment.seconds_per_byte,
            "latency_s": latency, "bandwidth_bytes_per_s": bandwidth}


def _points(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = sorted(rows, key=lambda r: r["size_bytes"])
    sizes = np.array([r["size_bytes"] for r in rows], dtype=float)
    times = np.array([r["time_s"] for r in rows], dtype=float)
    spread = np.array([(r["p99_time_s"] - r["time_s"]) / r["time_s"] for r in rows], dtype=float)
    return sizes, times, spread


def fit_collective(rows: list[dict[str, Any]], backend: str) -> CollectiveFit:
    """Fit one (collective, tier)'s rows of a sweep (all with the same group size)."""
    first = rows[0]
    collective, n = first["collective"], int(first["group_size"])
    algorithm = BACKEND_ALGORITHMS.get(backend, BACKEND_ALGORITHMS["gloo"])[collective]
    steps, factor = model_coefficients(collective, n, algorithm)
    sizes, times, spread = _points(rows)
    segments, decision = fit_segments(sizes, times, spread)
    errors = relative_residuals(segments, sizes, times)
    predicted = predict(segments, sizes)
    residuals = [{"size_bytes": float(s), "measured_s": float(t), "predicted_s": float(p),
                  "relative_error": float(e), "relative_spread": float(d)}
                 for s, t, p, e, d in zip(sizes, times, predicted, errors, spread)]
    return CollectiveFit(collective, first.get("tier", "intra"), n, algorithm, steps, factor,
                         [_segment_record(s, steps, factor) for s in segments], residuals,
                         float(np.sqrt(np.mean(errors**2))), decision)


def group_rows(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Rows of a sweep keyed by (collective, tier), in sweep order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["collective"], row.get("tier", "intra")), []).append(row)
    return groups


def fit_sweep(rows: list[dict[str, Any]], backend: str) -> list[CollectiveFit]:
    """One :class:`CollectiveFit` per (collective, tier) of the sweep."""
    return [fit_collective(group, backend) for group in group_rows(rows).values()]


def holdout_check(rows: list[dict[str, Any]], floor: float = 0.25) -> list[dict[str, Any]]:
    """Calibrate on the even-indexed sizes of one (collective, tier) (the same :func:`fit_segments` as
    :func:`fit_collective`) and predict the odd-indexed ones.

    Each held-out point reports its relative error and the measurement's own spread on the side the
    prediction falls: ``(p99 − median)/median`` above, ``(median − p1)/median`` below (the upper spread when
    the row has no p1). ``within`` is ``|error| ≤ max(spread, floor)``: the prediction lies inside the
    range of the trials, or within ``floor`` of the median — the floor states how far a median of a few
    trials on a shared, oversubscribed CPU moves between runs even when one run's trials are tight.
    """
    ordered = sorted(rows, key=lambda r: r["size_bytes"])
    sizes, times, spread = _points(ordered)
    train = np.arange(sizes.size) % 2 == 0
    segments, _ = fit_segments(sizes[train], times[train], spread[train])
    out = []
    for row in ordered[1::2]:
        size, time = float(row["size_bytes"]), float(row["time_s"])
        predicted = float(predict(segments, size))
        error = (predicted - time) / time
        upper = (row["p99_time_s"] - time) / time
        lower = (time - row["p1_time_s"]) / time if "p1_time_s" in row else upper
        tolerance = max(upper if error > 0 else lower, floor)
        out.append({"size_bytes": size, "measured_s": time, "predicted_s": predicted, "relative_error": error,
                    "relative_spread": upper if error > 0 else lower, "tolerance": tolerance,
                    "within": bool(abs(error) <= tolerance)})
    return out
