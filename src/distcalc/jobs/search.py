"""``search`` as a job: request → :class:`~distcalc.search.SearchResult` → the ``--json`` payload."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pydantic import Field

from distcalc.calibration import load_calibration
from distcalc.errors import ConfigError
from distcalc.hardware_choice import Hardware, resolve_hardware
from distcalc.jobs.base import PipelineRequest
from distcalc.jobs.messages import parse_option
from distcalc.run_file import DEFAULTS
from distcalc.inputs import excerpt
from distcalc.search import SearchResult, SpaceChoices, min_gpus_candidates, parse_gpu_counts, search
from distcalc.search.distinct import distinct_top
from distcalc.search.space import (COLUMNS, DEFAULT_SCHEDULES, RECOMPUTE_CHOICES, SCHEDULE_ALIASES, SCHEDULE_CHOICES,
                                   ZERO_CHOICES)
from distcalc.units import parse_size, parse_time
from distcalc.variability import DEFAULT_GPU_SPEED_CV


class SearchRequest(PipelineRequest):
    """The options of ``distcalc search`` with its defaults."""

    cluster: Optional[str] = Field(None, description=f"cluster preset (CLI: or YAML file) [default: "
                                                     f"{DEFAULTS.cluster}, or the first cluster hosting --gpu]")
    gpus: str = Field(str(DEFAULTS.gpus), description="GPU counts: 64, 8,16,24 or 8..64")
    global_batch: Optional[int] = Field(None, description="sequences per step [default: one per GPU of the "
                                                          "largest count]")
    seq_len: int = DEFAULTS.seq_len
    top: int = Field(10, ge=1)
    headroom: float = 0.05
    min_gpus: bool = False
    target_step_time: Optional[str] = None
    target_memory: Optional[str] = None
    zero: Optional[str] = Field(None, description="ZeRO stages to search, e.g. 0,1 (default all)")
    recompute: Optional[str] = Field(None, description="recompute modes, e.g. selective,full")
    schedule: Optional[str] = Field(None, description="schedules, e.g. 1f1b,interleaved (default gpipe, 1f1b, "
                                                      "interleaved, zero-bubble, zb-h2, zb-v, dualpipe, "
                                                      "dualpipev; also zb-h1, zb-2p)")
    gpu: Optional[str] = Field(None, description="GPU preset replacing the cluster's")
    gpu_speed_cv: float = Field(DEFAULT_GPU_SPEED_CV, ge=0.0, le=0.5)


@dataclass(frozen=True)
class SearchRun:
    """A search result and the hardware it searched."""

    result: SearchResult
    hardware: Hardware


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


def _positive_time(text: str) -> float:
    return parse_time(text, allow_zero=False)


def run_search(request: SearchRequest, *, allow_files: bool = False, calibration: Optional[Path] = None,
               max_counts: Optional[int] = None, max_gpus: Optional[int] = None) -> SearchRun:
    """The result ``distcalc search`` prints. ``max_counts``/``max_gpus`` cap the space (the web server)."""
    spec = request.resolve_model(allow_files)
    hardware = resolve_hardware(request.cluster, request.gpu, allow_files=allow_files)
    calibration_data = load_calibration(calibration) if calibration is not None else None
    counts = search_counts(request, hardware.cluster.gpus_per_node)
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
        first_stage_layers=request.ends[0], last_stage_layers=request.ends[1],
    )
    result = search(
        spec, hardware.cluster, counts, global_batch=batch_of(request), seq_len=request.seq_len,
        headroom=request.headroom, choices=choices, min_gpus=request.min_gpus,
        target_step_time_s=(None if request.target_step_time is None else parse_option(
            _positive_time, request.target_step_time, "--target-step-time")),
        target_memory_bytes=(None if request.target_memory is None else parse_option(
            parse_size, request.target_memory, "--target-memory")),
        calibration=calibration_data, gpu_speed_cv=request.gpu_speed_cv,
    )
    return SearchRun(result, hardware)


def batch_of(request: SearchRequest) -> int:
    """The global batch searched: ``--global-batch``, else one sequence per GPU of the largest count."""
    return request.global_batch if request.global_batch is not None else max(parse_gpu_counts(request.gpus))


def with_ends(rows: list[dict[str, Any]], ends: tuple[int, int]) -> list[dict[str, Any]]:
    """``rows`` with the search's uneven ends (``first_stage_layers``, ``last_stage_layers``) on pipelined rows."""
    if not any(ends):
        return rows
    return [{**r, "first_stage_layers": ends[0] if r["pp"] > 1 else 0,
             "last_stage_layers": ends[1] if r["pp"] > 1 else 0} for r in rows]


def search_payload(run: SearchRun, top: int, ends: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """The ``--json`` object (docs/design.md §4 keys ``evaluated``, ``feasible``, ``results`` plus accounting);
    ``results`` are distinct configurations (equivalents collapsed, ``equivalent`` counts them)."""
    result = run.result
    metric_keys = ("step_time_s", "mfu", "memory_bytes", "headroom")
    keep = ("gpus", *COLUMNS, *metric_keys)
    rejections = result.rejections()
    distinct, collapsed = distinct_top(result, top)
    if any(ends):
        keep = (*keep, "first_stage_layers", "last_stage_layers")
    return {
        "model": {"name": result.model, "parameters": result.parameters},
        "cluster": result.cluster,
        "hardware": run.hardware.describe(),
        "fits": result.feasible > 0,
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
        "first_stage_layers": ends[0], "last_stage_layers": ends[1],
        "results": [{**{k: r[k] for k in keep}, "equivalent": r["equivalent"]} for r in with_ends(distinct, ends)],
        "results_equivalent_collapsed": collapsed,
        "pareto": [{k: r[k] for k in keep} for r in with_ends(result.pareto_memory(), ends)],
        "pareto_gpus": ([{k: r[k] for k in keep} for r in with_ends(result.pareto_gpus(), ends)]
                        if len(result.counts) > 1 else []),
        "per_gpus": [{"gpus": c.gpus, "universe": c.universe, "evaluated": c.valid, "feasible": c.feasible}
                     for c in result.counts],
        "min_gpus": result.min_gpus,
        "targets": result.targets,
    }
