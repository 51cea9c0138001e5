"""Text view of ``distcalc memory``: the configuration line, the model-state bytes per parameter, the per-stage
table (every stage, or the first two, the worst and the last two when there are more than eight) and the
verdict against the GPU's memory."""

from __future__ import annotations

from rich.table import Table

from distcalc.memory import MemoryReport
from distcalc.render.console import console
from distcalc.render.memory_lines import stage_lines
from distcalc.units import format_size


MAX_STAGE_COLUMNS = 8


def _stage_columns(report: MemoryReport) -> list[int]:
    """Indices of the stages shown: all up to :data:`MAX_STAGE_COLUMNS`, else the first two, the worst
    and the last two."""
    count = len(report.stages)
    if count <= MAX_STAGE_COLUMNS:
        return list(range(count))
    return sorted({0, 1, report.worst_stage, count - 2, count - 1})


def print_memory_report(report: MemoryReport) -> None:
    """Every line and table of the text view after the header lines."""
    cfg, per_param = report.config, report.bytes_per_parameter
    console.print(f"[bold]{report.model_name}[/bold]: {report.parameters / 1e9:.2f}B parameters; "
                  f"gpus={cfg.world_size} tp={cfg.tp} pp={cfg.pp} dp={cfg.data_parallel} cp={cfg.cp} ep={cfg.ep} "
                  f"vpp={cfg.vpp} zero={cfg.zero_stage} sp={'on' if cfg.sequence_parallel else 'off'} "
                  f"recompute={cfg.recompute.value} schedule={cfg.resolved_schedule.value} "
                  f"micro_batch={cfg.micro_batch} m={cfg.num_micro_batches} seq_len={cfg.seq_len} "
                  f"dtype={cfg.dtype.value} flash={'on' if cfg.flash_attention else 'off'}"
                  + (" embedding/loss in pipeline split" if cfg.account_for_embedding_and_loss and cfg.pp > 1 else "")
                  + (f" first/last stage layers {cfg.first_stage_layers or '-'}/{cfg.last_stage_layers or '-'}"
                     if cfg.first_stage_layers or cfg.last_stage_layers else ""))
    s = report.sharding
    console.print(f"model states ({report.options.recipe.value}): weights {per_param['weights']:g} B/param "
                  f"/ {s['weights_divisor']:g}, gradients {per_param['gradients']:g} / {s['gradients_divisor']:g}, "
                  f"optimizer {per_param['optimizer']:g} / {s['optimizer_divisor']:g} "
                  f"(= {per_param['total']:g} B/param before sharding)")
    columns = _stage_columns(report)
    table = Table(title="memory per GPU (GiB = 2^30 B)")
    table.add_column("line", no_wrap=True)
    for index in columns:
        marker = " (worst)" if index == report.worst_stage else ""
        table.add_column(f"stage {index}{marker}", justify="right")
    stages = [report.stages[i] for i in columns]
    table.add_row("layers", *[str(st.layers) for st in stages])
    table.add_row("in-flight micro-batches", *[f"{st.in_flight_micro_batches:g}" for st in stages])
    for label, values in stage_lines(stages):
        table.add_row(label, *[format_size(v) for v in values])
    table.add_row("[bold]total[/bold]", *[f"[bold]{format_size(st.total_bytes)}[/bold]" for st in stages])
    console.print(table)
    worst = report.worst
    console.print(f"activations per layer (one micro-batch): {format_size(worst.activations_per_layer_bytes)}")
    if report.gpu is None:
        console.print(f"worst stage {report.worst_stage}: {format_size(report.total_bytes)} per GPU")
        return
    verdict = "[green]fits[/green]" if report.fits else "[red]does not fit[/red]"
    console.print(f"worst stage {report.worst_stage}: {format_size(report.total_bytes)} of "
                  f"{format_size(report.gpu.memory_bytes)} on {report.gpu.name} -> {verdict}")


def memory_oom_line(report: MemoryReport) -> str:
    """The first line when the worst stage does not fit: how much it needs of how much."""
    gpu = report.gpu
    return (f"[red bold]does not fit:[/red bold] worst stage {report.worst_stage} needs "
            f"{format_size(report.total_bytes)} per GPU, {gpu.name} has {format_size(gpu.memory_bytes)} "
            f"({report.total_bytes / gpu.memory_bytes:.2f}×); more model parallelism, ZeRO or recomputation "
            "(distcalc search), or --allow-oom to exit 0")
