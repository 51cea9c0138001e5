"""``analyze`` as a job: request → :class:`~distcalc.analyze.StepReport` → the ``--json`` payload."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import Field

from distcalc.analyze import AnalyzeOptions, ContextParallelAlgorithm, StepReport, analyze
from distcalc.analyze.fsdp import OVERLAP_COMPUTE_SLOWDOWN
from distcalc.calibration import load_calibration
from distcalc.cluster import load_cluster
from distcalc.errors import ConfigError
from distcalc.jobs.base import ModelRequest, parse_option
from distcalc.parallel import ParallelConfig, Precision, Recompute, Schedule
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


class AnalyzeRequest(ModelRequest):
    """The options of ``distcalc analyze`` (None: the CLI's default; all layout fields and model/cluster None:
    the built-in example)."""

    model: Optional[str] = Field(None, description="model preset (CLI: or a config.json / YAML path)")
    cluster: Optional[str] = Field(None, description="cluster preset (dgx-a100, dgx-h100, ...)")
    gpu: Optional[str] = Field(None, description="GPU preset replacing the cluster's")
    gpus: Optional[int] = None
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
    gpus_per_node: Optional[int] = None
    intra_bandwidth: Optional[str] = Field(None, description="intra-node B per direction, e.g. 300GB/s")
    intra_latency: Optional[str] = Field(None, description="intra-node α per step, e.g. 3us")
    inter_bandwidth: Optional[str] = Field(None, description="per-NIC B per direction, e.g. 400Gbps")
    inter_latency: Optional[str] = Field(None, description="inter-node α per step, e.g. 6us")
    order: str = "tp-cp-dp-pp"
    overlap_grad_reduce: bool = True
    tp_overlap: float = 0.0
    cp_algorithm: ContextParallelAlgorithm = ContextParallelAlgorithm.RING
    gpu_speed_cv: float = Field(DEFAULT_GPU_SPEED_CV, ge=0.0, le=0.5)
    overlap_slowdown: float = Field(OVERLAP_COMPUTE_SLOWDOWN, ge=0.0, le=0.99,
                                    description="compute slowdown beside an overlapped DP/FSDP/CP collective")
    grad_reduce_bytes: int = Field(4, ge=1, le=8, description="bytes per gradient element in DP/FSDP reduction")
    tokens: Optional[float] = None
    collective_model: str = Field("alpha-beta", description="alpha-beta or nccl (NCCL's tuning model per group)")

    def is_example(self) -> bool:
        """No model, cluster or layout given: the built-in example."""
        return (self.model is None and self.model_config_json is None and self.cluster is None
                and all(getattr(self, k) is None for k in LAYOUT_FIELDS))


def _option(parser: Any, value: Optional[str], name: str) -> Any:
    return parse_option(parser, value, f"--{name.replace('_', '-')}") if value else None


def run_analyze(request: AnalyzeRequest, *, allow_files: bool = False,
                calibration: Optional[Path] = None) -> StepReport:
    """The report ``distcalc analyze`` prints (``allow_files``: ``model`` may be a file path)."""
    settings: dict[str, Any] = (dict(EXAMPLE) if request.is_example()
                                else {k: getattr(request, k) for k in LAYOUT_FIELDS if getattr(request, k) is not None})
    model = settings.pop("model", None) or request.model or EXAMPLE["model"]
    cluster = settings.pop("cluster", None) or request.cluster or EXAMPLE["cluster"]
    links = {"intra_bandwidth_bytes_per_s": _option(parse_rate, request.intra_bandwidth, "intra_bandwidth"),
             "inter_bandwidth_bytes_per_s": _option(parse_rate, request.inter_bandwidth, "inter_bandwidth"),
             "intra_latency_s": _option(parse_time, request.intra_latency, "intra_latency"),
             "inter_latency_s": _option(parse_time, request.inter_latency, "inter_latency")}
    spec = request.model_copy(update={"model": model}).resolve_model(allow_files)
    cluster_spec = load_cluster(cluster, gpu=request.gpu, gpus_per_node=request.gpus_per_node, **links)
    settings.setdefault("seq_len", 4096)
    config = ParallelConfig(**settings, dtype=request.dtype, flash_attention=request.flash_attention,
                            account_for_embedding_and_loss=request.account_for_embedding_and_loss)
    options = AnalyzeOptions(rank_order=request.order, overlap_grad_reduce=request.overlap_grad_reduce,
                             overlap_param_gather=request.overlap_grad_reduce,
                             tp_overlap_efficiency=request.tp_overlap, cp_algorithm=request.cp_algorithm,
                             distributed_optimizer=config.distributed_optimizer, gpu_speed_cv=request.gpu_speed_cv,
                             collective_model=request.collective_model.strip().lower(),
                             overlap_compute_slowdown=request.overlap_slowdown,
                             grad_reduce_bytes=request.grad_reduce_bytes,
                             calibration=load_calibration(calibration) if calibration is not None else None)
    report = analyze(spec, cluster_spec, config, options, tokens=request.tokens)
    if report.calibration is not None:
        report.calibration["file"] = str(calibration)
    return report


def analyze_payload(report: StepReport) -> dict[str, Any]:
    """The ``distcalc analyze --json`` object."""
    return report.to_dict()


def request_from_yaml(path: Path) -> dict[str, Any]:
    """The mapping of :class:`AnalyzeRequest` fields a ``--config`` YAML file holds (validated)."""
    from distcalc.inputs import MAX_MODEL_FILE_BYTES, read_data_file

    data = read_data_file(path, "--config file", error=ConfigError, max_bytes=MAX_MODEL_FILE_BYTES)
    if not isinstance(data, dict):
        raise ConfigError(f"--config {str(path)!r} does not hold a mapping of analyze options")
    unknown = sorted(set(data) - set(AnalyzeRequest.model_fields))
    if unknown:
        raise ConfigError(f"--config {str(path)!r}: unknown option(s) {', '.join(unknown)}; valid: "
                          f"{', '.join(AnalyzeRequest.model_fields)}")
    return data


def request_to_yaml(request: AnalyzeRequest) -> str:
    """A ``--config`` YAML of ``request``: every field that differs from the CLI's default, so that
    ``distcalc analyze --config FILE`` reproduces the request (the built-in example is written out in full)."""
    import yaml

    if request.is_example():
        request = request.model_copy(update=EXAMPLE)
    data = request.model_dump(mode="json", exclude_defaults=True)
    return "# distcalc analyze --config FILE (options as on the command line, with underscores)\n" + yaml.safe_dump(
        data, sort_keys=False)
