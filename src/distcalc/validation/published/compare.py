"""Predicted vs measured step time and peak memory of every published run (``published-runs`` case set).

The step time compared is the row's ``measured_step_time_s``; where a source printed only model TFLOP/s per
GPU (NeMo's long-sequence table), the measured step time is ``model_flops_per_step / (TFLOP/s · GPUs)``
with the row's own FLOP convention (the ``flops_convention`` column), and the case says so. Peak memory is
compared on the row's own basis (:class:`~distcalc.memory.MemoryBasis`): ``torch.cuda.max_memory_allocated``
rows against distcalc's allocated bytes, nvidia-smi rows against its device total, in the unit the source
printed (:func:`measured_memory_gib`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from distcalc.analyze import analyze
from distcalc.memory import MemoryBasis, memory_report
from distcalc.units import GIB
from distcalc.validation.base import CaseSet, OpenGap, SkippedCase, ValidationCase
from distcalc.validation.published.mapping import NotExpressible, RunInputs, run_inputs
from distcalc.validation.published.gaps import KNOWN, NOT_ANALYSED, TARGETS
from distcalc.validation.published.rows import PublishedRun, published_runs
from distcalc.validation.summary import OVERALL, group_summaries

STEP_TOLERANCE = 0.08    # per-row display tolerance: the per-source target (mean |err| <= 8 %)
MEMORY_TOLERANCE = 0.05  # the peak-memory target (mean |err| <= 5 %)
DERIVED_FROM_TFLOPS = "derived here: model_flops_per_step / (printed TFLOP/s x GPUs)"


def memory_basis(run: PublishedRun) -> MemoryBasis | None:
    """The measurement basis the row's ``memory_basis`` text describes (None: no memory measured)."""
    text = run.memory_basis
    if run.measured_peak_memory_gib is None or not text:
        return None
    if "max_memory_allocated" in text:
        return MemoryBasis.ALLOCATED
    if "nvidia-smi" in text:
        return MemoryBasis.DEVICE
    if "reserved" in text:
        return MemoryBasis.RESERVED
    # Zero Bubble prints "Memory (GB)" without a definition; Megatron's memory report's headline is the
    # allocator's max allocated, and the fork's own schedule code reads torch.cuda.max_memory_allocated, so that
    # is the basis compared (stated in the case note; its unit: DECIMAL_GB_SOURCES).
    return MemoryBasis.ALLOCATED


#: sources whose printed memory unit "GB" is 10^9 bytes (not GiB), with the evidence; the CSV column keeps the
#: printed number (``measured_peak_memory_gib``) and :func:`measured_memory_gib` converts it
DECIMAL_GB_SOURCES: dict[str, str] = {
    "ZeroBubble_Qi2024_T4": (
        "printed 'Memory (GB)' read as 10^9 B: the authors' fork reports torch.cuda.max_memory_allocated in "
        "units of 10^6 B (zb_schedules.py, '// 1000000'), and the paper's 42 printed memories (Tables 4, 8, 9: "
        "1.5B-28.3B, m 2-256, b 1-12, 11-74 GB) sit a uniform 6.6 % above the model's GiB figures whether model "
        "states or activations dominate, as 1 - 10^9/2^30 = 6.9 % predicts, while a memory mechanism would scale "
        "with one of the two"),
}


def measured_memory_gib(run: PublishedRun) -> float | None:
    """The row's measured peak memory in GiB: the printed number, converted from 10^9-byte GB for a source in
    :data:`DECIMAL_GB_SOURCES` (None: no memory measured)."""
    if run.measured_peak_memory_gib is None:
        return None
    if run.source in DECIMAL_GB_SOURCES:
        return run.measured_peak_memory_gib * 1e9 / GIB
    return run.measured_peak_memory_gib


def measured_step_time(run: PublishedRun) -> tuple[float | None, str]:
    """The measured step time in seconds and its basis (None when the row has none)."""
    if run.measured_step_time_s is not None:
        return run.measured_step_time_s, run.step_time_basis
    if run.measured_tflops_per_gpu and run.model_flops_per_step and run.gpus:
        return run.model_flops_per_step / (run.measured_tflops_per_gpu * 1e12 * run.gpus), DERIVED_FROM_TFLOPS
    return None, run.step_time_basis


@dataclass(frozen=True)
class RunComparison:
    """One row: what distcalc predicts next to what was measured (None where not measured / not run)."""

    run: PublishedRun
    inputs: RunInputs | None
    reason: str
    measured_step_s: float | None
    step_basis: str
    predicted_step_s: float | None = None
    measured_memory_gib: float | None = None
    predicted_memory_gib: float | None = None
    basis: MemoryBasis | None = None


def compare(run: PublishedRun) -> RunComparison:
    """Map the row, run analyze and memory, and pair each prediction with its measurement."""
    measured_step, step_basis = measured_step_time(run)
    try:
        inputs = run_inputs(run)
    except NotExpressible as exc:
        return RunComparison(run, None, str(exc), measured_step, step_basis)
    if measured_step is None:
        return RunComparison(run, inputs, f"no measured step time ({step_basis}){_oom_check(run, inputs)}",
                             None, step_basis)
    report = analyze(inputs.spec, inputs.cluster, inputs.config, inputs.options)
    basis = memory_basis(run)
    predicted_memory = None
    if basis is not None:
        memory = memory_report(inputs.spec, inputs.config, inputs.cluster.gpu, inputs.memory_options)
        predicted_memory = max(stage.peak_bytes(basis) for stage in memory.stages) / GIB
    return RunComparison(run, inputs, "", measured_step, step_basis, report.step_time_s,
                         measured_memory_gib(run), predicted_memory, basis)


def _oom_check(run: PublishedRun, inputs: RunInputs) -> str:
    """For a row that ran out of memory: distcalc's nvidia-smi-basis peak against the device, so the listing
    says whether the model agrees that it cannot fit ("" for other rows)."""
    if "OOM" not in run.memory_basis:
        return ""
    memory = memory_report(inputs.spec, inputs.config, inputs.cluster.gpu, inputs.memory_options)
    verdict = "agrees it cannot fit" if memory.fits is False else "disagrees: predicts it fits"
    return (f"; distcalc peak {memory.total_bytes / GIB:.1f} GiB on the {memory.gpu.memory_bytes / GIB:.0f} GiB "
            f"device, {verdict}")


@lru_cache(maxsize=1)
def comparisons() -> tuple[RunComparison, ...]:
    """Every development row compared (cached: the case set and its listing share one run)."""
    return tuple(compare(run) for run in published_runs())


def _note(c: RunComparison) -> str:
    parts = [f"{c.inputs.cluster.name}, {c.inputs.config.dtype.value}"]
    if c.step_basis == DERIVED_FROM_TFLOPS:
        parts.append("step from TFLOP/s")
    parts.extend(c.inputs.assumptions)
    return "; ".join(parts)


def _memory_note(run: PublishedRun) -> str:
    """The row's memory basis, and the unit reading where the printed GB is 10^9 B."""
    unit = "; printed GB read as 10^9 B" if run.source in DECIMAL_GB_SOURCES else ""
    return run.memory_basis[:80] + unit


def _cases() -> list[ValidationCase]:
    cases: list[ValidationCase] = []
    for c in comparisons():
        if c.predicted_step_s is None:
            continue
        other = c.run.other_tool_prediction
        cases.append(ValidationCase(
            case=f"{c.run.case_id} step time", predicted=c.predicted_step_s, published=c.measured_step_s,
            unit="s", error_kind="relative", tolerance=STEP_TOLERANCE, kind="measured", note=_note(c),
            group=c.run.source, other_tool=other[0] if other else "",
            other_tool_predicted=other[1] if other else None))
        if c.predicted_memory_gib is not None:
            cases.append(ValidationCase(
                case=f"{c.run.case_id} peak memory ({c.basis.value})", predicted=c.predicted_memory_gib,
                published=c.measured_memory_gib, unit="GiB", error_kind="relative", tolerance=MEMORY_TOLERANCE,
                kind="measured", note=_memory_note(c.run), group=c.run.source,
                other_tool=other[0] if other and other[2] is not None else "",
                other_tool_predicted=other[2] if other else None))
    return cases


def _skipped() -> list[SkippedCase]:
    return [SkippedCase(case=c.run.case_id, group=c.run.source, reason=c.reason)
            for c in comparisons() if c.predicted_step_s is None]


def _open_gaps() -> list[OpenGap]:
    """Every source outside the issue's targets (:data:`~distcalc.validation.published.gaps.TARGETS`), with what
    is known about it."""
    cases, skipped = _cases(), _skipped()
    gaps = []
    for unit, quantity in (("s", "step_time"), ("GiB", "peak_memory")):
        mean_target, signed_target = TARGETS[quantity]
        for s in group_summaries(cases, skipped, unit):
            if s.group == OVERALL or not s.runnable:
                continue
            if s.mean_abs_error > mean_target or abs(s.signed_mean_error) > signed_target:
                gaps.append(OpenGap(s.group, quantity, s.mean_abs_error, s.signed_mean_error,
                                    KNOWN.get((s.group, quantity), NOT_ANALYSED)))
    return gaps


CASE_SETS = (
    CaseSet("published-runs",
            "198 published measured training runs from 13 sources (development set): step time and peak memory",
            "data/validation/published_runs/README.md (every row cites its paper, table or repository)",
            _cases, skipped=_skipped, open_gaps=_open_gaps),
)
