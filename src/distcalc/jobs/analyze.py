"""``analyze`` as a job: request → :class:`~distcalc.analyze.StepReport` → the ``--json`` payload."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pydantic import Field

from distcalc.analyze import (AnalyzeOptions, AttentionKernel, ContextParallelAlgorithm, CrossEntropyKernel,
                              ElementwiseKernels, FsdpSharding, StepReport, analyze)
from distcalc.analyze.contention import OVERLAP_COMPUTE_SLOWDOWN
from distcalc.analyze.optimizer_passes import step_pass_updates
from distcalc.calibration import load_calibration
from distcalc.software import DataParallelWrapper, MainGradDtype
from distcalc.errors import ConfigError
from distcalc.hardware_choice import Hardware, resolve_hardware
from distcalc.jobs.base import PipelineRequest, request_to_yaml
from distcalc.jobs.messages import parse_option
from distcalc.jobs.zero3 import Zero3Fields
from distcalc.parallel import ParallelConfig, Precision, Recompute, Schedule
from distcalc.run_file import DEFAULTS, default_gpus
from distcalc.topology_schema import link_override_field
from distcalc.units import parse_rate, parse_time
from distcalc.variability import DEFAULT_GPU_SPEED_CV

#: The built-in example (``distcalc analyze`` with no options): Llama 3 70B on 8 DGX H100 nodes with a
#: Megatron-style configuration (TP inside the node, 4 pipeline stages × 5 interleaved chunks, DP 2,
#: sequence parallelism, distributed optimizer, FlashAttention), 8192-token sequences, 1M-token batches.
EXAMPLE = {"model": "llama3-70b", "cluster": "dgx-h100", "gpus": 64, "tp": 8, "pp": 4, "vpp": 5,
           "micro_batch": 1, "global_batch": 128, "seq_len": 8192, "sequence_parallel": True,
           "recompute": Recompute.NONE, "distributed_optimizer": True}
LAYOUT_FIELDS = ("tp", "pp", "dp", "cp", "ep", "vpp", "zero", "gpus", "distributed_optimizer", "sequence_parallel",
                 "recompute", "micro_batch", "global_batch", "seq_len", "schedule")
#: Fields that, when given, end the built-in example (besides the layout).
NOT_EXAMPLE_FIELDS = ("model", "model_config_json", "cluster", "gpu", "first_stage_layers", "last_stage_layers")


class AnalyzeRequest(PipelineRequest, Zero3Fields):
    """The options of ``distcalc analyze`` (None: the CLI's default; all layout fields and model/cluster None:
    the built-in example)."""

    model: Optional[str] = Field(None, description=f"model preset (CLI: or a config.json / YAML path) [default: "
                                                   f"{DEFAULTS.model}]")
    cluster: Optional[str] = Field(None, description=f"cluster preset (CLI: or YAML file) [default: "
                                                     f"{DEFAULTS.cluster}, or the first cluster hosting --gpu]")
    gpu: Optional[str] = Field(None, description="GPU preset replacing the cluster's")
    gpus: Optional[int] = Field(None, description=f"total GPUs [default: {DEFAULTS.gpus}, or tp·pp·cp·dp]")
    tp: Optional[int] = None
    pp: Optional[int] = None
    dp: Optional[int] = None
    cp: Optional[int] = None
    ep: Optional[int] = None
    vpp: Optional[int] = None
    zero: Optional[int] = Field(None, ge=0, le=3)
    distributed_optimizer: Optional[bool] = None
    sequence_parallel: Optional[bool] = None
    recompute: Optional[Recompute] = None
    micro_batch: Optional[int] = None
    global_batch: Optional[int] = None
    seq_len: Optional[int] = None
    schedule: Optional[Schedule] = None
    dtype: Precision = Precision.BF16
    flash_attention: bool = True
    account_for_embedding_and_loss: bool = False
    gpus_per_node: Optional[int] = link_override_field("gpus_per_node")
    intra_bandwidth: Optional[str] = link_override_field("intra_bandwidth")
    intra_latency: Optional[str] = link_override_field("intra_latency")
    inter_bandwidth: Optional[str] = link_override_field("inter_bandwidth")
    inter_latency: Optional[str] = link_override_field("inter_latency")
    order: str = "tp-cp-dp-pp"
    overlap_grad_reduce: bool = True
    tp_overlap: float = 0.0
    tp_comm_overlap: bool = Field(False, description="TE userbuffers: each SP TP collective beside its GEMM")
    tp_async_backward: bool = Field(True, description="backward TP collectives async through NCCL beside their "
                                    "GEMMs, partly hidden (analyze.tp_async)")
    cp_algorithm: ContextParallelAlgorithm = ContextParallelAlgorithm.RING
    moe_capacity_factor: float = Field(1.0, ge=0.01, le=64.0, description="MoE expert inputs padded to c x the mean")
    moe_load_imbalance: Optional[float] = Field(None, ge=1.0, le=64.0,
                                                description="MoE dropless: busiest EP rank / mean routed tokens")
    moe_router_group_limited: bool = Field(False, description="MoE router: group-limited top-k (DeepSeek)")
    moe_aux_loss: bool = Field(False, description="MoE router: auxiliary load-balancing loss computed")
    moe_dispatch_probs: bool = Field(False, description="MoE: routing probabilities sent in their own AllToAll "
                                     "(Megatron-Core >= 0.13)")
    gpu_speed_cv: float = Field(DEFAULT_GPU_SPEED_CV, ge=0.0, le=0.5)
    overlap_slowdown: float = Field(OVERLAP_COMPUTE_SLOWDOWN, ge=0.0, le=0.99,
                                    description="compute slowdown beside an overlapped DP/FSDP/CP collective")
    grad_reduce_bytes: int = Field(4, ge=1, le=8, description="bytes per gradient element in DP/FSDP reduction")
    elementwise_kernels: ElementwiseKernels = Field(ElementwiseKernels.FUSED,
                                                    description="fused (Megatron/TE) or eager (PyTorch) ops")
    attention_kernel: AttentionKernel = Field(AttentionKernel.FUSED,
                                              description="fused (cuDNN/FA3-class), flash2 (FlashAttention-2) or flash1 "
                                                          "(FlashAttention 1.x)")
    main_grad_dtype: MainGradDtype = Field(MainGradDtype.FP32, description="main_grad the wgrad GEMMs accumulate "
                                           "into: fp32 or fp16")
    cross_entropy: CrossEntropyKernel = Field(CrossEntropyKernel.UNFUSED,
                                              description="loss kernels: unfused, native-fused or te-fused")
    fsdp_sharding: FsdpSharding = Field(FsdpSharding.FLAT, description="ZeRO-3 flat buffers, FSDP1 flat parameter "
                                        "or FSDP2 per-parameter")
    fsdp_shard_size: int = Field(0, ge=0, description="HSDP shard group (DP ranks); 0: FULL_SHARD")
    dp_wrapper: DataParallelWrapper = Field(DataParallelWrapper.MEGATRON_CORE, description="gradient passes of the "
                                            "step: megatron-core, or Megatron-LM's own optimizer with local-buffers, "
                                            "local-coalesced or torch-ddp")
    zero_reduce_to_owners: bool = Field(False, description="ZeRO-1/2 gradients reduced by one Reduce per partition "
                                        "owner (DeepSpeed)")
    tokens: Optional[float] = None
    collective_model: str = Field("alpha-beta", description="alpha-beta or nccl (NCCL's tuning model per group)")

    def is_example(self) -> bool:
        """No model, cluster or layout given: the built-in example."""
        return all(getattr(self, k) is None for k in (*NOT_EXAMPLE_FIELDS, *LAYOUT_FIELDS))


def _option(parser: Any, value: Optional[str], name: str) -> Any:
    return parse_option(parser, value, f"--{name.replace('_', '-')}") if value else None


@dataclass(frozen=True)
class AnalyzeRun:
    """A step report, the hardware it was priced on, why the GPU count is what it is (None: given) and
    whether it is the built-in example."""

    report: StepReport
    hardware: Hardware
    gpus_origin: Optional[str]
    example: bool


def run_analyze(request: AnalyzeRequest, *, allow_files: bool = False,
                calibration: Optional[Path] = None) -> AnalyzeRun:
    """The report ``distcalc analyze`` prints (``allow_files``: ``model``/``cluster`` may be file paths)."""
    example = request.is_example()
    settings: dict[str, Any] = (dict(EXAMPLE) if example
                                else {k: getattr(request, k) for k in LAYOUT_FIELDS if getattr(request, k) is not None})
    model = settings.pop("model", None) or request.model or DEFAULTS.model
    cluster = settings.pop("cluster", None) or request.cluster
    links = {"intra_bandwidth_bytes_per_s": _option(parse_rate, request.intra_bandwidth, "intra_bandwidth"),
             "inter_bandwidth_bytes_per_s": _option(parse_rate, request.inter_bandwidth, "inter_bandwidth"),
             "intra_latency_s": _option(parse_time, request.intra_latency, "intra_latency"),
             "inter_latency_s": _option(parse_time, request.inter_latency, "inter_latency")}
    spec = request.model_copy(update={"model": model}).resolve_model(allow_files)
    hardware = resolve_hardware(cluster, request.gpu, allow_files=allow_files, gpus_per_node=request.gpus_per_node,
                                **links)
    settings.setdefault("seq_len", DEFAULTS.seq_len)
    gpus_origin = None
    if "gpus" not in settings:
        settings["gpus"], gpus_origin = default_gpus(settings.get("tp", 1), settings.get("pp", 1),
                                                     settings.get("cp", 1), settings.get("dp"))
    config = ParallelConfig(**settings, dtype=request.dtype, flash_attention=request.flash_attention,
                            account_for_embedding_and_loss=request.account_for_embedding_and_loss,
                            first_stage_layers=request.first_stage_layers, last_stage_layers=request.last_stage_layers)
    if request.tp_comm_overlap and config.tp > 1 and not config.sequence_parallel:
        # Megatron-LM arguments.py: "Tensor parallel communication/GEMM overlap can happen only when sequence
        # parallelism is enabled"
        raise ConfigError(f"--tp-comm-overlap needs --sequence-parallel (tp={config.tp}): userbuffers overlap the "
                          "sequence-parallel AllGather/ReduceScatter")
    if request.zero_reduce_to_owners and config.zero_stage not in (1, 2):
        raise ConfigError(f"--zero-reduce-to-owners needs --zero 1 or 2 (zero={config.zero_stage}): DeepSpeed reduces "
                          "per partition owner only in its ZeRO-1/2 optimizer")
    options = AnalyzeOptions(rank_order=request.order, overlap_grad_reduce=request.overlap_grad_reduce,
                             overlap_param_gather=request.overlap_grad_reduce,
                             tp_overlap_efficiency=request.tp_overlap, tp_comm_overlap=request.tp_comm_overlap,
                             tp_async_backward=request.tp_async_backward,
                             cp_algorithm=request.cp_algorithm,
                             moe_capacity_factor=request.moe_capacity_factor,
                             moe_load_imbalance=request.moe_load_imbalance,
                             moe_router_group_limited=request.moe_router_group_limited,
                             moe_aux_loss=request.moe_aux_loss, moe_dispatch_probs=request.moe_dispatch_probs,
                             distributed_optimizer=config.distributed_optimizer, gpu_speed_cv=request.gpu_speed_cv,
                             collective_model=request.collective_model.strip().lower(),
                             overlap_compute_slowdown=request.overlap_slowdown,
                             grad_reduce_bytes=request.grad_reduce_bytes,
                             elementwise_kernels=request.elementwise_kernels, fsdp_sharding=request.fsdp_sharding,
                             attention_kernel=request.attention_kernel, cross_entropy=request.cross_entropy,
                             main_grad_dtype=request.main_grad_dtype,
                             fsdp_shard_size=request.fsdp_shard_size,
                             deepspeed_zero3=request.deepspeed_zero3(config.pp),
                             zero_reduce_to_owners=request.zero_reduce_to_owners,
                             calibration=load_calibration(calibration) if calibration is not None else None)
    options = options.model_copy(update=step_pass_updates(  # Megatron-LM's own optimizer (analyze.optimizer_passes)
        options.optimizer_bytes_per_parameter, config.dtype is Precision.FP16, float(request.grad_reduce_bytes),
        request.dp_wrapper))
    report = analyze(spec, hardware.cluster, config, options, tokens=request.tokens)
    if report.calibration is not None:
        report.calibration["file"] = str(calibration)
    return AnalyzeRun(report, hardware, gpus_origin, example)


def analyze_payload(run: AnalyzeRun) -> dict[str, Any]:
    """The ``distcalc analyze --json`` object (``fits`` at top level, ``hardware`` with its provenance)."""
    return {**run.report.to_dict(), "hardware": run.hardware.describe()}


def analyze_run_file(request: AnalyzeRequest) -> str:
    """The run file (``--config``) of ``request``: every field that differs from the CLI's default, so that
    ``distcalc analyze --config FILE`` reproduces the request (the built-in example is written out in full)."""
    if request.is_example():
        request = request.model_copy(update=EXAMPLE)
    return request_to_yaml(request, "analyze")
