"""``distcalc search``: rank every parallel configuration of a training job (top-K, CSV, Pareto, min GPUs)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from distcalc.cli.common import (
    EXIT_CODES_HELP, AllowOomOption, CalibrationOption, ClusterOption, ConfigOption, GpuOption, GpuSpeedCvOption,
    console, emit_json, exit_if_oom, handle_errors, print_line, request_values, setting_origins, settings_line,
)
from distcalc.cli.config_options import FirstStageOption, LastStageOption, config_option
from distcalc.cli.style import PanelCommand
from distcalc.jobs.search import SearchRequest, batch_of, run_search, search_payload, with_ends
from distcalc.run_file import DEFAULTS
from distcalc.cli.checks import MAX_GPU_COUNTS, MAX_GPUS, check_float, check_ranges, training_rules
from distcalc.outputs import CSV_SUFFIXES, PLOT_SUFFIXES, check_output_path
from distcalc.search import SearchResult
from distcalc.search.counts import GPUS_HELP
from distcalc.search.distinct import USEFUL_SLOWDOWN, distinct_top, useful_front
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
    if row.get("first_stage_layers") or row.get("last_stage_layers"):
        parts.append(f"first/last {row.get('first_stage_layers') or '-'}/{row.get('last_stage_layers') or '-'}")
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


def _oom_line(result: SearchResult) -> str:
    return (f"[red bold]does not fit:[/red bold] no configuration of {result.model} fits in "
            f"{format_size(result.gpu_memory_bytes)} per GPU with {100 * result.headroom:g}% headroom on "
            f"{', '.join(str(c.gpus) for c in result.counts)} GPUs (more GPUs, a smaller batch or sequence; "
            "--allow-oom exits 0)")


def _render(result: SearchResult, top: int, ends: tuple[int, int] = (0, 0)) -> None:
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


M, P, B, S, X, Q = "model", "parallelism", "batch", "schedule", "output", "search"


def register(app: typer.Typer) -> None:
    """Add the ``search`` command."""

    @app.command("search", cls=PanelCommand, epilog=EXIT_CODES_HELP.replace(
        "does not fit in GPU memory", "no configuration fits in GPU memory"))
    @handle_errors
    def search_command(
        ctx: typer.Context,
        model: Annotated[str, typer.Option(rich_help_panel=M, help="model preset, config.json / YAML path, or a "
                                           "Hugging Face repo id in the local cache")] = DEFAULTS.model,
        cluster: ClusterOption = None,
        gpu: GpuOption = None,
        gpus: Annotated[str, typer.Option(rich_help_panel=P, help=GPUS_HELP)] = str(DEFAULTS.gpus),
        global_batch: Annotated[Optional[int], config_option(
            "global_batch", B, default="one per GPU of the largest --gpus")] = None,
        seq_len: Annotated[int, config_option("seq_len", B)] = DEFAULTS.seq_len,
        top: Annotated[int, typer.Option(min=1, rich_help_panel=X, help="distinct configurations shown and "
                                         "returned")] = 10,
        headroom: Annotated[float, typer.Option(rich_help_panel=Q, help="fraction of GPU memory left free "
                                                "(0-1)")] = 0.05,
        min_gpus: Annotated[bool, typer.Option("--min-gpus", rich_help_panel=Q,
                                               help="find the fewest GPUs meeting the targets")] = False,
        target_step_time: Annotated[Optional[str], typer.Option(rich_help_panel=Q, help="--min-gpus target "
                                                                "step time, e.g. 20s")] = None,
        target_memory: Annotated[Optional[str], typer.Option(rich_help_panel=Q, help="--min-gpus memory target "
                                                             "per GPU (bytes), e.g. 60GiB")] = None,
        zero: Annotated[Optional[str], typer.Option(rich_help_panel=Q, help="ZeRO stages to search, e.g. 0,1 "
                                                    "[default: all]")] = None,
        recompute: Annotated[Optional[str], typer.Option(rich_help_panel=S, help="recompute modes, e.g. "
                                                         "selective,full [default: all]")] = None,
        schedule: Annotated[Optional[str], typer.Option(rich_help_panel=S, help=(
            "schedules, e.g. 1f1b,interleaved [default: gpipe, 1f1b, interleaved, zero-bubble and the executed "
            "zb-h2, zb-v, dualpipe, dualpipev (plans up to 20,000 passes); also zb-h1, zb-2p]"))] = None,
        first_stage_layers: FirstStageOption = None,
        last_stage_layers: LastStageOption = None,
        output: Annotated[Optional[Path], typer.Option(rich_help_panel=X, help="write every feasible "
                                                       "configuration (CSV)")] = None,
        gpu_speed_cv: GpuSpeedCvOption = DEFAULT_GPU_SPEED_CV,
        json_output: Annotated[bool, typer.Option("--json", rich_help_panel=X, help="print one JSON object")] = False,
        plot: Annotated[Optional[Path], typer.Option(rich_help_panel=X, help="write step time vs memory per GPU "
                                                     "of every feasible configuration, coloured by layout "
                                                     "(PNG)")] = None,
        calibration: CalibrationOption = None,
        allow_oom: AllowOomOption = False,
        config: ConfigOption = None,
    ) -> None:
        """Search tp, pp, dp, cp, ep, vpp, micro-batch, ZeRO, recompute, SP and schedule; rank by step time."""
        values, origins = request_values(ctx, config)
        request = SearchRequest(**{k: v for k, v in values.items() if k in SearchRequest.model_fields})
        check_ranges([*training_rules(global_batch=request.global_batch, seq_len=request.seq_len),
                      ("--top", request.top, 1, 1_000_000)], upper_only=True)
        check_float(request.headroom, "--headroom", 0.0, 0.99)
        calibration = Path(values["calibration"]) if values["calibration"] is not None else None
        output = Path(values["output"]) if values["output"] is not None else None
        plot = Path(values["plot"]) if values["plot"] is not None else None
        if output is not None:
            check_output_path(output, "--output", CSV_SUFFIXES)
        if plot is not None:
            check_output_path(plot, "--plot", PLOT_SUFFIXES)
        run = run_search(request, allow_files=True, calibration=calibration, max_counts=MAX_GPU_COUNTS,
                         max_gpus=MAX_GPUS)
        result, hardware, ends = run.result, run.hardware, request.ends
        header = setting_origins({"model": request.model, "gpus": request.gpus, "seq_len": request.seq_len,
                                  "global_batch": batch_of(request)}, origins)
        if request.global_batch is None:
            header["global_batch"]["origin"] = "one per GPU"
        written = write_csv(result, output) if output is not None else None
        if plot is not None:
            from distcalc.render.plots.search import plot_search

            plot_search(result, plot)
        if values["json_output"]:
            data = search_payload(run, request.top, ends)
            data["settings"] = header
            if calibration is not None:
                data["calibration"] = str(calibration)
            if output is not None:
                data["output"] = {"path": str(output), "rows": written}
            if plot is not None:
                data["plot"] = str(plot)
            emit_json(data)
            exit_if_oom(result.feasible > 0, values["allow_oom"])
            return
        if not result.feasible:
            print_line(_oom_line(result))
        print_line(hardware.headline())
        print_line(settings_line(header))
        _render(result, request.top, ends)
        if calibration is not None:
            console.print(f"[dim]step times use the calibration {calibration} (measured α/B, GEMM efficiency)[/dim]")
        if output is not None:
            console.print(f"{written:,} feasible configurations written to {output}")
        if plot is not None:
            console.print(f"plot written to {plot}")
        exit_if_oom(result.feasible > 0, values["allow_oom"])
