"""``distcalc calibrate``: fit α and B per collective and tier (and the GEMM efficiency curve) to bench
results or nccl-tests logs (rendering only; the fits live in :mod:`distcalc.calibration`)."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from distcalc.cli.bench_cmd import JsonOption
from distcalc.cli.common import console, emit_json, handle_errors
from distcalc.errors import BenchError
from distcalc.outputs import check_output_path
from distcalc.units import format_rate, format_size, format_time


def calibrate_command(
    files: Annotated[list[str], typer.Argument(help="bench result files (collectives and/or gemm) or nccl-tests "
                                                     "stdout logs (all_reduce_perf & co., any number of runs)")],
    output: Annotated[Optional[str], typer.Option(help="calibration file to write")] = "calibration.json",
    holdout: Annotated[bool, typer.Option(help="also fit on even sizes and check the odd ones")] = False,
    json_output: JsonOption = False,
    plot: Annotated[Optional[str], typer.Option(help="nccl-tests logs: write measured vs fitted (and, with "
                                                     "--cluster, NCCL-model) busbw vs size to this PNG")] = None,
    cluster: Annotated[Optional[str], typer.Option(help="with --plot: add NCCL's model on this cluster preset")] = None,
) -> None:
    """Fit α and B per collective and tier (and the GEMM efficiency curve) to bench results."""
    from distcalc.measurements import load_result_file
    from distcalc.calibration import calibrate, save_calibration
    from distcalc.calibration.collectives import group_rows, holdout_check
    from distcalc.calibration.nccl_tests import is_nccl_tests_output

    if output:
        from distcalc.outputs import JSON_SUFFIXES

        check_output_path(output, "--output", JSON_SUFFIXES)
    calibration = calibrate(files)
    written = str(save_calibration(calibration, output)) if output else None
    payload: dict[str, Any] = {"calibration_file": written, "fits": calibration.fits, "compute": calibration.compute}
    if holdout:
        payload["holdout"] = [
            {"collective": key[0], "tier": key[1], "points": holdout_check(rows)}
            for path in files if not is_nccl_tests_output(path)
            and (result := load_result_file(path)).theme == "collectives"
            for key, rows in group_rows(result.results).items()
        ]
    if plot:
        payload["plot_file"] = str(_plot_nccl_tests(calibration.fits, plot, cluster))
    if json_output:
        emit_json(payload)
        return
    _print_calibration(payload)
    if plot:
        console.print(f"plot written to {payload['plot_file']}")


def _plot_nccl_tests(fits: list[dict[str, Any]], path: str, cluster: Optional[str]) -> Any:
    """Measured and fitted busbw of every nccl-tests fit, plus NCCL's model on ``cluster`` when given, timed as
    nccl-tests times it with the run's ``-g`` (the host's launch floor, :mod:`distcalc.collective.nccl_launch`)."""
    from distcalc.cli.collective_cluster import load_cli_cluster, nccl_estimates
    from distcalc.collective.busbw import busbw_factor
    from distcalc.collective.nccl_cluster import nccl_system
    from distcalc.collective.nccl_launch import nccl_tests_period_s
    from distcalc.render.plots.collective import plot_busbw_overlay

    series: dict[str, tuple[list[float], list[float]]] = {}
    for index, fit in enumerate(f for f in fits if f.get("source") == "nccl-tests"):
        factor = busbw_factor(fit["collective"], fit["group_size"])
        sizes = [r["size_bytes"] for r in fit["residuals"]]
        tag = f"{fit['collective']} N={fit['group_size']} run {index + 1}"
        series[f"measured {tag}"] = (sizes, [s / r["measured_s"] * factor for s, r in zip(sizes, fit["residuals"])])
        series[f"fit {tag}"] = (sizes, [s / r["predicted_s"] * factor for s, r in zip(sizes, fit["residuals"])])
        if cluster:
            spec = load_cli_cluster(cluster, None, None, None, None).cluster
            estimates = nccl_estimates(fit["collective"], sizes, spec, fit["group_size"], "2.20.5", None, None, False)
            vendor = nccl_system(spec, fit["group_size"]).cpu_vendor
            times = [nccl_tests_period_s(e.time_s, int(fit.get("gpus_per_thread", 1)), vendor) for e in estimates]
            series[f"NCCL model {tag} ({cluster})"] = (sizes, [s / t * factor for s, t in zip(sizes, times)])
    if not series:
        raise BenchError("--plot draws nccl-tests fits: pass an nccl-tests log")
    return plot_busbw_overlay(series, path, title="nccl-tests busbw: measured, fitted" +
                              (f", NCCL model on {cluster}" if cluster else ""))


def _print_calibration(payload: dict[str, Any]) -> None:
    for fit in payload["fits"]:
        table = Table(title=(f"{fit['collective']} ({fit['tier']}, N={fit['group_size']}, {fit['algorithm']}): "
                             f"α = {format_time(fit['latency_s'])}, B = {format_rate(fit['bandwidth_bytes_per_s'])}, "
                             f"RMS error {fit['rms_relative_error']:.1%}"), caption=fit["decision"])
        for column in ("size", "measured", "fit", "residual", "spread (p99)"):
            table.add_column(column, justify="right")
        for r in fit["residuals"]:
            table.add_row(format_size(r["size_bytes"]), format_time(r["measured_s"]), format_time(r["predicted_s"]),
                          f"{r['relative_error']:+.1%}", f"{r['relative_spread']:.1%}")
        console.print(table)
    if payload.get("compute"):
        c = payload["compute"]
        p = c["parameters"]
        console.print(f"GEMM model ({c['device']}): η_core = {p['gemm_core_efficiency']:.3f}, "
                      f"η_mem = {p['memory_efficiency']:.3f}, t0 = {format_time(p['kernel_overhead_s'])}, "
                      f"RMS error {c['rms_relative_error']:.1%}")
    for block in payload.get("holdout", []):
        within = sum(p["within"] for p in block["points"])
        console.print(f"held-out {block['collective']} ({block['tier']}): {within}/{len(block['points'])} odd sizes "
                      "within max(own spread, 25%): " + ", ".join(f"{p['relative_error']:+.0%}" for p in block["points"]))
    if payload["calibration_file"]:
        console.print(f"wrote {payload['calibration_file']}")


def register(app: typer.Typer) -> None:
    """Add ``calibrate``."""
    app.command("calibrate")(handle_errors(calibrate_command))
