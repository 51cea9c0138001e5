"""``search`` as a job: request → :class:`~distcalc.search.SearchResult` → the ``--json`` payload."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import Field

from distcalc.calibration import load_calibration
from distcalc.cluster import load_cluster
from distcalc.errors import ConfigError
from distcalc.inputs import excerpt
from distcalc.jobs.base import ModelRequest
from distcalc.search import SearchResult, SpaceChoices, min_gpus_candidates, parse_gpu_counts, search
from distcalc.search.space import (COLUMNS, DEFAULT_SCHEDULES, RECOMPUTE_CHOICES, SCHEDULE_ALIASES, SCHEDULE_CHOICES,
                                   ZERO_CHOICES)
from distcalc.units import parse_size, parse_time
from distcalc.variability import DEFAULT_GPU_SPEED_CV


class SearchRequest(ModelRequest):
    """The options of ``distcalc search`` with its defaults."""

    model: str = Field("gpt3-175b", description="model preset (CLI: or a config.json / YAML path)")
    cluster: str = "dgx-a100"
    gpus: str = Field("64", description="GPU counts: 64, 8,16,24 or 8..64")
    global_batch: int = 64
    seq_len: int = 2048
    top: int = Field(10, ge=1)
    headroom: float = 0.05
    min_gpus: bool = False
    target_step_time: Optional[str] = None
    target_memory: Optional[str] = None
    zero: Optional[str] = Field(None, description="ZeRO stages to search, e.g. 0,1 (default all)")
    recompute: Optional[str] = Field(None, description="recompute modes, e.g. selective,full")
    schedule: Optional[str] = Field(None, description="schedules, e.g. 1f1b,interleaved (default gpipe, 1f1b, "
                                                      "interleaved, zero-bubble; also zb-h1, zb-h2, zb-v, "
                                                      "dualpipe, dualpipev, executed)")
    gpu: Optional[str] = None
    gpu_speed_cv: float = Field(DEFAULT_GPU_SPEED_CV, ge=0.0, le=0.5)


def choice_list(text: str | None, valid: tuple, option: str, convert=str, default: tuple | None = None,
                aliases: dict | None = None) -> tuple:
    """``"a,b"`` → (a, b), every item one of ``valid`` (or an alias of one); None → ``default`` (every valid
    value)."""
    if text is None:
        return valid if default is None else default
    items = []
    for part in str(text).split(","):
        try:
            item = convert((aliases or {}).get(part.strip(), part.strip()))
        except ValueError:
            item = None
        if item not in valid:
            shown = ", ".join(str(v) for v in valid)
            raise ConfigError(f"invalid {option} {part.strip()!r}: valid values are {shown} (comma-separated)")
        items.append(item)
    return tuple(dict.fromkeys(items))


def search_counts(request: SearchRequest, gpus_per_node: int) -> list[int]:
    """The GPU counts searched (``--min-gpus`` with one count tries the counts below it)."""
    counts = parse_gpu_counts(request.gpus)
    if request.min_gpus and len(counts) == 1:
        counts = min_gpus_candidates(counts[0], gpus_per_node)
    return counts


def run_search(request: SearchRequest, *, allow_files: bool = False, calibration: Optional[Path] = None,
               max_counts: Optional[int] = None, max_gpus: Optional[int] = None) -> SearchResult:
    """The result ``distcalc search`` prints. ``max_counts``/``max_gpus`` cap the space (the web server)."""
    spec = request.resolve_model(allow_files)
    cluster_spec = load_cluster(request.cluster, gpu=request.gpu)
    calibration_data = load_calibration(calibration) if calibration is not None else None
    counts = search_counts(request, cluster_spec.gpus_per_node)
    if max_counts is not None and len(counts) > max_counts:
        raise ConfigError(f"--gpus {excerpt(request.gpus)} asks for {len(counts)} GPU counts; at most {max_counts} "
                          "are searched here")
    if max_gpus is not None and max(counts) > max_gpus:
        raise ConfigError(f"--gpus {excerpt(request.gpus)}: {max(counts)} GPUs is above the limit {max_gpus} here")
    choices = SpaceChoices(
        zero=choice_list(request.zero, ZERO_CHOICES, "--zero", int),
        recompute=choice_list(request.recompute, RECOMPUTE_CHOICES, "--recompute"),
        schedule=choice_list(request.schedule, SCHEDULE_CHOICES, "--schedule", default=DEFAULT_SCHEDULES,
                             aliases=SCHEDULE_ALIASES),
    )
    return search(
        spec, cluster_spec, counts, global_batch=request.global_batch, seq_len=request.seq_len,
        headroom=request.headroom, choices=choices, min_gpus=request.min_gpus,
        target_step_time_s=(None if request.target_step_time is None
                            else parse_time(request.target_step_time, allow_zero=False)),
        target_memory_bytes=None if request.target_memory is None else parse_size(request.target_memory),
        calibration=calibration_data, gpu_speed_cv=request.gpu_speed_cv,
    )


def search_payload(result: SearchResult, top: int) -> dict[str, Any]:
    """The ``--json`` object (docs/design.md §4 keys ``evaluated``, ``feasible``, ``results`` plus accounting)."""
    metric_keys = ("step_time_s", "mfu", "memory_bytes", "headroom")
    keep = ("gpus", *COLUMNS, *metric_keys)
    rejections = result.rejections()
    return {
        "model": {"name": result.model, "parameters": result.parameters},
        "cluster": result.cluster,
        "gpus": [c.gpus for c in result.counts],
        "global_batch": result.global_batch,
        "seq_len": result.seq_len,
        "headroom": result.headroom,
        "gpu_memory_bytes": result.gpu_memory_bytes,
        "universe": result.universe,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "rejected": rejections.by_reason,
        "rejected_rules": rejections.rules,
        "equivalent_skipped": rejections.equivalent,
        "wall_time_s": result.wall_time_s,
        "results": [{k: r[k] for k in keep} for r in result.top(top)],
        "pareto": [{k: r[k] for k in keep} for r in result.pareto_memory()],
        "pareto_gpus": [{k: r[k] for k in keep} for r in result.pareto_gpus()] if len(result.counts) > 1 else [],
        "per_gpus": [{"gpus": c.gpus, "universe": c.universe, "evaluated": c.valid, "feasible": c.feasible}
                     for c in result.counts],
        "min_gpus": result.min_gpus,
        "targets": result.targets,
    }
