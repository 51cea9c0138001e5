"""Search every parallel configuration of a training job: enumerate, prune by memory, price the survivors.

Pipeline per GPU count N (:func:`search`):

1. :func:`distcalc.search.space.enumerate_space` — every valid combination of tp, pp, dp, cp, ep, vpp,
   micro-batch, ZeRO stage, recompute, sequence parallelism and schedule, with counts of what was rejected
   (and, derived, whether the embedding and the loss take a layer slot each in the pipeline split: on where
   the layers alone cannot be cut into pp·vpp equal chunks).
2. Memory first: :func:`distcalc.memory.memory_worst_stage_bytes_batch` (the formulas behind
   ``distcalc memory``) on all of them at once; a configuration is *feasible* when its worst pipeline stage needs at most
   ``(1 − headroom) × HBM``. The others are counted as rejected for OOM.
3. Step time for the feasible ones: :func:`distcalc.analyze.evaluate_batch` (the formulas behind
   ``distcalc analyze``), vectorized over the configurations — with the job's calibration, if any
   (``distcalc calibrate``: measured α/B per collective and tier, measured GEMM efficiency).

Nothing here prices anything itself: every number comes from the memory and analyze modules.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from distcalc.calibration import Calibration, load_calibration
from distcalc.errors import ConfigError
from distcalc.hardware import load_gpu
from distcalc.memory import memory_worst_stage_bytes_batch
from distcalc.parallel import Precision
from distcalc.search.pareto import pareto_front
from distcalc.search.readable import config_row, config_values
from distcalc.search.space import (
    COLUMNS, ConfigArrays, Rejections, RejectReason, SpaceChoices, enumerate_space, limits_for_model,
)
from distcalc.variability import DEFAULT_GPU_SPEED_CV

RESULT_METRICS = ("step_time_s", "mfu", "memory_bytes", "headroom")
#: Rows per call of the memory model: its per-row arrays of 65,536 rows (512 KiB each) stay in the CPU caches,
#: where those of a whole space (a million rows, 8 MB each) go to DRAM and fresh pages (measured,
#: benchmarks/search.py Mixtral case, per-row pass: 1.98 s → 1.54 s of CPU time per search; grouped pass
#: (:mod:`distcalc.memory.line_groups`), CPU seconds of the memory pass, best of 3, Mixtral 8x7B / Llama-3-405B
#: cases: 0.196 / 0.089 at 32,768 rows, 0.149 / 0.073 at 65,536, 0.133 / 0.081 at 131,072, 0.169 / 0.094 at
#: 2^20). Every row's memory depends on that row alone, so the blocks change nothing.
MEMORY_BLOCK_ROWS = 65536


@dataclass
class CountResult:
    """The outcome for one GPU count: the space's accounting and the feasible configurations, priced."""

    gpus: int
    universe: int
    valid: int
    rejections: Rejections
    configs: ConfigArrays  # feasible configurations (fit in memory with the headroom)
    metrics: dict[str, np.ndarray]  # step_time_s, mfu, memory_bytes, headroom, ... per feasible configuration

    @property
    def feasible(self) -> int:
        return int(self.configs["tp"].shape[0])


@dataclass
class SearchResult:
    """Everything :func:`search` found, over every GPU count searched."""

    model: str
    parameters: int
    cluster: str
    gpu_memory_bytes: int
    global_batch: int
    seq_len: int
    headroom: float
    counts: list[CountResult] = field(default_factory=list)
    wall_time_s: float = 0.0
    min_gpus: int | None = None
    targets: dict[str, float | None] = field(default_factory=dict)

    @property
    def universe(self) -> int:
        return sum(c.universe for c in self.counts)

    @property
    def evaluated(self) -> int:
        """Valid configurations whose memory was computed (the feasible ones were also priced)."""
        return sum(c.valid for c in self.counts)

    @property
    def feasible(self) -> int:
        return sum(c.feasible for c in self.counts)

    def rejections(self) -> Rejections:
        total = Rejections()
        for count in self.counts:
            total.merge(count.rejections)
        return total

    def rows(self) -> list[dict[str, Any]]:
        """Every feasible configuration as a dict (gpus, config columns, metrics), fastest first."""
        return self.top(self.feasible)

    def columns(self) -> dict[str, list]:
        """Every feasible configuration, fastest first, as columns of plain values (for CSV): ``gpus``, the
        configuration columns (recompute / schedule as names, the 0/1 flags as bools) and the metrics."""
        stack = _Stack(self.counts)
        order = np.lexsort((stack.metrics["memory_bytes"], stack.metrics["step_time_s"]))
        out: dict[str, list] = {"gpus": stack.metrics["gpus"][order].astype(int).tolist()}
        configs = {k: np.concatenate([c.configs[k] for c in stack.counts] + [np.zeros(0, int)])[order]
                   for k in COLUMNS}
        for name in COLUMNS:
            out[name] = config_values(name, configs[name])
        out.update({k: v[order].tolist() for k, v in stack.metrics.items() if k != "gpus"})
        return out

    def top(self, k: int) -> list[dict[str, Any]]:
        """The ``k`` fastest feasible configurations over every GPU count (ties: less memory first)."""
        stack = _Stack(self.counts)
        order = np.lexsort((stack.metrics["memory_bytes"], stack.metrics["step_time_s"]))[:k]
        return [stack.row(i) for i in order]

    def pareto_memory(self) -> list[dict[str, Any]]:
        """Pareto front of step time vs memory per GPU (both minimised), by increasing memory."""
        stack = _Stack(self.counts)
        return [stack.row(i) for i in pareto_front(stack.metrics["memory_bytes"], stack.metrics["step_time_s"])]

    def pareto_gpus(self) -> list[dict[str, Any]]:
        """Pareto front of step time vs GPU count: each count's best configuration when it is faster than
        every smaller count's best."""
        stack = _Stack(self.counts)
        return [stack.row(i) for i in pareto_front(stack.metrics["gpus"], stack.metrics["step_time_s"])]


class _Stack:
    """The feasible configurations of several GPU counts as one set of arrays."""

    def __init__(self, counts: list[CountResult]):
        self.counts = [c for c in counts if c.feasible]
        self.metrics = {k: np.concatenate([c.metrics[k] for c in self.counts] + [np.zeros(0)])
                        for k in RESULT_METRICS}
        self.metrics["gpus"] = np.concatenate([np.full(c.feasible, c.gpus) for c in self.counts] + [np.zeros(0)])
        self.owner = np.concatenate([np.full(c.feasible, j) for j, c in enumerate(self.counts)] + [np.zeros(0, int)])
        self.local = np.concatenate([np.arange(c.feasible) for c in self.counts] + [np.zeros(0, int)])

    def row(self, i: int) -> dict[str, Any]:
        count, local = self.counts[int(self.owner[i])], int(self.local[i])
        row: dict[str, Any] = {"gpus": count.gpus, **config_row(count.configs, local)}
        row.update({k: float(v[local]) for k, v in count.metrics.items()})
        return row


@dataclass(frozen=True)
class Job:
    """What is searched over: the model, the cluster (its GPU preset loaded), the batch and the precision."""

    spec: Any  # distcalc.model.ModelSpec
    cluster: Any  # distcalc.cluster.ClusterSpec
    global_batch: int
    seq_len: int
    flash_attention: bool = True
    dtype: Precision = Precision.BF16
    calibration: Calibration | None = None  # measured α/B and GEMM efficiency; None: the preset's η·B
    gpu_speed_cv: float = DEFAULT_GPU_SPEED_CV  # σ of per-GPU speed (distcalc.variability); 0: identical GPUs

    @property
    def gpu_memory_bytes(self) -> int:
        return int(load_gpu(self.cluster.gpu).memory_bytes)


def _uneven_apart(configs: ConfigArrays) -> tuple[np.ndarray, np.ndarray] | None:
    """Row masks (with, without uneven ends) when the configurations mix both, else None: the memory model
    finds their candidate stages apart (:func:`distcalc.memory.memory_worst_stage_bytes_batch`)."""
    uneven = (configs.get("first_stage_layers", 0) != 0) | (configs.get("last_stage_layers", 0) != 0)
    uneven = np.asarray(uneven)
    return (uneven, ~uneven) if uneven.ndim and uneven.any() and not uneven.all() else None


def memory_bytes_batch(job: Job, configs: ConfigArrays) -> np.ndarray:
    """Worst-stage memory per GPU (bytes) of every configuration, via
    :func:`distcalc.memory.memory_worst_stage_bytes_batch` (what ``distcalc memory`` reports), in blocks of
    :data:`MEMORY_BLOCK_ROWS` rows (each row's memory depends on that row alone)."""
    rows = configs["tp"].shape[0]
    if rows == 0:
        return np.zeros(0)
    if rows > MEMORY_BLOCK_ROWS:
        out = np.empty(rows)
        for lo in range(0, rows, MEMORY_BLOCK_ROWS):
            block = slice(lo, lo + MEMORY_BLOCK_ROWS)
            out[block] = _memory_bytes(job, {k: v[block] for k, v in configs.items()})
        return out
    return _memory_bytes(job, configs)


def _memory_bytes(job: Job, configs: ConfigArrays) -> np.ndarray:
    parts = _uneven_apart(configs)
    if parts is not None:
        out = np.empty(configs["tp"].shape[0])
        for rows in parts:
            out[rows] = _memory_bytes(job, {k: v[rows] for k, v in configs.items()})
        return out
    return memory_worst_stage_bytes_batch(
        job.spec, **configs, global_batch=job.global_batch, seq_len=job.seq_len,
        flash_attention=int(job.flash_attention), weight_cache_bytes=Precision(job.dtype).weight_cache_bytes_per_parameter,
        activation_bytes=Precision(job.dtype).activation_bytes)


def step_metrics_batch(job: Job, configs: ConfigArrays) -> dict[str, np.ndarray]:
    """Step time and MFU of every configuration via :func:`distcalc.analyze.evaluate_batch` (what
    ``distcalc analyze`` reports). Every column of :data:`COLUMNS` is a batch field of the same name
    (``account_for_embedding_and_loss`` included). Its memory is not asked for: :func:`memory_bytes_batch`
    has it."""
    from distcalc.analyze import AnalyzeOptions, evaluate_batch

    if configs["tp"].shape[0] == 0:
        return {"step_time_s": np.zeros(0), "mfu": np.zeros(0)}
    batch = dict(configs, global_batch=job.global_batch, seq_len=job.seq_len,
                 flash_attention=int(job.flash_attention))
    out = evaluate_batch(job.spec, job.cluster, batch, AnalyzeOptions(gpu_speed_cv=job.gpu_speed_cv),
                         dtype=job.dtype.value, memory=False, calibration=job.calibration, breakdown=False)
    return {k: np.asarray(out[k], dtype=float) for k in ("step_time_s", "mfu")}


def search_count(job: Job, gpus: int, headroom: float, choices: SpaceChoices | None = None) -> CountResult:
    """Search one GPU count (see the module docstring)."""
    limits = limits_for_model(job.spec, seq_len=job.seq_len, global_batch=job.global_batch,
                              gpus_per_node=job.cluster.gpus_per_node)
    space = enumerate_space(limits, gpus, choices)
    memory = memory_bytes_batch(job, space.configs)
    capacity = job.gpu_memory_bytes
    fits = memory <= (1.0 - headroom) * capacity
    space.rejections.add(RejectReason.OOM, "memory above (1 - headroom) x HBM", int(np.count_nonzero(~fits)))
    rows = np.flatnonzero(fits)  # an index, taken once per column: faster than a boolean mask per column
    feasible = {k: v[rows] for k, v in space.configs.items()}
    metrics = step_metrics_batch(job, feasible)
    metrics["memory_bytes"] = memory[rows]
    metrics["headroom"] = 1.0 - metrics["memory_bytes"] / capacity
    return CountResult(gpus=gpus, universe=space.universe, valid=space.size, rejections=space.rejections,
                       configs=feasible, metrics=metrics)


def _meets(count: CountResult, targets: dict[str, float | None]) -> bool:
    ok = np.ones(count.feasible, dtype=bool)
    if targets.get("step_time_s") is not None:
        ok &= count.metrics["step_time_s"] <= targets["step_time_s"]
    if targets.get("memory_bytes") is not None:
        ok &= count.metrics["memory_bytes"] <= targets["memory_bytes"]
    return bool(ok.any())


def search(spec, cluster, gpus: int | Sequence[int], *, global_batch: int, seq_len: int, headroom: float = 0.05,
           choices: SpaceChoices | None = None, flash_attention: bool = True, dtype: Precision = Precision.BF16,
           min_gpus: bool = False, target_step_time_s: float | None = None,
           target_memory_bytes: float | None = None, calibration: Any = None,
           gpu_speed_cv: float = DEFAULT_GPU_SPEED_CV) -> SearchResult:
    """Search every configuration of ``spec`` (a ModelSpec) on ``cluster`` (a ClusterSpec) for each GPU count
    in ``gpus``.

    ``headroom``: fraction of HBM left free (a configuration is feasible when its worst stage needs at most
    ``(1 − headroom) × HBM``). With ``min_gpus`` the counts are tried in increasing order and the search stops
    at the first count with a feasible configuration meeting the targets (step time ≤ ``target_step_time_s``,
    memory ≤ ``target_memory_bytes``; no target = any feasible configuration): ``result.min_gpus``.
    ``calibration``: a :class:`distcalc.calibration.Calibration` or a calibration file path (step times
    then use its measured α/B and GEMM efficiency; memory is unaffected). ``gpu_speed_cv``: σ of per-GPU
    compute speed (:mod:`distcalc.variability`; more GPUs wait longer for their slowest one)."""
    counts = [int(gpus)] if np.isscalar(gpus) else sorted({int(g) for g in gpus})
    if not counts or counts[0] < 1:
        raise ConfigError(f"gpus must be >= 1 (got {gpus!r})")
    if not 0.0 <= headroom < 1.0:
        raise ConfigError(f"headroom({headroom}) must be a fraction in [0, 1), e.g. 0.05")
    for name, value in (("global_batch", global_batch), ("seq_len", seq_len)):
        if int(value) < 1:
            raise ConfigError(f"{name}({value}) must be >= 1")
    if calibration is not None and not isinstance(calibration, Calibration):
        calibration = load_calibration(calibration)
    job = Job(spec, cluster, int(global_batch), int(seq_len), bool(flash_attention), Precision(dtype), calibration,
              float(gpu_speed_cv))
    targets = {"step_time_s": target_step_time_s, "memory_bytes": target_memory_bytes}
    result = SearchResult(model=spec.name, parameters=spec.parameters, cluster=cluster.name,
                          gpu_memory_bytes=job.gpu_memory_bytes, global_batch=job.global_batch,
                          seq_len=job.seq_len, headroom=float(headroom), targets=targets)
    start = time.perf_counter()
    for n in counts:
        count = search_count(job, n, headroom, choices)
        result.counts.append(count)
        if min_gpus and _meets(count, targets):
            result.min_gpus = n
            break
    result.wall_time_s = time.perf_counter() - start
    return result


__all__ = ["COLUMNS", "CountResult", "Job", "RESULT_METRICS", "SearchResult", "memory_bytes_batch", "search",
           "search_count", "step_metrics_batch"]
