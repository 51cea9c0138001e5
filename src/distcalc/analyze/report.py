"""Public entry points: :func:`evaluate_batch` (arrays of configurations) and :func:`analyze` (one
configuration, a full :class:`StepReport`). Both run :func:`distcalc.analyze.core.evaluate` — one
implementation of the formulas."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from distcalc.analyze.comm import GroupKey, calibrated_placement, group_keys, group_of, measured_tiers
from distcalc.analyze.core import evaluate, gemm_fit_applies
from distcalc.analyze.chained_optimizer import step_param_gather_passes
from distcalc.analyze.cp_ring import ring_slowdown
from distcalc.analyze.options import AnalyzeOptions, moe_slot_factor
from distcalc.analyze.overlaps import FsdpUnit, assumed_overlaps
from distcalc.calibration import Calibration, load_calibration
from distcalc.cluster import ClusterSpec, load_cluster
from distcalc.compute import DeviceCompute, ModelDims, load_device, model_dims
from distcalc.model import ModelSpec, load_model
from distcalc.parallel import ParallelConfig, Precision, stage_layer_count, validate_for_model
from distcalc.parallel_batch import config_batch, normalise_batch
from distcalc.traffic import Comm, Dim

BREAKDOWN_KEYS = ("compute_s", "recompute_s", "tp_exposed_s", "cp_exposed_s", "ep_exposed_s", "pp_p2p_s",
                  "bubble_s", "dp_exposed_s", "embedding_sync_s", "optimizer_s")


@lru_cache(maxsize=64)
def _dims(spec: ModelSpec) -> ModelDims:
    return model_dims(spec)


@lru_cache(maxsize=64)
def _device(gpu: str, dtype: str) -> DeviceCompute:
    return load_device(gpu, dtype)


def _resolve(spec: ModelSpec | str, cluster: ClusterSpec | str) -> tuple[ModelSpec, ClusterSpec]:
    spec = load_model(spec) if isinstance(spec, str) else spec
    cluster = load_cluster(cluster) if isinstance(cluster, str) else cluster
    return spec, cluster


def with_calibration_option(options: AnalyzeOptions | None,
                            calibration: Calibration | str | Path | None) -> AnalyzeOptions | None:
    """``options`` with ``calibration`` (a :class:`Calibration` or a calibration file path) set; unchanged
    when ``calibration`` is None (``options.calibration`` then applies, if any)."""
    if calibration is None:
        return options
    if not isinstance(calibration, Calibration):
        calibration = load_calibration(calibration)
    return (options or AnalyzeOptions()).model_copy(update={"calibration": calibration})


def calibration_summary(calibration: Calibration, device: DeviceCompute) -> dict[str, Any]:
    """What a report says about the calibration it used (the fits without their residuals); ``compute``
    says whether the GEMM fit applied to ``device`` (:func:`distcalc.analyze.core.gemm_fit_applies`)."""
    compute = calibration.compute
    return {
        "sources": calibration.sources, "created": calibration.created, "backend": calibration.backend,
        "world_size": calibration.world_size,
        "collectives": [{"collective": f.collective, "tier": f.tier, "group_size": f.group_size,
                         "algorithm": f.algorithm, "latency_s": f.latency_s,
                         "bandwidth_bytes_per_s": f.bandwidth_bytes_per_s} for f in calibration.collective_fits()],
        "compute": None if not compute else {"device": compute.get("device"),
                                             "parameters": compute.get("parameters", {}),
                                             "applied": gemm_fit_applies(calibration, device)},
        "link_efficiency": "measured tiers use the fitted alpha and B as they are (no eta, no pipeline-fill "
                           "term); tiers not measured keep eta*B of the cluster preset",
    }


def evaluate_batch(spec: ModelSpec | str, cluster: ClusterSpec | str, batch: dict[str, Any],
                   options: AnalyzeOptions | None = None, dtype: str = "bf16",
                   memory: bool = True, *, calibration: Calibration | str | Path | None = None,
                   breakdown: bool = True) -> dict[str, np.ndarray]:
    """Step time, MFU, HFU, tokens/s, memory and the time breakdown of many configurations at once.

    ``batch`` maps the batch fields (:data:`distcalc.parallel_batch.BATCH_FIELDS`: the fields of
    :class:`~distcalc.parallel.ParallelConfig` with its names and defaults; ``zero`` the effective ZeRO stage,
    ``recompute``/``schedule`` their integer codes, flags 0/1) to NumPy integer arrays (or scalars),
    broadcast together. Configurations are assumed valid (``distcalc.parallel`` checks them).
    Returns arrays: ``step_time_s, mfu, hfu, tokens_per_s, memory_bytes`` (worst stage, if ``memory``),
    the breakdown keys of :data:`BREAKDOWN_KEYS` and ``tp_on_link_s, dp_on_link_s, micro_batches, gpus``.
    ``calibration`` (a :class:`~distcalc.calibration.Calibration` or a file from ``distcalc calibrate``)
    sets ``options.calibration``: measured α/B for the collectives, measured GEMM efficiency.
    ``breakdown`` False: ``step_time_s`` and ``mfu`` only (and ``memory_bytes`` if ``memory``), the same
    numbers for less work (the search ranks configurations by them).
    """
    spec, cluster = _resolve(spec, cluster)
    options = with_calibration_option(options, calibration)
    out = evaluate(_dims(spec), _device(cluster.gpu, dtype), cluster, batch, options, breakdown=breakdown)
    if memory:
        out["memory_bytes"] = _memory_batch(spec, batch, options, dtype)
    return out


def _memory_batch(spec: ModelSpec, batch: dict[str, Any], options: AnalyzeOptions | None, dtype: str) -> np.ndarray:
    from distcalc.memory import memory_worst_stage_bytes_batch

    c = normalise_batch(batch)
    zero = np.maximum(c["zero"], 1 if (options and options.distributed_optimizer) else 0)
    return memory_worst_stage_bytes_batch(spec, **{**c, "zero": zero},
                                          weight_cache_bytes=Precision(dtype).weight_cache_bytes_per_parameter,
                                          activation_bytes=Precision(dtype).activation_bytes)


@dataclass
class StepReport:
    """Everything :func:`analyze` computes for one configuration (seconds, bytes, fractions)."""

    model: dict[str, Any]
    cluster: dict[str, Any]
    config: dict[str, Any]
    step_time_s: float
    mfu: float
    hfu: float
    tokens_per_s: float
    time_breakdown: dict[str, float]
    communication: list[dict[str, Any]]
    groups: dict[str, Any]
    memory: dict[str, Any]
    fits: bool | None
    flops: dict[str, Any]
    options: dict[str, Any]
    time_to_train_s: float | None = None
    tokens_budget: float | None = None
    pipeline: dict[str, Any] = field(default_factory=dict)
    calibration: dict[str, Any] | None = None
    gpu_variability: dict[str, Any] = field(default_factory=dict)
    overlaps: list[dict[str, Any]] = field(default_factory=list)  #: per dimension, what hides its collectives

    def to_dict(self) -> dict[str, Any]:
        """JSON form (docs/design.md §4 keys first)."""
        out = {"model": self.model, "step_time_s": self.step_time_s, "mfu": self.mfu, "hfu": self.hfu,
               "tokens_per_s": self.tokens_per_s, "memory": self.memory, "fits": self.fits,
               "time_breakdown": self.time_breakdown, "communication": self.communication,
               "cluster": self.cluster, "config": self.config, "groups": self.groups, "flops": self.flops,
               "pipeline": self.pipeline, "gpu_variability": self.gpu_variability, "options": self.options,
               "overlaps": self.overlaps}
        if self.tokens_budget is not None:
            out["tokens"] = self.tokens_budget
            out["time_to_train_s"] = self.time_to_train_s
        if self.calibration is not None:
            out["calibration"] = self.calibration
        return out


def _config_keys(config: ParallelConfig, options: AnalyzeOptions) -> dict[Dim, GroupKey]:
    """The group size and stride of each dimension of ``config`` (:func:`distcalc.analyze.comm.group_keys`)."""
    return group_keys(*(np.asarray([v]) for v in (config.tp, config.pp, config.data_parallel, config.cp, config.ep)),
                      options.rank_order)


def _groups(cluster: ClusterSpec, keys: dict[Dim, GroupKey], options: AnalyzeOptions) -> dict[str, Any]:
    """Each dimension's group (``describe()``); with a calibration, the all-reduce α and B of its measured
    tiers and ``calibrated``: the tiers measured."""
    groups = {}
    cal = options.calibration
    tiers = measured_tiers(cal) if cal is not None else set()
    for dim in Dim:
        placement = group_of(cluster, dim, keys[dim])
        applied = sorted(tiers & ({"intra", "inter"} if placement.tier == "hierarchical" else {placement.tier}))
        if applied:
            placement = calibrated_placement(placement, Comm.ALL_REDUCE, cal)
        groups[dim.value] = {**placement.describe(), **({"calibrated": applied} if applied else {})}
    return groups


def _cp_slowdown(cluster: ClusterSpec, config: ParallelConfig, keys: dict[Dim, GroupKey], options: AnalyzeOptions,
                 device: DeviceCompute) -> float:
    """κ the model applies to ring attention's overlapped attention for this configuration."""
    return float(ring_slowdown(config.cp, keys[Dim.CP].stride, device, cluster, options.overlap_compute_slowdown)[0])


def analyze(spec: ModelSpec | str, cluster: ClusterSpec | str, config: ParallelConfig,
            options: AnalyzeOptions | None = None, tokens: float | None = None, *,
            calibration: Calibration | str | Path | None = None) -> StepReport:
    """The full step-time report of one configuration (validated against the model first).
    ``calibration``: as in :func:`evaluate_batch`."""
    from distcalc.memory import MemoryOptions
    from distcalc.memory.report import validated_memory_report

    spec, cluster = _resolve(spec, cluster)
    options = options or AnalyzeOptions(distributed_optimizer=config.distributed_optimizer)
    options = with_calibration_option(options, calibration)
    validate_for_model(config, spec)
    dtype = config.dtype.value
    batch = config_batch(config)
    out = evaluate(_dims(spec), _device(cluster.gpu, dtype), cluster, batch, options, details=True)
    f = lambda key: float(out[key].item())  # noqa: E731  (one configuration: one-element arrays)
    step = f("step_time_s")
    breakdown = {k: f(k) for k in BREAKDOWN_KEYS}
    breakdown["total_s"] = step
    breakdown["tp_on_link_s"] = f("tp_on_link_s")
    breakdown["dp_on_link_s"] = f("dp_on_link_s")
    keys = _config_keys(config, options)
    groups = _groups(cluster, keys, options)
    for row in out["messages"]:
        row["topology"] = groups[row["dim"]]["kind"]
        if options.calibration is not None:
            row["calibrated"] = bool(groups[row["dim"]].get("calibrated"))
    # the configuration was checked against the model above: the memory report does not check it again
    mem = validated_memory_report(spec, config, cluster.gpu, MemoryOptions(
        moe_token_factor=moe_slot_factor(options), zero_shard_size=options.fsdp_shard_size,
        deepspeed_zero3=options.deepspeed_zero3, cp_algorithm=options.cp_algorithm))
    memory = mem.memory_dict() if hasattr(mem, "memory_dict") else {}
    device = _device(cluster.gpu, dtype)
    cal = options.calibration
    report = StepReport(
        model={"name": spec.name, "parameters": spec.parameters},
        cluster={**cluster.describe(), "gpus": config.world_size, "nodes": -(-config.world_size // cluster.gpus_per_node)},
        config=config.model_dump(mode="json"),
        step_time_s=step, mfu=f("mfu"), hfu=f("hfu"), tokens_per_s=f("tokens_per_s"),
        time_breakdown=breakdown, communication=out["messages"], groups=groups, memory=memory,
        fits=getattr(mem, "fits", None),
        flops={"model_flops_per_step": f("model_flops"), "hardware_flops_per_step": f("hardware_flops"),
               "peak_flops_per_s": device.peak_flops_per_s,
               "mfu_formula": "model_flops / (step_time_s * gpus * peak); model_flops = 3 * B*s * forward "
                              "FLOPs/token (= 72*B*L*s*h^2*(1 + s/6h + V/12hL) for GPT, Korthikanti App. A)"
                              + (f"; sliding window w={spec.sliding_window}: attention keys per query "
                                 "2w - w^2/s instead of s" if spec.sliding_window else ""),
               "hfu_formula": "as MFU with recomputed forward FLOPs added (selective: attention core; full: "
                              "every layer's forward; selective-op: its recomputed projections)"},
        options=options.model_dump(mode="json"),
        pipeline={"micro_batches": int(f("micro_batches")), "schedule": config.resolved_schedule.value,
                  "stages": config.pp, "vpp": config.vpp, "bubble_s": breakdown["bubble_s"],
                  "stage_forward_s": f("stage_forward_s"), "stage_backward_s": f("stage_backward_s"),
                  "stage_weight_s": f("stage_weight_s"), "p2p_transfer_s": f("p2p_transfer_s"),
                  "pipeline_p2p_overlap": options.pipeline_p2p_overlap,
                  "stage_layers": [float(x) for x in np.atleast_1d(stage_layer_count(
                      spec.num_hidden_layers, np.arange(config.pp), config.pp, int(config.account_for_embedding_and_loss),
                      config.first_stage_layers or 0, config.last_stage_layers or 0))]},
        calibration=calibration_summary(cal, device) if cal is not None else None,
        gpu_variability={"gpu_speed_cv": options.gpu_speed_cv, "gpus": config.world_size,
                         "slowest_gpu_factor": f("slowest_gpu_factor"),
                         "meaning": "compute times (kernels, optimizer) are those of the slowest of the step's GPUs: "
                                    "1 + cv * E[max of gpus standard normals] times a median GPU's"},
        overlaps=[o.to_dict() for o in assumed_overlaps(
            config, options, breakdown, _cp_slowdown(cluster, config, keys, options, device),
            FsdpUnit(*(f(k) for k in ("fsdp_ag_unit_s", "fsdp_rs_unit_s", "fsdp_ar_unit_s", "block_forward_s",
                                      "block_backward_s")), kept_blocks=f("ds_kept_blocks")),
            step_param_gather_passes(options.distributed_optimizer, options.overlap_param_gather, spec.is_moe))],
    )
    if tokens is not None:
        report.tokens_budget = float(tokens)
        report.time_to_train_s = float(tokens) / report.tokens_per_s
    return report
