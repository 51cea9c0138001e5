"""Text view of ``distcalc search``: the job and counts lines, the top distinct configurations, the Pareto fronts
(step time vs memory per GPU, and vs GPU count when several counts were searched) and the smallest cluster."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from distcalc.jobs.search import with_ends
from distcalc.render.console import console
from distcalc.search import SearchResult
from distcalc.search.distinct import USEFUL_SLOWDOWN, distinct_top, useful_front
from distcalc.units import format_size, format_time


MAX_FRONT_ROWS = 12


def _config_label(row: dict[str, Any]) -> str:
    """``TP2 PP4 DP8 mb1 ZeRO-1 …``: one configuration in a table cell."""
    parts = [f"TP{row['tp']}", f"PP{row['pp']}", f"DP{row['dp']}"]
    parts += [f"{k.upper()}{row[k]}" for k in ("cp", "ep") if row[k] > 1]
    if row["vpp"] > 1:
        parts.append(f"vpp{row['vpp']}")
    parts.append(f"mb{row['micro_batch']}")
    if row["zero"]:
        parts.append(f"ZeRO-{row['zero']}")
    if row["recompute"] != "none":
        parts.append(f"rc:{row['recompute']}")
    if row["sequence_parallel"]:
        parts.append("SP")
    if row["pp"] > 1:
        parts.append(row["schedule"])
    if row.get("account_for_embedding_and_loss"):
        parts.append("emb/loss split")
    if row.get("first_stage_layers") or row.get("last_stage_layers"):
        parts.append(f"first/last {row.get('first_stage_layers') or '-'}/{row.get('last_stage_layers') or '-'}")
    return " ".join(parts)


def _spread(rows: list, limit: int) -> list:
    """At most ``limit`` rows, evenly spaced, first and last kept."""
    if len(rows) <= limit:
        return rows
    picks = sorted({round(i * (len(rows) - 1) / (limit - 1)) for i in range(limit)})
    return [rows[i] for i in picks]


def _rows_table(title: str, rows: list[dict[str, Any]], gpu_memory_bytes: int) -> Table:
    """Rich table of configuration rows (an ``+equivalent`` column when rows carry one)."""
    table = Table(title=title)
    same = any("equivalent" in row for row in rows)
    for name, justify in (("#", "right"), ("GPUs", "right"), ("configuration", "left"), ("step time", "right"),
                          ("MFU", "right"), ("memory/GPU", "right"), ("headroom", "right")):
        table.add_column(name, justify=justify)
    if same:
        table.add_column("+equivalent", justify="right")
    for i, row in enumerate(rows, 1):
        cells = [str(i), str(row["gpus"]), _config_label(row), format_time(row["step_time_s"]),
                 f"{100 * row['mfu']:.1f}%", format_size(row["memory_bytes"]),
                 f"{100 * row['headroom']:.1f}% ({format_size(gpu_memory_bytes - row['memory_bytes'])})"]
        table.add_row(*cells, *([str(row.get("equivalent", 0))] if same else []))
    return table


def search_oom_line(result: SearchResult) -> str:
    """The first line when no configuration fits."""
    return (f"[red bold]does not fit:[/red bold] no configuration of {result.model} fits in "
            f"{format_size(result.gpu_memory_bytes)} per GPU with {100 * result.headroom:g}% headroom on "
            f"{', '.join(str(c.gpus) for c in result.counts)} GPUs (more GPUs, a smaller batch or sequence; "
            "--allow-oom exits 0)")


def print_search_result(result: SearchResult, top: int, ends: tuple[int, int] = (0, 0)) -> None:
    """Every line and table of the text view after the header lines."""
    rejections = result.rejections()
    console.print(f"[bold]{result.model}[/bold] ({result.parameters / 1e9:.1f}B) on {result.cluster}, "
                  f"GPUs {', '.join(str(c.gpus) for c in result.counts)}, global batch {result.global_batch}, "
                  f"seq {result.seq_len}, headroom {100 * result.headroom:g}%")
    console.print(f"combinations {result.universe:,}: evaluated {result.evaluated:,} valid, "
                  f"feasible {result.feasible:,}; rejected " + ", ".join(
                      f"{k} {v:,}" for k, v in rejections.by_reason.items())
                  + f"; equivalent duplicates skipped {rejections.equivalent:,}; {result.wall_time_s:.3f} s")
    if not result.feasible:
        console.print("[red]no configuration fits in memory with this headroom[/red]")
        return
    distinct, collapsed = distinct_top(result, top)
    console.print(_rows_table(f"top {top} distinct configurations by step time ({collapsed} equivalent ones "
                              "collapsed: same step time and memory)", with_ends(distinct, ends),
                              result.gpu_memory_bytes))
    front, slow = useful_front(with_ends(result.pareto_memory(), ends))
    shown = _spread(front, MAX_FRONT_ROWS)
    notes = []
    if slow:
        notes.append(f"{slow} points slower than {USEFUL_SLOWDOWN:g}× the fastest left out")
    if len(shown) < len(front):
        notes.append(f"{len(shown)} of {len(front)} points")
    note = f" ({'; '.join(notes)}; all with --json)" if notes else ""
    console.print(_rows_table(f"Pareto front: step time vs memory per GPU{note}", shown, result.gpu_memory_bytes))
    if len(result.counts) > 1:
        console.print(_rows_table("Pareto front: step time vs GPU count", with_ends(result.pareto_gpus(), ends),
                                  result.gpu_memory_bytes))
    if result.min_gpus is not None:
        console.print(f"[bold]smallest cluster meeting the target: {result.min_gpus} GPUs[/bold]")
