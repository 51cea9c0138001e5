"""``distcalc search``: rank every parallel configuration of a training job (top-K, CSV, Pareto, min GPUs)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from distcalc.calibration import load_calibration
from distcalc.cli.checks import MAX_GPU_COUNTS, check_float, check_gpu_counts, check_ranges, training_rules
from distcalc.cli.common import console, emit_json, handle_errors
from distcalc.cluster import load_cluster
from distcalc.errors import ConfigError
from distcalc.model import load_model
from distcalc.outputs import CSV_SUFFIXES, check_output_path
from distcalc.search import SearchResult, SpaceChoices, min_gpus_candidates, parse_gpu_counts, search
from distcalc.search.counts import GPUS_HELP
from distcalc.search.space import COLUMNS, RECOMPUTE_CHOICES, SCHEDULE_CHOICES, ZERO_CHOICES
from distcalc.units import format_size, format_time, parse_size, parse_time
from distcalc.variability import DEFAULT_GPU_SPEED_CV

MAX_FRONT_ROWS = 12
CSV_COLUMNS = ("gpus", *COLUMNS, "step_time_s", "mfu", "memory_bytes", "headroom")


def _choice_list(text: str | None, valid: tuple, option: str, convert=str) -> tuple:
    """``"a,b"`` → (a, b), every item one of ``valid``; None → every valid value."""
    if text is None:
        return valid
    items = []
    for part in str(text).split(","):
        try:
            item = convert(part.strip())
        except ValueError:
            item = None
        if item not in valid:
            shown = ", ".join(str(v) for v in valid)
            raise ConfigError(f"invalid {option} {part.strip()!r}: valid values are {shown} (comma-separated)")
        items.append(item)
    return tuple(dict.fromkeys(items))


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


def payload(result: SearchResult, top: int) -> dict[str, Any]:
    """The ``--json`` object (design.md §4 keys ``evaluated``, ``feasible``, ``results`` plus accounting)."""
    metric_keys = ("step_time_s", "mfu", "memory_bytes", "headroom")
    keep = ("gpus", *COLUMNS, *metric_keys)
    rejections = result.rejections()
    return {
        "model": {"name": result.model, "parameters": result.parameters},
        "cluster": result.cluster,
        "gpus": [c.gpus for c in result.counts],
        "global_batch": result.global_batch,
        "seq_len": result.seq_len,
        "headroom": result.headroom,
        "gpu_memory_bytes": result.gpu_memory_bytes,
        "universe": result.universe,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "rejected": rejections.by_reason,
        "rejected_rules": rejections.rules,
        "equivalent_skipped": rejections.equivalent,
        "wall_time_s": result.wall_time_s,
        "results": [{k: r[k] for k in keep} for r in result.top(top)],
        "pareto": [{k: r[k] for k in keep} for r in result.pareto_memory()],
        "pareto_gpus": [{k: r[k] for k in keep} for r in result.pareto_gpus()] if len(result.counts) > 1 else [],
        "per_gpus": [{"gpus": c.gpus, "universe": c.universe, "evaluated": c.valid, "feasible": c.feasible}
                     for c in result.counts],
        "min_gpus": result.min_gpus,
        "targets": result.targets,
    }


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
        schedule: Annotated[Optional[str], typer.Option(help="schedules, e.g. 1f1b,interleaved")] = None,
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
        # below 1 the search names the field itself (global_batch / seq_len); here: the upper ends
        check_ranges([*training_rules(global_batch=max(global_batch, 1), seq_len=max(seq_len, 1)),
                      ("--top", top, 1, 1_000_000)])
        check_float(headroom, "--headroom", 0.0, 0.99)
        if output is not None:
            check_output_path(output, "--output", CSV_SUFFIXES)
        spec = load_model(model)
        cluster_spec = load_cluster(cluster, gpu=gpu)
        calibration_data = load_calibration(calibration) if calibration is not None else None
        counts = check_gpu_counts(parse_gpu_counts(gpus), "--gpus")
        if min_gpus and len(counts) == 1:
            counts = check_gpu_counts(min_gpus_candidates(counts[0], cluster_spec.gpus_per_node),
                                      f"--min-gpus below --gpus {counts[0]}")
        choices = SpaceChoices(
            zero=_choice_list(zero, ZERO_CHOICES, "--zero", int),
            recompute=_choice_list(recompute, RECOMPUTE_CHOICES, "--recompute"),
            schedule=_choice_list(schedule, SCHEDULE_CHOICES, "--schedule"),
        )
        result = search(
            spec, cluster_spec, counts, global_batch=global_batch, seq_len=seq_len, headroom=headroom,
            choices=choices, min_gpus=min_gpus,
            target_step_time_s=None if target_step_time is None else parse_time(target_step_time, allow_zero=False),
            target_memory_bytes=None if target_memory is None else parse_size(target_memory),
            calibration=calibration_data, gpu_speed_cv=gpu_speed_cv,
        )
        written = write_csv(result, output) if output is not None else None
        if json_output:
            data = payload(result, top)
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
