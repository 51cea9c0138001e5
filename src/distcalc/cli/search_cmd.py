"""``distcalc search``: rank every parallel configuration of a training job (top-K, CSV, Pareto, min GPUs)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated, Optional

import typer

from distcalc.cli.common import (
    EXIT_CODES_HELP, AllowOomOption, CalibrationOption, ClusterOption, ConfigOption, GpuOption, GpuSpeedCvOption,
    ModelOption, PanelJsonOption,
    console, emit_json, exit_if_oom, handle_errors, print_line, request_values, setting_origins, settings_line,
)
from distcalc.cli.config_options import FirstStageOption, LastStageOption, config_option
from distcalc.cli.style import PanelCommand
from distcalc.jobs.search import SearchRequest, batch_of, run_search, search_payload
from distcalc.run_file import DEFAULTS
from distcalc.cli.checks import MAX_GPU_COUNTS, MAX_GPUS, check_float, check_ranges, training_rules
from distcalc.outputs import CSV_SUFFIXES, PLOT_SUFFIXES, check_output_path
from distcalc.search import SearchResult
from distcalc.search.counts import GPUS_HELP
from distcalc.search.space import COLUMNS
from distcalc.gpu_speed_cv import DEFAULT_GPU_SPEED_CV
from distcalc.render.tables.search import print_search_result, search_oom_line

CSV_COLUMNS = ("gpus", *COLUMNS, "step_time_s", "mfu", "memory_bytes", "headroom")


def write_csv(result: SearchResult, path: Path) -> int:
    """Every feasible configuration, fastest first; returns the number of rows written."""
    columns = result.columns()
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(zip(*(columns[name] for name in CSV_COLUMNS)))
    return len(columns["gpus"])


M, P, B, S, X, Q = "model", "parallelism", "batch", "schedule", "output", "search"


def register(app: typer.Typer) -> None:
    """Add the ``search`` command."""

    @app.command("search", cls=PanelCommand, epilog=EXIT_CODES_HELP.replace(
        "does not fit in GPU memory", "no configuration fits in GPU memory"))
    @handle_errors
    def search_command(
        ctx: typer.Context,
        model: ModelOption = DEFAULTS.model,
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
        json_output: PanelJsonOption = False,
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
            print_line(search_oom_line(result))
        print_line(hardware.headline())
        print_line(settings_line(header))
        print_search_result(result, request.top, ends)
        if calibration is not None:
            console.print(f"[dim]step times use the calibration {calibration} (measured α/B, GEMM efficiency)[/dim]")
        if output is not None:
            console.print(f"{written:,} feasible configurations written to {output}")
        if plot is not None:
            console.print(f"plot written to {plot}")
        exit_if_oom(result.feasible > 0, values["allow_oom"])
