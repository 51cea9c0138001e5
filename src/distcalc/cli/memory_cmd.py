"""``distcalc memory``: per-GPU memory breakdown of a training configuration, stage by stage."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from distcalc.cli.common import (
    EXIT_CODES_HELP, AllowOomOption, ClusterOption, ConfigOption, GpuOption, ModelOption, PanelJsonOption,
    emit_report, exit_if_oom, handle_errors, mark_derived_origins, print_line, request_values, setting_origins,
    settings_line,
)
from distcalc.cli.config_options import GpusOption, with_config_options
from distcalc.cli.style import PanelCommand
from distcalc.jobs.memory import MemoryRequest, memory_payload, run_memory
from distcalc.cli.zero3_options import (DS_DEFAULTS, DsContiguousOption, DsMaxLiveOption, DsPersistenceOption,
                                        DsReduceBucketOption, DsReuseDistanceOption, FsdpShardSizeOption,
                                        Zero3ImplOption)
from distcalc.zero3_config import Zero3Impl
from distcalc.memory import Recipe
from distcalc.memory.te_dummy_wgrad import DummyWgrad
from distcalc.software import ContextParallelAlgorithm
from distcalc.run_file import DEFAULTS
from distcalc.cli.checks import check_float, check_ranges, training_rules
from distcalc.outputs import PLOT_SUFFIXES, check_output_path
from distcalc.render.tables.memory import memory_oom_line, print_memory_report

M, C, P, B, S, O, X = "model", "cluster", "parallelism", "batch", "schedule", "memory", "output"


def register(app: typer.Typer) -> None:
    """Add the ``memory`` command."""

    @app.command("memory", cls=PanelCommand, epilog=EXIT_CODES_HELP)
    @handle_errors
    @with_config_options(after="gpus")
    def memory(
        ctx: typer.Context,
        model: ModelOption = DEFAULTS.model,
        cluster: ClusterOption = None,
        gpu: GpuOption = None,
        gpus: GpusOption = None,
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
        te_dummy_wgrad: Annotated[DummyWgrad, typer.Option(
            rich_help_panel=O, help="Transformer Engine 2.3+ with fused weight-gradient accumulation keeps one "
                                    "16-bit dummy weight gradient per distinct linear weight shape: linear (TE "
                                    "2.3-2.9), linear-and-grouped (TE 2.10+, MoE experts too)")] = DummyWgrad.NONE,
        cp_algorithm: Annotated[ContextParallelAlgorithm, typer.Option(
            rich_help_panel=O, help="context-parallel algorithm: PyTorch's (torch-allgather, torch-alltoall) "
                                    "holds its K,V and FP32 gradient buffers during a layer's attention "
                                    "(buffers line)")] = ContextParallelAlgorithm.RING,
        fsdp_shard_size: FsdpShardSizeOption = 0,
        zero3_impl: Zero3ImplOption = Zero3Impl.FSDP,
        ds_max_live_parameters: DsMaxLiveOption = DS_DEFAULTS.max_live_parameters,
        ds_max_reuse_distance: DsReuseDistanceOption = DS_DEFAULTS.max_reuse_distance_elements,
        ds_reduce_bucket_size: DsReduceBucketOption = DS_DEFAULTS.reduce_bucket_elements,
        ds_param_persistence_threshold: DsPersistenceOption = DS_DEFAULTS.param_persistence_threshold_elements,
        ds_contiguous_gradients: DsContiguousOption = DS_DEFAULTS.contiguous_gradients,
        json_output: PanelJsonOption = False,
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
        mark_derived_origins(settings, run.gpus_origin, values["global_batch"])
        if plot is not None:
            from distcalc.render.plots.memory import plot_memory

            plot_memory(report, plot)

        def render() -> None:
            if not report.fits:
                print_line(memory_oom_line(report))
            print_line(hardware.headline(c.world_size))
            print_line(settings_line(settings))
            print_memory_report(report)

        emit_report(memory_payload(run), json_output=values["json_output"], plot=plot, render=render,
                    extra={"settings": settings})
        exit_if_oom(report.fits, values["allow_oom"])
