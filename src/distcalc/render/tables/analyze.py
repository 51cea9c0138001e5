"""Text view of ``distcalc analyze``: the configuration and step lines, the time breakdown, the communication
per step, the overlaps assumed, the process groups on the cluster, the calibration used and the memory line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

from distcalc.render.console import console
from distcalc.units import format_rate, format_size, format_time

if TYPE_CHECKING:  # the cost model is imported when the command runs
    from distcalc.analyze import StepReport


BREAKDOWN_LABELS = {
    "compute_s": "compute (GEMMs, attention, elementwise)", "recompute_s": "recomputation",
    "tp_exposed_s": "TP collectives (exposed)", "cp_exposed_s": "CP exchange (exposed)",
    "ep_exposed_s": "EP all-to-all (exposed)", "pp_p2p_s": "PP send/recv", "bubble_s": "pipeline bubble",
    "dp_exposed_s": "DP collectives (exposed)", "embedding_sync_s": "tied-embedding sync",
    "optimizer_s": "optimizer step",
}


def _flash(on: bool, options: dict) -> str:
    """``on`` / ``off``, with the attention kernel when it is not the GPU's default fused one."""
    kernel = options.get("attention_kernel", "fused")
    return ("on" + (f" ({kernel})" if kernel != "fused" else "")) if on else "off"


def print_step_report(report: StepReport, example: bool) -> None:
    """Every table and line of the text view after the header lines (``example``: the built-in example's note first)."""
    c, cl = report.config, report.cluster
    if example:
        console.print("[dim]built-in example (distcalc analyze --help lists the options)[/dim]")
    console.print(f"[bold]{report.model['name']}[/bold] ({report.model['parameters'] / 1e9:.1f}B parameters) on "
                  f"{cl['gpus']}× {cl['gpu']} ({cl['name']}, {cl['nodes']} nodes of {cl['gpus_per_node']})")
    console.print(f"tp={c['tp']} pp={c['pp']} dp={c['dp']} cp={c['cp']} ep={c['ep']} vpp={c['vpp']} zero={c['zero']}"
                  f"{' dist-opt' if c['distributed_optimizer'] else ''} sp={'on' if c['sequence_parallel'] else 'off'} "
                  f"recompute={c['recompute']} schedule={report.pipeline['schedule']} micro_batch={c['micro_batch']} "
                  f"global_batch={c['global_batch']} (m={report.pipeline['micro_batches']}) seq_len={c['seq_len']} "
                  f"dtype={c['dtype']} flash={_flash(c['flash_attention'], report.options)}"
                  + (f" loss={report.options['cross_entropy']}"
                     if report.options.get("cross_entropy", "unfused") != "unfused" else "")
                  + f"{' embedding+loss-in-pipeline-split' if c.get('account_for_embedding_and_loss') else ''}"
                  + (f" first/last stage layers {c.get('first_stage_layers') or '-'}/{c.get('last_stage_layers') or '-'}"
                     if c.get("first_stage_layers") or c.get("last_stage_layers") else ""))
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
                 + (" [collectives: NCCL model]" if nccl else ""))
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


def step_oom_line(report: StepReport, gpu_memory_bytes: float) -> str:
    """The first line when the worst stage does not fit: how much it needs of how much."""
    total = report.memory.get("total_bytes") or 0
    return (f"[red bold]does not fit:[/red bold] the worst pipeline stage needs {format_size(total)} per GPU, "
            f"{report.cluster['gpu']} has {format_size(gpu_memory_bytes)} ({total / gpu_memory_bytes:.2f}×); the "
            "step time below is for a run that cannot start (distcalc search finds one that fits; --allow-oom "
            "exits 0)")
