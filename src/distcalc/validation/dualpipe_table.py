"""DualPipe's published comparison table, reproduced from the executed schedules.

The table (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv:2412.19437, Table 2; deepseek-ai/DualPipe
README, "Pipeline Bubbles and Memory Usage Comparison (based on the same number of PP stages)", which adds
DualPipeV) gives, for PP pipeline stages (PP even; F a forward chunk, B a full backward chunk, W its
weight-gradient part, F&B a forward and a backward chunk overlapped):

| method | bubble | parameters per device | activations per device | devices |
|---|---|---|---|---|
| 1F1B | (PP−1)(F+B) | 1× | PP | PP |
| ZB1P | (PP−1)(F+B−2W) | 1× | PP | PP |
| DualPipe | (PP/2−1)(F&B+B−3W) | 2× | PP+1 | PP |
| DualPipeV | (PP/2−1)(F&B+B−3W) | 2× | PP+1 | PP/2 |

Every predicted number here is read off a plan of :mod:`distcalc.schedules` (ZB1P run as ZB-H1), never from
the formula: the bubble is the largest idle time of one device between the step's first and last pass
(executed with the chunk times below; with overlapped F&B pairs the middle devices run the most pairs, so
they idle the most, and that is the published figure); parameters per device the distinct stages whose
passes it runs (in stage units); activations per device its executed peak in-flight activations
(:func:`~distcalc.schedules.execute.peak_in_flight`) in stage units; the devices column is checked as the
stages a micro-batch visits when the plan runs on the published number of devices. The micro-batch
counts are the README's figures (8 PP ranks and 20 micro-batches for DualPipe, 4 ranks = 8 stages and 10
micro-batches for DualPipeV) and 4·PP.

The chunk times keep F equal to B's input-gradient part (the published figures draw them the same width);
W and the communication that an F&B pair hides vary (0, and 30–50 % of a pass). Off that regime the
DualPipe formula is not exact for the executed order (at F = 1.5, B = 1 + 0.5: executed 3.5 vs 3.0 for
PP = 4), which the tests pin as well.
"""

from __future__ import annotations

from typing import Callable

from distcalc.schedules import PassTimes, execute, get_schedule, peak_in_flight
from distcalc.schedules.base import Plan
from distcalc.validation.base import CaseSet, ValidationCase

SOURCE = "DeepSeek-V3 report (arXiv:2412.19437) Table 2; deepseek-ai/DualPipe README comparison table"

#: Chunk times (F, B input-gradient part, W, F's communication an overlapped partner hides, BW's).
TIMES = ((1.0, 1.0, 1.0, 0.0, 0.0), (1.0, 1.0, 0.6, 0.3, 0.4), (1.0, 1.0, 0.9, 0.2, 0.3), (2.0, 2.0, 0.5, 0.5, 1.0))


class Method:
    """One row of the table: the schedule run for it, its devices and micro-batch counts for PP stages, and
    the published cells as functions of PP (and the chunk times for the bubble)."""

    def __init__(self, label: str, schedule: str, devices: Callable[[int], int],
                 bubble: Callable[[int, float, float, float, float], float], parameters: float,
                 activations: Callable[[int], float], readme_micro_batches: dict[int, int]):
        self.label, self.schedule, self.devices = label, schedule, devices
        self.bubble, self.parameters, self.activations = bubble, parameters, activations
        self.readme_micro_batches = readme_micro_batches


METHODS = (
    Method("1F1B", "1f1b", lambda pp: pp, lambda pp, f, b, w, fb: (pp - 1) * (f + b), 1.0,
           lambda pp: float(pp), {}),
    Method("ZB1P", "zb-h1", lambda pp: pp, lambda pp, f, b, w, fb: (pp - 1) * (f + b - 2 * w), 1.0,
           lambda pp: float(pp), {}),
    Method("DualPipe", "dualpipe", lambda pp: pp, lambda pp, f, b, w, fb: (pp / 2 - 1) * (fb + b - 3 * w), 2.0,
           lambda pp: pp + 1.0, {8: 20}),
    Method("DualPipeV", "dualpipev", lambda pp: pp // 2, lambda pp, f, b, w, fb: (pp / 2 - 1) * (fb + b - 3 * w),
           2.0, lambda pp: pp + 1.0, {8: 10}),
)


def overlapped_pair_s(f: float, b_input: float, w: float, f_comm: float, bw_comm: float) -> float:
    """F&B: a forward and a full backward chunk overlapped, each hiding what of the other's communication its
    compute covers (the executor's rule, :mod:`distcalc.schedules.execute`)."""
    full = b_input + w
    return f + full - min(f_comm, full - bw_comm) - min(bw_comm, f - f_comm)


def worst_idle_s(plan: Plan, times: PassTimes) -> float:
    """The largest idle time of one device within the step: makespan − that device's busy time."""
    run = execute(plan, times)
    return float((run.makespan_s[0] - run.busy_s[:, 0]).max())


def stages_held(plan: Plan) -> int:
    """The most distinct stages (virtual stage, direction) whose passes one device runs: its parameter shares."""
    return max(len({(p.stage, p.chunk) for op in order for p in op}) for order in plan.orders)


def activations_in_stages(plan: Plan) -> float:
    """Executed peak in-flight activations of the worst device in stage units (a chunk is one stage)."""
    return max(peak_in_flight(plan)) / plan.chunk_fraction


def _cases() -> list[ValidationCase]:
    cases = []
    for method in METHODS:
        schedule = get_schedule(method.schedule)
        note = f"{method.label} run as {method.schedule} ({schedule.reference})"
        for pp in (4, 8, 16):
            devices = method.devices(pp)
            counts = sorted({4 * pp, method.readme_micro_batches.get(pp, 4 * pp)})
            for m in counts:
                plan = schedule.plan(devices, m)
                for f, b, w, fc, bc in TIMES:
                    published = method.bubble(pp, f, b + w, w, overlapped_pair_s(f, b, w, fc, bc))
                    cases.append(ValidationCase(
                        case=f"{method.label} PP={pp} m={m} F,B,W={f:g},{b + w:g},{w:g} hidden={fc:g},{bc:g} bubble",
                        predicted=worst_idle_s(plan, PassTimes(f, b, w, 0.0, fc, bc)), published=published,
                        unit="pass", error_kind="absolute", tolerance=1e-9, note=note))
            plan = schedule.plan(devices, counts[-1])
            for label, predicted, published, unit in (
                    ("parameters per device", stages_held(plan), method.parameters, "stages"),
                    ("activations per device", activations_in_stages(plan), method.activations(pp), "stage M_B"),
                    (f"stages on {devices} devices", plan.virtual_stages, pp, "stages")):
                cases.append(ValidationCase(case=f"{method.label} PP={pp} {label}", predicted=float(predicted),
                                            published=float(published), unit=unit, error_kind="absolute",
                                            tolerance=1e-9, note=note))
    return cases


CASE_SETS = (
    CaseSet("dualpipe-table", "DualPipe's bubble / parameter / activation table (1F1B, ZB1P, DualPipe, DualPipeV) "
            "from the executed schedules", SOURCE, _cases),
)
