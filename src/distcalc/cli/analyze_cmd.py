"""``distcalc analyze``: step time, MFU/HFU and where the time goes, for a model on a cluster preset.

The options are declared here; what the command does with them is :mod:`.analyze_run`'s, loaded when it runs."""

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from distcalc.analyze.contention import OVERLAP_COMPUTE_SLOWDOWN
from distcalc.cli.zero3_options import (DS_DEFAULTS, DsContiguousOption, DsMaxLiveOption, DsOverlapCommOption,
                                        DsPersistenceOption, DsPrefetchBucketOption, DsReduceBucketOption,
                                        DsReuseDistanceOption, FsdpShardSizeOption, Zero3ImplOption)
from distcalc.zero3_config import Zero3Impl
from distcalc.cli.base import (EXIT_CODES_HELP, MODEL_HELP, AllowOomOption, CalibrationOption, ClusterOption,
                               ConfigOption, GpuOption, GpuSpeedCvOption, PanelJsonOption, handle_errors, run_body)
from distcalc.cli.config_options import GpusOption, with_config_options
from distcalc.cli.style import PanelCommand
from distcalc.cli.topology_options import with_link_options
from distcalc.run_file import DEFAULTS
from distcalc.software import (AttentionKernel, ContextParallelAlgorithm, CrossEntropyKernel, DataParallelWrapper,
                               ElementwiseKernels, FsdpSharding, MainGradDtype)
from distcalc.gpu_speed_cv import DEFAULT_GPU_SPEED_CV


M, C, P, B, S, X = "model", "cluster", "parallelism", "batch", "schedule", "output"


def _off_by_default(name: str, help_text: str) -> Any:
    """A ``--name/--no-name`` switch of the parallelism panel, off unless given."""
    return typer.Option(f"--{name}/--no-{name}", rich_help_panel=P, show_default=False,
                        help=help_text + " [default: off]")


def register(app: typer.Typer) -> None:
    """Add the ``analyze`` command."""

    @app.command("analyze", cls=PanelCommand, epilog=EXIT_CODES_HELP)
    @handle_errors
    @with_config_options(after="gpus")
    @with_link_options(after="gpus", panel=C, default="the cluster's")  # as collective and simulate offer them
    def analyze_command(
        ctx: typer.Context,
        model: Annotated[Optional[str], typer.Option(rich_help_panel=M, show_default=False, help=(
            f"{MODEL_HELP} [default: {DEFAULTS.model}]"))] = None,
        cluster: ClusterOption = None,
        gpu: GpuOption = None,
        gpus: GpusOption = None,
        order: Annotated[str, typer.Option(rich_help_panel=P, help="rank order, innermost first")] = "tp-cp-dp-pp",
        overlap_grad_reduce: Annotated[bool, typer.Option(
            "--overlap-grad-reduce/--no-overlap-grad-reduce", rich_help_panel=S, show_default=False,
            help="overlap DP reduction with backward [default: on]")] = True,
        tp_overlap: Annotated[float, typer.Option(rich_help_panel=S, help="hidden fraction of overlappable TP "
                                                  "comm (0-1)")] = 0.0,
        tp_comm_overlap: Annotated[bool, typer.Option(
            "--tp-comm-overlap/--no-tp-comm-overlap", rich_help_panel=S, show_default=False,
            help="TransformerEngine userbuffers (Megatron-Core/NeMo --tp-comm-overlap): each sequence-parallel TP "
                 "collective beside its GEMM [default: off]")] = False,
        tp_async_backward: Annotated[bool, typer.Option(
            "--tp-async-backward/--no-tp-async-backward", rich_help_panel=S, show_default=False,
            help="backward TP collectives launched asynchronously through NCCL beside their GEMMs, 39 % hidden "
                 "(Megatron-Core ColumnParallelLinear, TransformerEngine linears without userbuffers; off for "
                 "synchronous stacks: Megatron-LM before 2021-08, Megatron-DeepSpeed) [default: on]")] = True,
        cp_algorithm: Annotated[ContextParallelAlgorithm, typer.Option(
            rich_help_panel=P, help="ring, ulysses, all-gather (Llama 3), torch-allgather or torch-alltoall "
                                    "(PyTorch / torchtitan CP)")] = ContextParallelAlgorithm.RING,
        moe_capacity_factor: Annotated[float, typer.Option(
            min=0.01, max=64.0, rich_help_panel=P,
            help="MoE: expert inputs padded to this many times the mean routed tokens")] = 1.0,
        moe_load_imbalance: Annotated[Optional[float], typer.Option(
            min=1.0, max=64.0, rich_help_panel=P, show_default=False,
            help="MoE dropless routing: routed tokens of the busiest EP rank / the mean (>= 1; replaces the "
                 "capacity factor) [default: padded to capacity]")] = None,
        moe_router_group_limited: Annotated[bool, _off_by_default(
            "moe-router-group-limited", "MoE router selects experts within its best groups first (Megatron-Core "
            "--moe-router-num-groups / --moe-router-group-topk; DeepSeek)")] = False,
        moe_aux_loss: Annotated[bool, _off_by_default(
            "moe-aux-loss", "MoE router computes an auxiliary load-balancing loss (--moe-aux-loss-coeff > 0; "
            "Megatron-Core's default coefficient is 0)")] = False,
        moe_dispatch_probs: Annotated[bool, _off_by_default(
            "moe-dispatch-probs", "MoE AllToAll dispatcher sends the routing probabilities in their own AllToAll "
            "(Megatron-Core >= 0.13)")] = False,
        gpu_speed_cv: GpuSpeedCvOption = DEFAULT_GPU_SPEED_CV,
        overlap_slowdown: Annotated[float, typer.Option(
            min=0.0, max=0.99, rich_help_panel=S, show_default=False,
            help="compute slowdown (fraction) while an overlapped DP/FSDP/CP collective runs beside it (0: free "
                 f"overlap) [default: {OVERLAP_COMPUTE_SLOWDOWN:.3f}]")] = OVERLAP_COMPUTE_SLOWDOWN,
        grad_reduce_bytes: Annotated[int, typer.Option(
            min=1, max=8, rich_help_panel=S, help="bytes per gradient element in DP/FSDP reduction (4: fp32, "
                                                   "2: bf16)")] = 4,
        elementwise_kernels: Annotated[ElementwiseKernels, typer.Option(
            rich_help_panel=S, help="fused (Megatron/TransformerEngine), eager (PyTorch composite RMSNorm, "
                                    "SwiGLU, RoPE) or megatron-local (Megatron-LM local linears: unfused QKV "
                                    "bias add and bias-gradient reductions)")] = ElementwiseKernels.FUSED,
        attention_kernel: Annotated[AttentionKernel, typer.Option(
            rich_help_panel=S, help="fused (cuDNN / FlashAttention-3 class, TransformerEngine's default), flash2 "
                                    "(FlashAttention-2 package, e.g. NVTE_FUSED_ATTN=0) or flash1 (FlashAttention 1.x, "
                                    "pre-July-2023 stacks)")] = AttentionKernel.FUSED,
        main_grad_dtype: Annotated[MainGradDtype, typer.Option(
            rich_help_panel=S, help="main_grad buffer the weight-gradient GEMMs accumulate into: fp32, or fp16 "
                                    "(Megatron-LM fp16 without --accumulate-allreduce-grads-in-fp32)")
        ] = MainGradDtype.FP32,
        cross_entropy: Annotated[CrossEntropyKernel, typer.Option(
            rich_help_panel=S, help="loss kernels: unfused (Megatron-Core's vocab-parallel cross-entropy), "
                                    "native-fused or te-fused (--cross-entropy-loss-fusion with "
                                    "--cross-entropy-fusion-impl native / te)")] = CrossEntropyKernel.UNFUSED,
        fsdp_sharding: Annotated[FsdpSharding, typer.Option(
            rich_help_panel=S, help="ZeRO-3 buffers: flat (Megatron-FSDP), flat-parameter (FSDP1, DeepSpeed: "
                                    "gradient concatenated into the flat buffer) or per-parameter (FSDP2: copy-out "
                                    "after each gather, copy-in before each reduce-scatter)")] = FsdpSharding.FLAT,
        fsdp_shard_size: FsdpShardSizeOption = 0,
        dp_wrapper: Annotated[DataParallelWrapper, typer.Option(
            rich_help_panel=S, help="gradient passes of the step: megatron-core (Megatron-Core DDP and optimizer), or "
                                    "Megatron-LM's own mixed-precision optimizer (fp16: loss-scaler unscale, fp32 "
                                    "upcast) with local-buffers, local-coalesced (2021 code, fp16) or torch-ddp "
                                    "(--DDP-impl torch)")] = DataParallelWrapper.MEGATRON_CORE,
        zero_reduce_to_owners: Annotated[bool, _off_by_default(
            "zero-reduce-to-owners", "ZeRO-1/2 gradients reduced by one Reduce per partition owner, as DeepSpeed's "
            "ZeRO-1/2 optimizer does (n/(n-1) x a ReduceScatter)")] = False,
        zero3_impl: Zero3ImplOption = Zero3Impl.FSDP,
        ds_prefetch_bucket_size: DsPrefetchBucketOption = DS_DEFAULTS.prefetch_bucket_elements,
        ds_max_live_parameters: DsMaxLiveOption = DS_DEFAULTS.max_live_parameters,
        ds_max_reuse_distance: DsReuseDistanceOption = DS_DEFAULTS.max_reuse_distance_elements,
        ds_reduce_bucket_size: DsReduceBucketOption = DS_DEFAULTS.reduce_bucket_elements,
        ds_param_persistence_threshold: DsPersistenceOption = DS_DEFAULTS.param_persistence_threshold_elements,
        ds_overlap_comm: DsOverlapCommOption = DS_DEFAULTS.overlap_comm,
        ds_contiguous_gradients: DsContiguousOption = DS_DEFAULTS.contiguous_gradients,
        tokens: Annotated[Optional[float], typer.Option(rich_help_panel=B, help="token budget for "
                                                        "time-to-train (tokens), e.g. 15e12")] = None,
        json_output: PanelJsonOption = False,
        plot: Annotated[Optional[Path], typer.Option(rich_help_panel=X, help="write the breakdown + pipeline "
                                                     "timeline (PNG)")] = None,
        calibration: CalibrationOption = None,
        collective_model: Annotated[str, typer.Option(
            "--collective-model", rich_help_panel=C,
            help="alpha-beta, or nccl: price AllReduce/ReduceScatter/AllGather/Broadcast/Reduce with NCCL's "
                 "tuning model per group (opt-in)")] = "alpha-beta",
        allow_oom: AllowOomOption = False,
        config: ConfigOption = None,
        **config_options: Any,  # tp, pp, …: cli.config_options.CONFIG_OPTIONS; links: cli.topology_options
    ) -> None:
        """Predict the training step time, MFU and HFU, and show where the time goes.

        With no option at all it runs the built-in example (Llama 3 70B on 64 H100, TP 8, PP 4 × 5 chunks).
        """
        run_body("analyze_run", ctx, config)
