"""Text views of ``distcalc bench``: collectives (median and p99 time, algbw, busbw per size), training (the
counted bytes, calls, parameters, step time and peak memory beside distcalc's prediction) and GEMM throughput."""

from __future__ import annotations

from typing import Any, Optional

from rich.table import Table

from distcalc.render.console import console
from distcalc.units import format_rate, format_size, format_time


def print_bench_collectives(payload: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """One row per measured collective, tier and size."""
    table = Table(title=f"{payload['backend']} · {payload['world_size']} ranks · {payload['hardware']['cpu']}")
    for column in ("collective", "tier", "size", "time (median)", "p99", "algbw", "busbw"):
        table.add_column(column, justify="left" if column in ("collective", "tier") else "right")
    for row in rows:
        table.add_row(row["collective"], row["tier"], format_size(row["size_bytes"]), format_time(row["time_s"]),
                      format_time(row["p99_time_s"]), format_rate(row["algbw_bytes_per_s"]),
                      format_rate(row["busbw_bytes_per_s"]))
    console.print(table)


def print_bench_gemm(rows: list[dict[str, Any]], device: str, dtype: str) -> None:
    """One row per GEMM shape and token count: time and throughput."""
    table = Table(title=f"GEMM throughput · {device} · {dtype}")
    for column in ("gemm", "T", "m×n×k", "time", "throughput"):
        table.add_column(column, justify="left" if column == "gemm" else "right")
    for row in rows:
        table.add_row(row["name"], str(row["tokens"]), f"{row['m']}×{row['n']}×{row['k']}",
                      format_time(row["time_s"]), f"{row['flops_per_s'] / 1e9:.1f} GFLOP/s")
    console.print(table)


def print_bench_training(c: dict[str, Any], path: Optional[str]) -> None:
    """Measured vs predicted bytes, calls, parameters, step time and peak memory; match or mismatch."""
    table = Table(title=f"bench training --mode {c['mode']} · {c['world_size']} ranks")
    for column in ("quantity", "measured", "distcalc"):
        table.add_column(column, justify="left" if column == "quantity" else "right")
    table.add_row("bytes (Σ ranks, NCCL M)", f"{c['counted_bytes']:,}", f"{c['predicted_bytes']:,}")
    table.add_row("calls per rank", str(c["counted_calls_per_rank"]), str(c["predicted_calls_per_rank"]))
    table.add_row("parameters per rank", str(c["parameters_per_rank"][0]), str(c["predicted_parameters_per_rank"]))
    predicted_time = c.get("predicted_step_time_s")
    table.add_row("step time", format_time(c["step_time_s"]), format_time(predicted_time) if predicted_time else "—")
    predicted_memory = c.get("predicted_memory_bytes")
    table.add_row("peak memory", format_size(c["peak_memory_bytes"]),
                  format_size(predicted_memory) if predicted_memory else "—")
    console.print(table)
    console.print(("counted == predicted" if c["match"] else "[red]MISMATCH[/red]") + (f"; wrote {path}" if path else ""))
