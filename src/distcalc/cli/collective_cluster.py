"""``collective --algorithm nccl``: the table (rendering only). The cluster topology and NCCL's estimates are
computed in :mod:`distcalc.jobs.collective` and :mod:`distcalc.jobs.nccl` (shared with the web API); their
names are re-exported here for the callers that import them from this module."""

from __future__ import annotations

from rich.table import Table

from distcalc.cli.common import console
from distcalc.cluster import ClusterSpec
from distcalc.collective.busbw import algbw_busbw
from distcalc.collective.nccl_tuner import NcclEstimate
from distcalc.jobs.collective import cluster_topology, load_cli_cluster
from distcalc.jobs.nccl import nccl_estimates, nccl_payload, nccl_record, parse_nccl_lists
from distcalc.units import format_rate, format_size, format_time

__all__ = ["cluster_topology", "load_cli_cluster", "nccl_estimates", "nccl_payload", "nccl_record",
           "parse_nccl_lists", "render_nccl"]


def render_nccl(kind: str, estimates: list[NcclEstimate], cluster: ClusterSpec, gpus: int) -> None:
    """Rich table: size, NCCL's algorithm, protocol, channels, time and its terms, algbw, busbw."""
    version = estimates[0].version.value
    table = Table(title=f"{kind} on {gpus} GPUs of {cluster.name}: NCCL {version} (its tuner's choice; NVLS "
                  "all-reduce timed as its kernel runs)")
    for column in ("size", "algorithm", "protocol", "channels", "time", "latency term", "bandwidth term",
                   "algbw", "busbw"):
        table.add_column(column, justify="left" if column in ("algorithm", "protocol") else "right")
    for e in estimates:
        algbw, busbw = algbw_busbw(kind, e.size_bytes, e.time_s, gpus)
        table.add_row(format_size(e.size_bytes), e.algorithm.value, e.protocol.value, str(e.channels),
                      format_time(e.time_s), format_time(e.latency_term_s), format_time(e.bandwidth_term_s),
                      format_rate(algbw) if e.time_s else "-", format_rate(busbw) if e.time_s else "-")
    console.print(table)
