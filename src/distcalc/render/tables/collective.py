"""Text views of ``distcalc collective`` (one size: every algorithm with its terms; a size range: time, algbw,
busbw and the lower bound per size; ``--algorithm nccl``: NCCL's own choice per size) and of ``distcalc
topologies``; :func:`topology_summary` is the one-line name of a topology that tables and figure titles use."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.table import Table

from distcalc.cluster import ClusterSpec
from distcalc.collective.busbw import algbw_busbw
from distcalc.collective.nccl_tuner import NcclEstimate
from distcalc.jobs.collective import result_dict
from distcalc.render.console import console
from distcalc.topology import Topology, TopologyKind, kind_traits
from distcalc.units import format_rate, format_size, format_time


def print_collective_single(kind: str, size: int, topo: Topology, records: list, bound: float) -> None:
    """One size: every algorithm with its formula, terms, steps, bytes sent, algbw and busbw; the best and the bound."""
    table = Table(title=f"{kind} of {format_size(size)} on {topology_summary(topo)}")
    for column in ("algorithm", "formula", "time", "latency term", "bandwidth term", "steps", "sent/GPU",
                   "algbw", "busbw"):
        table.add_column(column, justify="left" if column in ("algorithm", "formula") else "right")
    for record in records:
        row = result_dict(record, kind, topo)
        table.add_row(row["algorithm"], str(row["formula_id"]), format_time(row["time_s"]),
                      format_time(row["latency_term_s"]), format_time(row["bandwidth_term_s"]), str(row["steps"]),
                      format_size(row["bytes_sent_per_gpu"]), _rate(row["algbw_bytes_per_s"]),
                      _rate(row["busbw_bytes_per_s"]))
    console.print(table)
    best = min(records, key=lambda r: r.time_s)
    console.print(f"best: [bold]{best.algorithm.value}[/bold] {format_time(best.time_s)}    "
                  f"lower bound: {format_time(bound)}")


def _rate(value: float) -> str:
    """A rate, or ``-`` where it is not finite (a zero time)."""
    return "-" if not np.isfinite(value) else format_rate(value)


def topology_summary(topo: Topology) -> str:
    """One-line name of ``topo`` with its bandwidth and latency (tables and figure titles)."""
    if topo.kind == TopologyKind.HIERARCHICAL:
        return (f"hierarchical {topo.nodes}×{topo.gpus_per_node} GPUs (intra {format_rate(topo.bandwidth_bytes_per_s)}"
                f", {format_time(topo.latency_s)}; inter {format_rate(float(topo.inter_bandwidth_bytes_per_s))}, "
                f"{format_time(float(topo.inter_latency_s))})")
    shape = f" {'x'.join(map(str, topo.shape))}" if kind_traits(topo.kind).shaped else ""
    if topo.kind == TopologyKind.TREE and topo.gpus > 1:
        over = f", uplinks {topo.oversubscription:g}:1" if topo.nodes > 1 else ""
        return (f"tree of {topo.gpus} GPUs [{topo.leaf_layout}{over}] ({format_rate(topo.bandwidth_bytes_per_s)}, "
                f"{format_time(topo.latency_s)})")
    return (f"{topo.kind.value}{shape} of {topo.gpus} GPUs ({format_rate(topo.bandwidth_bytes_per_s)}, "
            f"{format_time(topo.latency_s)})")


def print_collective_range(kind: str, topo: Topology, per_size: list, bounds: list) -> None:
    """A size range: per size and algorithm, time, algbw, busbw and the lower bound."""
    table = Table(title=f"{kind} on {topology_summary(topo)}")
    for column in ("size", "algorithm", "time", "algbw", "busbw", "lower bound"):
        table.add_column(column, justify="left" if column == "algorithm" else "right")
    for (size, records), bound in zip(per_size, bounds):
        for record in records:
            algbw, busbw = algbw_busbw(kind, size, record.time_s, topo.gpus)
            table.add_row(format_size(size), record.algorithm.value, format_time(record.time_s), _rate(algbw),
                          _rate(busbw), format_time(bound))
    console.print(table)


def print_nccl_estimates(kind: str, estimates: list[NcclEstimate], cluster: ClusterSpec, gpus: int) -> None:
    """Rich table: size, NCCL's algorithm, protocol, channels, time and its terms, algbw, busbw."""
    version = estimates[0].version.value
    table = Table(title=f"{kind} on {gpus} GPUs of {cluster.name}: NCCL {version} (its tuner's choice; NVLS and "
                  "Ring all-reduce timed as their kernels run)")
    for column in ("size", "algorithm", "protocol", "channels", "time", "latency term", "bandwidth term",
                   "algbw", "busbw"):
        table.add_column(column, justify="left" if column in ("algorithm", "protocol") else "right")
    for e in estimates:
        algbw, busbw = algbw_busbw(kind, e.size_bytes, e.time_s, gpus)
        table.add_row(format_size(e.size_bytes), e.algorithm.value, e.protocol.value, str(e.channels),
                      format_time(e.time_s), format_time(e.latency_term_s), format_time(e.bandwidth_term_s),
                      format_rate(algbw) if e.time_s else "-", format_rate(busbw) if e.time_s else "-")
    console.print(table)


def print_topologies(gpus: int, entries: list[dict[str, Any]]) -> None:
    """Rich table: every topology kind, its description and the algorithms valid on it per collective."""
    table = Table(title=f"Topologies and their algorithms (N = {gpus})", show_lines=True)
    table.add_column("topology")
    table.add_column("description")
    table.add_column("algorithms per collective")
    for entry in entries:
        lines = "\n".join(f"{name}: {', '.join(algs)}" for name, algs in entry["algorithms"].items())
        table.add_row(entry["kind"], entry["description"], lines)
    console.print(table)
