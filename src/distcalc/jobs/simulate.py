"""``simulate`` as a job: request → executed schedules (:class:`~distcalc.simulate.SimulationResult`) →
the ``--json`` payload."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field

from distcalc.collective import CollectiveKind, parse_algorithm, parse_kind, valid_algorithms
from distcalc.errors import AlgorithmError
from distcalc.jobs.messages import parse_option
from distcalc.jobs.collective import TopologyRequest
from distcalc.simulate import SimulationResult, parse_mode, simulate
from distcalc.units import parse_size

KINDS = [k.value for k in CollectiveKind]


class SimulateRequest(TopologyRequest):
    """The options of ``distcalc simulate KIND``."""

    segments: Optional[int] = Field(None, ge=1)
    elements: int = Field(1, ge=1)
    seed: int = 0
    mode: str = "step"


def check_kind(text: str) -> str:
    """A collective name → its canonical value (send-recv is not simulated)."""
    try:
        return parse_kind(text).value
    except AlgorithmError:
        raise AlgorithmError(f"unknown collective {text!r}: valid collectives are {', '.join(KINDS)}") from None


def run_simulate(request: SimulateRequest, allow_files: bool = False) -> tuple[list[SimulationResult], bool]:
    """The simulations ``distcalc simulate`` runs (fastest first with ``--algorithm all``) and whether
    every algorithm was asked for (``allow_files``: ``--cluster`` may be a YAML file)."""
    kind = check_kind(request.kind)
    mode = parse_mode(request.mode)
    size_bytes = parse_option(parse_size, request.size, "--size")
    topo = request.build_topology(allow_files)
    choice = parse_algorithm(request.algorithm)
    names = valid_algorithms(kind, topo) if choice == "all" else [choice]
    results = [simulate(kind, size_bytes, topo, name, elements_per_chunk=request.elements, seed=request.seed,
                        segments=request.segments, mode=mode) for name in names]
    if choice == "all":
        results.sort(key=lambda r: r.time_s)
    return results, choice == "all"


def simulate_payload(results: list[SimulationResult], every: bool) -> dict[str, Any]:
    """The ``distcalc simulate --json`` object."""
    payload = results[0].as_dict()
    if every:
        payload["results"] = [r.as_dict() for r in results]
    return payload
