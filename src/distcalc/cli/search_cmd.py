"""``distcalc search``: rank every parallel configuration of a training job (top-K, CSV, Pareto, min GPUs)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from distcalc.cli.checks import MAX_GPU_COUNTS, MAX_GPUS, check_float, check_ranges, training_rules
from distcalc.cli.common import console, emit_json, handle_errors
from distcalc.jobs.search import SearchRequest, run_search, search_payload
from distcalc.outputs import CSV_SUFFIXES, check_output_path
from distcalc.search import SearchResult
from distcalc.search.counts import GPUS_HELP
from distcalc.search.space import COLUMNS
from distcalc.units import format_size, format_time
from distcalc.variability import DEFAULT_GPU_SPEED_CV

MAX_FRONT_ROWS = 12
CSV_COLUMNS = ("gpus", *COLUMNS, "step_time_s", "mfu", "memory_bytes", "headroom")


def _config_label(row: dict[str, Any]) -> str:
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
    return " ".join(parts)


def write_csv(result: SearchResult, path: Path) -> int:
    """Every feasible configuration, fastest first; returns the number of rows written."""
    columns = result.columns()
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(zip(*(columns[name] for name in CSV_COLUMNS)))
    return len(columns["gpus"])


def _spread(rows: list, limit: int) -> list:
    """At most ``limit`` rows, evenly spaced, first and last kept."""
    if len(rows) <= limit:
        return rows
    picks = sorted({round(i * (len(rows) - 1) / (limit - 1)) for i in range(limit)})
    return [rows[i] for i in picks]


def _rows_table(title: str, rows: list[dict[str, Any]], gpu_memory_bytes: int) -> Table:
    table = Table(title=title)
    for name, justify in (("#", "right"), ("GPUs", "right"), ("configuration", "left"), ("step time", "right"),
                          ("MFU", "right"), ("memory/GPU", "right"), ("headroom", "right")):
        table.add_column(name, justify=justify)
    for i, row in enumerate(rows, 1):
        table.add_row(str(i), str(row["gpus"]), _config_label(row), format_time(row["step_time_s"]),
                      f"{100 * row['mfu']:.1f}%", format_size(row["memory_bytes"]),
                      f"{100 * row['headroom']:.1f}% ({format_size(gpu_memory_bytes - row['memory_bytes'])})")
    return table


def _render(result: SearchResult, top: int) -> None:
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
    console.print(_rows_table(f"top {top} by step time", result.top(top), result.gpu_memory_bytes))
    front = result.pareto_memory()
    shown = _spread(front, MAX_FRONT_ROWS)
    note = f" ({len(shown)} of {len(front)} points; all with --json)" if len(shown) < len(front) else ""
    console.print(_rows_table(f"Pareto front: step time vs memory per GPU{note}", shown, result.gpu_memory_bytes))
    if len(result.counts) > 1:
        console.print(_rows_table("Pareto front: step time vs GPU count", result.pareto_gpus(),
                                  result.gpu_memory_bytes))
    if result.min_gpus is not None:
        console.print(f"[bold]smallest cluster meeting the target: {result.min_gpus} GPUs[/bold]")


def register(app: typer.Typer) -> None:
    """Add the ``search`` command."""

    @app.command("search")
    @handle_errors
    def search_command(
        model: Annotated[str, typer.Option(help="model preset or path to config.json / YAML")] = "gpt3-175b",
        cluster: Annotated[str, typer.Option(help="cluster preset (dgx-a100, dgx-h100, ...)")] = "dgx-a100",
        gpus: Annotated[str, typer.Option(help=GPUS_HELP)] = "64",
        global_batch: Annotated[int, typer.Option(help="sequences per optimizer step")] = 64,
        seq_len: Annotated[int, typer.Option(help="tokens per sequence")] = 2048,
        top: Annotated[int, typer.Option(min=1, help="rows shown and returned")] = 10,
        headroom: Annotated[float, typer.Option(help="fraction of GPU memory left free")] = 0.05,
        min_gpus: Annotated[bool, typer.Option("--min-gpus", help="find the fewest GPUs meeting the targets")] = False,
        target_step_time: Annotated[Optional[str], typer.Option(help="--min-gpus target, e.g. 20s")] = None,
        target_memory: Annotated[Optional[str], typer.Option(help="--min-gpus memory target per GPU, e.g. 60GiB")] = None,
        zero: Annotated[Optional[str], typer.Option(help="ZeRO stages to search, e.g. 0,1 (default all)")] = None,
        recompute: Annotated[Optional[str], typer.Option(help="recompute modes, e.g. selective,full")] = None,
        schedule: Annotated[Optional[str], typer.Option(
            help="schedules, e.g. 1f1b,interleaved (default gpipe,1f1b,interleaved,zero-bubble; also zb-h1, "
                 "zb-h2, zb-v, dualpipe, dualpipev, executed)")] = None,
        gpu: Annotated[Optional[str], typer.Option(help="GPU preset overriding the cluster's")] = None,
        output: Annotated[Optional[Path], typer.Option(help="write every feasible configuration (CSV)")] = None,
        gpu_speed_cv: Annotated[float, typer.Option(
            min=0.0, max=0.5, help="σ of per-GPU compute speed; the step waits for the slowest GPU (0: identical "
                                   "GPUs)")] = DEFAULT_GPU_SPEED_CV,
        json_output: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
        calibration: Annotated[Optional[Path], typer.Option(
            "--calibration", help="calibration file from `distcalc calibrate` (measured α/B and GEMM efficiency)")] = None,
    ) -> None:
        """Search tp, pp, dp, cp, ep, vpp, micro-batch, ZeRO, recompute, SP and schedule; rank by step time."""
        check_ranges([*training_rules(global_batch=global_batch, seq_len=seq_len), ("--top", top, 1, 1_000_000)],
                     upper_only=True)
        check_float(headroom, "--headroom", 0.0, 0.99)
        if output is not None:
            check_output_path(output, "--output", CSV_SUFFIXES)
        request = SearchRequest(**{k: v for k, v in locals().items() if k in SearchRequest.model_fields})
        result = run_search(request, allow_files=True, calibration=calibration,
                            max_counts=MAX_GPU_COUNTS, max_gpus=MAX_GPUS)
        written = write_csv(result, output) if output is not None else None
        if json_output:
            data = search_payload(result, top)
            if calibration is not None:
                data["calibration"] = str(calibration)
            if output is not None:
                data["output"] = {"path": str(output), "rows": written}
            emit_json(data)
            return
        _render(result, top)
        if calibration is not None:
            console.print(f"[dim]step times use the calibration {calibration} (measured α/B, GEMM efficiency)[/dim]")
        if output is not None:
            console.print(f"{written:,} feasible configurations written to {output}")
