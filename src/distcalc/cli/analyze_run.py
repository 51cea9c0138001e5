"""What ``distcalc analyze`` does once its options are parsed: check them, run the job, print the report (text or
``--json``, and the figure). Loaded when the command runs (:func:`distcalc.cli.base.run_body`), so that
``distcalc analyze --help`` imports neither the step-time model nor the tables."""

from pathlib import Path
from typing import Optional

import typer

from distcalc.cli.checks import MAX_TOKENS, check_float, check_ranges, training_rules
from distcalc.cli.common import (emit_report, exit_if_oom, mark_derived_origins, print_line, request_values,
                                setting_origins, settings_line)
from distcalc.jobs.analyze import AnalyzeRequest, analyze_payload, run_analyze
from distcalc.outputs import PLOT_SUFFIXES, check_output_path
from distcalc.render.tables.analyze import print_step_report, step_oom_line
from distcalc.run_file import DEFAULTS


def run(ctx: typer.Context, config: Optional[Path]) -> None:
    """Run ``distcalc analyze`` with the options in ``ctx`` (and the run file ``config``)."""
    values, origins = request_values(ctx, config)
    request = AnalyzeRequest(**{k: v for k, v in values.items() if k in AnalyzeRequest.model_fields})
    r = request
    check_ranges(training_rules(gpus=r.gpus, tp=r.tp, pp=r.pp, dp=r.dp, cp=r.cp, ep=r.ep, vpp=r.vpp,
                                gpus_per_node=r.gpus_per_node, micro_batch=r.micro_batch,
                                global_batch=r.global_batch, seq_len=r.seq_len), upper_only=True)
    check_float(r.tp_overlap, "--tp-overlap", 0.0, 1.0)
    check_float(r.moe_capacity_factor, "--moe-capacity-factor", 0.01, 64.0)
    check_float(r.moe_load_imbalance, "--moe-load-imbalance", 1.0, 64.0)
    check_float(r.tokens, "--tokens", 0.0, MAX_TOKENS, low_open=True)
    plot = Path(values["plot"]) if values["plot"] is not None else None
    if plot is not None:
        check_output_path(plot, "--plot", PLOT_SUFFIXES)
    calibration_path = Path(values["calibration"]) if values["calibration"] is not None else None
    job = run_analyze(request, allow_files=True, calibration=calibration_path)
    report, hardware, example = job.report, job.hardware, job.example
    c = report.config
    header = setting_origins({"model": report.model["name"] if example else values["model"] or DEFAULTS.model,
                              "gpus": report.cluster["gpus"], "seq_len": c["seq_len"], "micro_batch": c["micro_batch"],
                              "global_batch": c["global_batch"]}, origins)
    if example:
        for entry in header.values():
            entry["origin"] = "built-in example"
    else:
        mark_derived_origins(header, job.gpus_origin, values["global_batch"])
    if plot is not None:
        from distcalc.render.plots.analyze import plot_analysis

        plot_analysis(report, plot)

    def render() -> None:
        if report.fits is False:
            print_line(step_oom_line(report, hardware.gpu.memory_bytes))
        print_line(hardware.headline(report.cluster["gpus"]))
        print_line(settings_line(header))
        print_step_report(report, example)

    emit_report(analyze_payload(job), json_output=values["json_output"], plot=plot, render=render,
                extra={"settings": header})
    exit_if_oom(report.fits, values["allow_oom"])
