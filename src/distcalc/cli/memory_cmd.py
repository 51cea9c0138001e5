"""``distcalc memory``: per-GPU memory breakdown of a training configuration, stage by stage."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from distcalc.cli.common import (
    EXIT_CODES_HELP, AllowOomOption, ClusterOption, ConfigOption, GpuOption,
    console, emit_report, exit_if_oom, handle_errors, print_line, request_values, setting_origins, settings_line,
)
from distcalc.cli.config_options import with_config_options
from distcalc.cli.style import PanelCommand
from distcalc.jobs.memory import MemoryRequest, memory_payload, run_memory
from distcalc.cli.zero3_options import (DS_DEFAULTS, DsContiguousOption, DsMaxLiveOption, DsPersistenceOption,
                                        DsReduceBucketOption, DsReuseDistanceOption, FsdpShardSizeOption,
                                        Zero3ImplOption)
from distcalc.deepspeed_zero3 import Zero3Impl
from distcalc.memory import MemoryReport, Recipe
from distcalc.run_file import DEFAULTS
from distcalc.cli.checks import check_float, check_ranges, training_rules
from distcalc.outputs import PLOT_SUFFIXES, check_output_path
from distcalc.units import format_size

# Stacked-bar segments of the plot / rows of the table: (label, stage fields summed)
SEGMENTS = (
    ("weights", ("weights_bytes",)),
    ("gradients", ("gradients_bytes",)),
    ("optimizer", ("optimizer_bytes",)),
    ("layer activations", ("layer_activations_bytes",)),
    ("recompute workspace", ("recompute_workspace_bytes",)),
    ("embedding/output acts", ("embedding_activations_bytes", "output_activations_bytes")),
    ("loss workspace", ("loss_workspace_bytes",)),
    ("attention-score buffer", ("attention_buffer_bytes",)),  # shown when a stack has one
    ("buffers + CUDA context", ("communication_buffers_bytes", "cuda_context_bytes")),
    ("allocator reserve", ("allocator_reserve_bytes",)),
    ("optimizer-step buffers", ("optimizer_step_buffers_bytes",)),  # shown when a stack has them
)
#: segments left out when every stage has none of them
OPTIONAL_SEGMENTS = (("attention_buffer_bytes",), ("optimizer_step_buffers_bytes",))
MAX_STAGE_COLUMNS = 8


def _stage_columns(report: MemoryReport) -> list[int]:
    count = len(report.stages)
    if count <= MAX_STAGE_COLUMNS:
        return list(range(count))
    return sorted({0, 1, report.worst_stage, count - 2, count - 1})


def _render(report: MemoryReport) -> None:
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
    for label, fields in SEGMENTS:
        values = [sum(getattr(st, f) for f in fields) for st in stages]
        if fields in OPTIONAL_SEGMENTS and not any(values):
            continue
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


def plot_memory(report: MemoryReport, path: Path) -> None:
    """Stacked bar per pipeline stage (GiB), with the GPU's memory as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = report.stages
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(stages) + 4), 4.5))
    bottom = [0.0] * len(stages)
    x = [s.stage for s in stages]
    for label, fields in SEGMENTS:
        values = [sum(getattr(s, f) for f in fields) / 2**30 for s in stages]
        if fields in OPTIONAL_SEGMENTS and not any(values):
            continue
        ax.bar(x, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values)]
    if report.gpu is not None:
        ax.axhline(report.gpu.memory_bytes / 2**30, color="black", linestyle="--", label=f"{report.gpu.name} memory")
    top = max(bottom + ([report.gpu.memory_bytes / 2**30] if report.gpu is not None else []))
    ax.set_ylim(0, top * 1.45)
    ax.set_xticks(x)
    ax.set_xlabel("pipeline stage")
    ax.set_ylabel("GiB per GPU")
    ax.set_title(f"{report.model_name}: memory per GPU by stage")
    ax.legend(fontsize=7, loc="upper center", ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _oom_line(report: MemoryReport) -> str:
    """The first line when the worst stage does not fit: how much it needs of how much."""
    gpu = report.gpu
    return (f"[red bold]does not fit:[/red bold] worst stage {report.worst_stage} needs "
            f"{format_size(report.total_bytes)} per GPU, {gpu.name} has {format_size(gpu.memory_bytes)} "
            f"({report.total_bytes / gpu.memory_bytes:.2f}×); more model parallelism, ZeRO or recomputation "
            "(distcalc search), or --allow-oom to exit 0")


M, C, P, B, S, O, X = "model", "cluster", "parallelism", "batch", "schedule", "memory", "output"


def register(app: typer.Typer) -> None:
    """Add the ``memory`` command."""

    @app.command("memory", cls=PanelCommand, epilog=EXIT_CODES_HELP)
    @handle_errors
    @with_config_options(after="gpus")
    def memory(
        ctx: typer.Context,
        model: Annotated[str, typer.Option(rich_help_panel=M, help="model preset, config.json / YAML path, or a "
                                           "Hugging Face repo id in the local cache")] = DEFAULTS.model,
        cluster: ClusterOption = None,
        gpu: GpuOption = None,
        gpus: Annotated[Optional[int], typer.Option(rich_help_panel=P, show_default=False, help=(
            f"total GPUs [default: {DEFAULTS.gpus} (one node), or tp·pp·cp·dp when dp is given]"))] = None,
        recipe: Annotated[Recipe, typer.Option(
            rich_help_panel=O, help="model-state recipe: mixed (18 B/param, Megatron), mixed-16bit-grads (16 B/param, "
                                    "ZeRO paper; DeepSpeed ZeRO-1/2) or deepspeed-bf16 (20 B/param, DeepSpeed "
                                    "BF16_Optimizer)")
        ] = Recipe.MIXED,
        comm_buffer: Annotated[str, typer.Option(rich_help_panel=O, help="NCCL buffers per GPU (bytes, e.g. "
                                                 "512MiB), or 'auto': the buffers of the job's NCCL "
                                                 "communicators on the cluster")] = "512MiB",
        cuda_context: Annotated[str, typer.Option(rich_help_panel=O, help="CUDA context and workspaces per GPU "
                                                  "(bytes, e.g. 512MiB)")] = "512MiB",
        allocator_reserve: Annotated[float, typer.Option(rich_help_panel=O, help="allocator fragmentation reserve "
                                                         "(fraction of the total, 0-1)")] = 0.05,
        moe_token_factor: Annotated[float, typer.Option(
            min=0.01, max=64.0, rich_help_panel=O, help="MoE: routed tokens of the busiest EP rank per mean "
                                                        "routed token (capacity factor, or dropless imbalance)")] = 1.0,
        step_buffer: Annotated[float, typer.Option(
            min=0.0, max=64.0, rich_help_panel=O, help="bytes per optimizer-shard parameter the optimizer step "
                                                       "allocates after the activations are freed (DeepSpeed "
                                                       "ZeRO-1/2: 6)")] = 0.0,
        step_bucket: Annotated[str, typer.Option(rich_help_panel=O, help="gradient bucket the optimizer step "
                                                 "allocates (bytes; DeepSpeed ZeRO-1/2: 1e9)")] = "0",
        attention_score_buffer: Annotated[bool, typer.Option(
            rich_help_panel=O, help="non-flash attention computes its scores into a persistent buffer "
                                    "(Megatron-LM's GlobalMemoryBuffer): 2·b·a/t·s² bytes on every stage "
                                    "when flash attention is off")] = False,
        fsdp_shard_size: FsdpShardSizeOption = 0,
        zero3_impl: Zero3ImplOption = Zero3Impl.FSDP,
        ds_max_live_parameters: DsMaxLiveOption = DS_DEFAULTS.max_live_parameters,
        ds_max_reuse_distance: DsReuseDistanceOption = DS_DEFAULTS.max_reuse_distance_elements,
        ds_reduce_bucket_size: DsReduceBucketOption = DS_DEFAULTS.reduce_bucket_elements,
        ds_param_persistence_threshold: DsPersistenceOption = DS_DEFAULTS.param_persistence_threshold_elements,
        ds_contiguous_gradients: DsContiguousOption = DS_DEFAULTS.contiguous_gradients,
        json_output: Annotated[bool, typer.Option("--json", rich_help_panel=X, help="print one JSON object")] = False,
        plot: Annotated[Optional[Path], typer.Option(rich_help_panel=X, help="write a stacked bar chart per "
                                                     "stage (PNG)")] = None,
        allow_oom: AllowOomOption = False,
        config: ConfigOption = None,
        **config_options: Any,  # tp, pp, …, last_stage_layers: cli.config_options.CONFIG_OPTIONS
    ) -> None:
        """Per-GPU memory (weights, gradients, optimizer, activations, buffers) of every pipeline stage."""
        values, origins = request_values(ctx, config)
        # an option left out (None) takes the request's default, the configuration's (cli.config_options)
        request = MemoryRequest(**{k: v for k, v in values.items() if k in MemoryRequest.model_fields
                                   and (v is not None or origins.get(k) != "default")})
        r = request
        check_ranges(training_rules(gpus=r.gpus, tp=r.tp, pp=r.pp, dp=r.dp, cp=r.cp, ep=r.ep, vpp=r.vpp,
                                    micro_batch=r.micro_batch, global_batch=r.global_batch, seq_len=r.seq_len),
                     upper_only=True)
        check_float(r.allocator_reserve, "--allocator-reserve", 0.0, 0.99)
        plot = Path(values["plot"]) if values["plot"] is not None else None
        if plot is not None:
            check_output_path(plot, "--plot", PLOT_SUFFIXES)
        run = run_memory(request, allow_files=True)
        report, hardware = run.report, run.hardware
        c = report.config
        settings = setting_origins({"model": values["model"], "gpus": c.world_size, "seq_len": c.seq_len,
                                    "micro_batch": c.micro_batch, "global_batch": c.global_batch}, origins)
        if run.gpus_origin is not None:
            settings["gpus"]["origin"] = run.gpus_origin
        if values["global_batch"] is None:
            settings["global_batch"]["origin"] = "micro-batch·dp·2pp"
        if plot is not None:
            plot_memory(report, plot)

        def render() -> None:
            if not report.fits:
                print_line(_oom_line(report))
            print_line(hardware.headline(c.world_size))
            print_line(settings_line(settings))
            _render(report)

        emit_report(memory_payload(run), json_output=values["json_output"], plot=plot, render=render,
                    extra={"settings": settings})
        exit_if_oom(report.fits, values["allow_oom"])
