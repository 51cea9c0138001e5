"""``distcalc analyze``: step time, MFU/HFU and where the time goes, for a model on a cluster preset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from distcalc.analyze import ContextParallelAlgorithm, StepReport
from distcalc.analyze.fsdp import OVERLAP_COMPUTE_SLOWDOWN
from distcalc.cli.checks import MAX_TOKENS, check_float, check_ranges, training_rules
from distcalc.cli.common import console, emit_report, handle_errors
from distcalc.jobs.analyze import AnalyzeRequest, request_from_yaml, run_analyze
from distcalc.outputs import PLOT_SUFFIXES, check_output_path
from distcalc.parallel import Precision, Recompute, Schedule
from distcalc.units import format_rate, format_size, format_time
from distcalc.variability import DEFAULT_GPU_SPEED_CV

BREAKDOWN_LABELS = {
    "compute_s": "compute (GEMMs, attention, elementwise)", "recompute_s": "recomputation",
    "tp_exposed_s": "TP collectives (exposed)", "cp_exposed_s": "CP exchange (exposed)",
    "ep_exposed_s": "EP all-to-all (exposed)", "pp_p2p_s": "PP send/recv", "bubble_s": "pipeline bubble",
    "dp_exposed_s": "DP collectives (exposed)", "embedding_sync_s": "tied-embedding sync",
    "optimizer_s": "optimizer step",
}


def _render(report: StepReport, example: bool) -> None:
    c, cl = report.config, report.cluster
    if example:
        console.print("[dim]built-in example (distcalc analyze --help lists the options)[/dim]")
    console.print(f"[bold]{report.model['name']}[/bold] ({report.model['parameters'] / 1e9:.1f}B parameters) on "
                  f"{cl['gpus']}× {cl['gpu']} ({cl['name']}, {cl['nodes']} nodes of {cl['gpus_per_node']})")
    console.print(f"tp={c['tp']} pp={c['pp']} dp={c['dp']} cp={c['cp']} ep={c['ep']} vpp={c['vpp']} zero={c['zero']}"
                  f"{' dist-opt' if c['distributed_optimizer'] else ''} sp={'on' if c['sequence_parallel'] else 'off'} "
                  f"recompute={c['recompute']} schedule={report.pipeline['schedule']} micro_batch={c['micro_batch']} "
                  f"global_batch={c['global_batch']} (m={report.pipeline['micro_batches']}) seq_len={c['seq_len']} "
                  f"dtype={c['dtype']} flash={'on' if c['flash_attention'] else 'off'}"
                  f"{' embedding+loss-in-pipeline-split' if c.get('account_for_embedding_and_loss') else ''}")
    console.print(f"[bold]step {format_time(report.step_time_s)}[/bold]  MFU {100 * report.mfu:.1f} %  "
                  f"HFU {100 * report.hfu:.1f} %  {report.tokens_per_s:,.0f} tokens/s"
                  + (f"  time to train {report.tokens_budget:.3g} tokens: {report.time_to_train_s / 86400:.2f} days"
                     if report.time_to_train_s is not None else ""))
    table = Table(title="time breakdown per step (slowest pipeline stage)")
    table.add_column("component")
    table.add_column("time", justify="right")
    table.add_column("% of step", justify="right")
    for key, label in BREAKDOWN_LABELS.items():
        value = report.time_breakdown.get(key, 0.0)
        if value > 0:
            table.add_row(label, format_time(value), f"{100 * value / report.step_time_s:.1f}")
    table.add_row("[bold]step[/bold]", f"[bold]{format_time(report.step_time_s)}[/bold]", "100.0")
    console.print(table)
    var = report.gpu_variability
    if var.get("gpu_speed_cv", 0) > 0:
        console.print(f"[dim]compute paced by the slowest of {var['gpus']} GPUs: ×{var['slowest_gpu_factor']:.4f} "
                      f"(GPU speed σ {100 * var['gpu_speed_cv']:.2f} %, --gpu-speed-cv 0 for identical GPUs)[/dim]")
    nccl = any(str(row["algorithm"]).startswith("nccl ") for row in report.communication)
    comm = Table(title="communication per step (per GPU)" + (" [* calibrated α/B]" if report.calibration else "")
                 + (" [collectives: NCCL tuning model]" if nccl else ""))
    for name, justify in (("dim", "left"), ("collective", "left"), ("phase", "left"), ("message", "left"),
                          ("size", "right"), ("count", "right"), ("on link", "right"), ("exposed", "right"),
                          ("algorithm", "left"), ("topology", "left")):
        comm.add_column(name, justify=justify)
    for row in report.communication:
        mark = "*" if row.get("calibrated") else ""
        comm.add_row(row["dim"], row["collective"], row["phase"], row.get("note", ""), format_size(row["size_bytes"]),
                     f"{row['count']:g}", format_time(row["time_s"]) + mark, format_time(row["exposed_s"]) + mark,
                     row["algorithm"], row["topology"])
    console.print(comm)
    if report.overlaps:
        overlaps = Table(title="overlaps assumed (why a collective is or is not exposed)")
        for name, justify in (("dim", "left"), ("collectives", "left"), ("hidden behind", "left"),
                              ("because", "left"), ("exposed", "right")):
            overlaps.add_column(name, justify=justify)
        for row in report.overlaps:
            overlaps.add_row(row["dim"], row["collectives"], row["hidden_behind"], row["reason"],
                             format_time(row["exposed_s"]))
        console.print(overlaps)
    groups = Table(title="process groups on the cluster")
    for name in ("dim", "GPUs", "topology", "tier", "nodes", "B per GPU (η·B, or measured)"):
        groups.add_column(name)
    for dim, g in report.groups.items():
        if g["gpus"] > 1:
            bw = g.get("inter_bandwidth_bytes_per_s") or g.get("bandwidth_bytes_per_s")
            measured = f" (measured: {', '.join(g['calibrated'])})" if g.get("calibrated") else ""
            groups.add_row(dim, str(g["gpus"]), g["kind"], g["tier"], str(g.get("nodes", 1)), format_rate(bw) + measured)
    console.print(groups)
    if report.calibration:
        _render_calibration(report.calibration)
    mem = report.memory
    total = mem.get("total_bytes")
    if total is not None:
        fits = "[green]fits[/green]" if report.fits else "[red]does not fit[/red]"
        console.print(f"memory (worst stage): {format_size(total)} per GPU -> {fits}  (weights "
                      f"{format_size(mem.get('weights_bytes', 0))}, optimizer {format_size(mem.get('optimizer_bytes', 0))}, "
                      f"activations {format_size(mem.get('activations_bytes', 0))})")


def _render_calibration(cal: dict[str, Any]) -> None:
    """One line on what the calibration replaced (or left alone)."""
    fits = cal["collectives"]
    tiers = sorted({f["tier"] for f in fits})
    compute = cal["compute"]
    parts = []
    if fits:
        parts.append(f"{len(fits)} collective fits ({cal['backend']}, {cal['world_size']} ranks) replace α and η·B "
                     f"on the {'/'.join(tiers)} tier(s)")
    if compute and compute["applied"]:
        parts.append(f"GEMM efficiency fitted on {compute['device']}")
    elif compute:
        parts.append(f"GEMM fit made on {compute['device']!r} not applied (another device)")
    console.print(f"[dim]calibration {cal.get('file') or ', '.join(cal['sources'])}: {'; '.join(parts)}[/dim]")


def register(app: typer.Typer) -> None:
    """Add the ``analyze`` command."""

    @app.command("analyze")
    @handle_errors
    def analyze_command(
        ctx: typer.Context,
        model: Annotated[Optional[str], typer.Option(help="model preset or config.json/YAML path")] = None,
        cluster: Annotated[Optional[str], typer.Option(help="cluster preset (dgx-a100, dgx-h100, ...)")] = None,
        gpu: Annotated[Optional[str], typer.Option(help="GPU preset replacing the cluster's")] = None,
        gpus: Annotated[Optional[int], typer.Option(help="total GPUs")] = None,
        tp: Annotated[Optional[int], typer.Option(help="tensor-parallel degree (default 1)")] = None,
        pp: Annotated[Optional[int], typer.Option(help="pipeline-parallel degree (default 1)")] = None,
        dp: Annotated[Optional[int], typer.Option(help="data-parallel degree (default gpus/(tp·pp·cp))")] = None,
        cp: Annotated[Optional[int], typer.Option(help="context-parallel degree (default 1)")] = None,
        ep: Annotated[Optional[int], typer.Option(help="expert-parallel degree (default 1)")] = None,
        vpp: Annotated[Optional[int], typer.Option(help="interleaved chunks per pipeline stage")] = None,
        zero: Annotated[Optional[int], typer.Option(min=0, max=3, help="ZeRO stage 0-3")] = None,
        distributed_optimizer: Annotated[Optional[bool], typer.Option(help="Megatron distributed optimizer")] = None,
        sequence_parallel: Annotated[Optional[bool], typer.Option(help="Megatron sequence parallelism")] = None,
        recompute: Annotated[Optional[Recompute], typer.Option(help="activation recomputation")] = None,
        micro_batch: Annotated[Optional[int], typer.Option(help="sequences per micro-batch")] = None,
        global_batch: Annotated[Optional[int], typer.Option(help="sequences per step")] = None,
        seq_len: Annotated[Optional[int], typer.Option(help="tokens per sequence (default 4096)")] = None,
        schedule: Annotated[Optional[Schedule], typer.Option(help="pipeline schedule")] = None,
        dtype: Annotated[Precision, typer.Option(help="compute dtype")] = Precision.BF16,
        flash_attention: Annotated[bool, typer.Option(help="fused (flash) attention")] = True,
        account_for_embedding_and_loss: Annotated[bool, typer.Option(
            help="the embedding and the loss take a layer slot each in the pipeline split (first and last "
                 "stage hold one layer fewer; Megatron-Core, Llama 3)")] = False,
        gpus_per_node: Annotated[Optional[int], typer.Option(help="GPUs per node (overrides the cluster)")] = None,
        intra_bandwidth: Annotated[Optional[str], typer.Option(help="intra-node B per direction, e.g. 300GB/s")] = None,
        intra_latency: Annotated[Optional[str], typer.Option(help="intra-node α per step, e.g. 3us")] = None,
        inter_bandwidth: Annotated[Optional[str], typer.Option(help="per-NIC B per direction, e.g. 400Gbps")] = None,
        inter_latency: Annotated[Optional[str], typer.Option(help="inter-node α per step, e.g. 6us")] = None,
        order: Annotated[str, typer.Option(help="rank order, innermost first")] = "tp-cp-dp-pp",
        overlap_grad_reduce: Annotated[bool, typer.Option(help="overlap DP reduction with backward")] = True,
        tp_overlap: Annotated[float, typer.Option(help="hidden fraction of overlappable TP comm (0-1)")] = 0.0,
        cp_algorithm: Annotated[ContextParallelAlgorithm, typer.Option(help="ring or ulysses")] = ContextParallelAlgorithm.RING,
        gpu_speed_cv: Annotated[float, typer.Option(
            min=0.0, max=0.5, help="σ of per-GPU compute speed; the step waits for the slowest GPU (0: identical "
                                   "GPUs)")] = DEFAULT_GPU_SPEED_CV,
        overlap_slowdown: Annotated[float, typer.Option(
            min=0.0, max=0.99, help="compute slowdown while an overlapped DP/FSDP/CP collective runs beside it "
                                    "(0: free overlap)")] = OVERLAP_COMPUTE_SLOWDOWN,
        grad_reduce_bytes: Annotated[int, typer.Option(
            min=1, max=8, help="bytes per gradient element in DP/FSDP reduction (4: fp32, 2: bf16)")] = 4,
        tokens: Annotated[Optional[float], typer.Option(help="token budget for time-to-train, e.g. 15e12")] = None,
        json_output: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
        plot: Annotated[Optional[Path], typer.Option(help="write the breakdown + pipeline timeline (PNG)")] = None,
        calibration: Annotated[Optional[Path], typer.Option(
            "--calibration", help="calibration file from `distcalc calibrate`: measured α/B per collective and "
                                  "tier (replacing η·B) and GEMM efficiency")] = None,
        collective_model: Annotated[str, typer.Option(
            "--collective-model", help="alpha-beta (default) or nccl: price AllReduce/ReduceScatter/AllGather/"
                                       "Broadcast/Reduce with NCCL's tuning model per group (opt-in)")] = "alpha-beta",
        config: Annotated[Optional[Path], typer.Option(
            "--config", help="YAML of these options (underscores; e.g. exported by `distcalc serve`); options "
                             "given on the command line override it")] = None,
    ) -> None:
        """Predict the training step time, MFU and HFU, and show where the time goes."""
        check_ranges(training_rules(gpus=gpus, tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, vpp=vpp, gpus_per_node=gpus_per_node,
                                    micro_batch=micro_batch, global_batch=global_batch, seq_len=seq_len),
                     upper_only=True)
        check_float(tp_overlap, "--tp-overlap", 0.0, 1.0)
        check_float(tokens, "--tokens", 0.0, MAX_TOKENS, low_open=True)
        if plot is not None:
            check_output_path(plot, "--plot", PLOT_SUFFIXES)
        values = {k: v for k, v in locals().items() if k in AnalyzeRequest.model_fields}
        if config is not None:
            given = {k: v for k, v in values.items() if ctx.get_parameter_source(k).name != "DEFAULT"}
            values = {**request_from_yaml(config), **given}
        request = AnalyzeRequest(**values)
        report = run_analyze(request, allow_files=True, calibration=calibration)
        if plot is not None:
            from distcalc.plots_analyze import plot_analysis

            plot_analysis(report, plot)
        example = request.is_example()
        emit_report(report, json_output=json_output, plot=plot, render=lambda: _render(report, example))
