"""``distcalc calibrate``: fit α and B per collective and tier (and the GEMM efficiency curve) to bench
results or nccl-tests logs (options and calls; the fits live in :mod:`distcalc.calibration`, the text view in
:mod:`distcalc.render.tables.calibrate`)."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from distcalc.cli.common import JsonOption, console, emit_json, handle_errors
from distcalc.errors import BenchError
from distcalc.outputs import check_output_path
from distcalc.render.tables.calibrate import print_calibration


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
    print_calibration(payload)
    if plot:
        console.print(f"plot written to {payload['plot_file']}")


def _plot_nccl_tests(fits: list[dict[str, Any]], path: str, cluster: Optional[str]) -> Any:
    """Measured and fitted busbw of every nccl-tests fit, plus NCCL's model on ``cluster`` when given, timed as
    nccl-tests times it with the run's ``-g`` (the host's launch floor, :mod:`distcalc.collective.nccl_launch`)."""
    from distcalc.jobs.collective import load_cli_cluster
    from distcalc.jobs.nccl import nccl_estimates
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


def register(app: typer.Typer) -> None:
    """Add ``calibrate``."""
    app.command("calibrate")(handle_errors(calibrate_command))
