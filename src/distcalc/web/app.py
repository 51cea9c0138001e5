"""The FastAPI application: the JSON API (each route calls the same job function as its CLI command and
returns the same object as its ``--json``), the page and a self-contained API docs page."""

from __future__ import annotations

import time
from importlib import resources
from typing import Any, Callable

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from distcalc.errors import DistcalcError
from distcalc.jobs import to_jsonable
from distcalc.jobs.analyze import AnalyzeRequest, analyze_payload, analyze_run_file, run_analyze
from distcalc.jobs.messages import parse_option
from distcalc.jobs.collective import CollectiveRequest, collective_payload, run_collective
from distcalc.jobs.memory import MemoryRequest, memory_payload, run_memory
from distcalc.jobs.nccl import is_nccl, nccl_json, run_nccl
from distcalc.jobs.presets import presets_payload
from distcalc.jobs.search import SearchRequest, run_search, search_payload
from distcalc.jobs.simulate import SimulateRequest, run_simulate, simulate_payload
from distcalc.memory.lines import SEGMENTS
from distcalc.units import parse_size_range
from distcalc.web import limits
from distcalc.web.body_limit import BodyLimit
from distcalc.web.errors import distcalc_error, validation_error
from distcalc.web.timeline import timeline_payload

STATIC = resources.files("distcalc.web") / "static"


def _answer(fields: Any, compute: Callable[[], Any]) -> JSONResponse:
    """Run one job; a :class:`DistcalcError` becomes 422 with the CLI's message. The compute time goes in a
    ``Server-Timing`` header (``compute;dur=<ms>``)."""
    start = time.perf_counter()
    try:
        payload = to_jsonable(compute())
    except DistcalcError as error:
        return distcalc_error(fields, error)
    elapsed_ms = 1000 * (time.perf_counter() - start)
    return JSONResponse(payload, headers={"Server-Timing": f"compute;dur={elapsed_ms:.2f}"})


def _analyze(request: AnalyzeRequest, payload: Callable[[Any], Any]) -> Any:
    limits.check_layout(request)
    return payload(run_analyze(request))


def _timeline(run: Any) -> dict[str, Any]:
    return timeline_payload(run.report)


def _memory(request: MemoryRequest) -> dict[str, Any]:
    limits.check_layout(request)
    return memory_payload(run_memory(request))


def _search(request: SearchRequest) -> dict[str, Any]:
    limits.check_at_most("--top", request.top, limits.MAX_SEARCH_TOP)
    result = run_search(request, max_counts=limits.MAX_SEARCH_COUNTS, max_gpus=limits.MAX_SEARCH_GPUS)
    return search_payload(result, request.top, request.ends)


def _collective(request: CollectiveRequest) -> dict[str, Any]:
    limits.check_at_most("--gpus", request.gpus, limits.MAX_COLLECTIVE_GPUS)
    sizes = parse_option(parse_size_range, request.size, "--size")
    limits.check_at_most("--size: number of sizes", len(sizes), limits.MAX_COLLECTIVE_SIZES)
    if is_nccl(request):
        return nccl_json(run_nccl(request), request.gpus)
    return collective_payload(run_collective(request))


def _simulate(request: SimulateRequest) -> dict[str, Any]:
    limits.check_at_most("--gpus", request.gpus, limits.MAX_SIMULATE_GPUS)
    limits.check_at_most("--elements", request.elements, limits.MAX_SIMULATE_ELEMENTS)
    return simulate_payload(*run_simulate(request))


def create_app() -> FastAPI:
    """The application (no state between requests)."""
    app = FastAPI(title="distcalc", version="0.1.0", docs_url=None, redoc_url=None,
                  description="The `distcalc` CLI's `--json` objects over HTTP: POST the command's options (names "
                              "with underscores, the CLI's defaults) as JSON. Bad input: 422 with `field` and "
                              "`error`, the message the CLI prints.")
    app.add_middleware(BodyLimit, max_bytes=limits.MAX_BODY_BYTES)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"))

    @app.get("/docs", include_in_schema=False)
    def docs() -> FileResponse:
        return FileResponse(str(STATIC / "docs.html"))

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> RedirectResponse:
        return RedirectResponse("/static/favicon.svg")

    @app.get("/api/presets", summary="model, GPU and cluster presets (distcalc presets --json)")
    def presets() -> JSONResponse:
        return _answer((), presets_payload)

    @app.get("/api/memory-lines", summary="the labelled lines of a memory breakdown, bottom to top: the "
                                          "stage fields (distcalc memory --json) each line sums")
    def memory_lines() -> JSONResponse:
        return _answer((), lambda: {"lines": [{"label": label, "fields": list(fields)} for label, fields in SEGMENTS]})

    @app.post("/api/analyze", summary="step time, MFU, breakdown, communication (distcalc analyze --json)")
    def analyze(request: AnalyzeRequest) -> JSONResponse:
        return _answer(AnalyzeRequest.model_fields, lambda: _analyze(request, analyze_payload))

    @app.post("/api/memory", summary="memory per GPU per pipeline stage (distcalc memory --json)")
    def memory(request: MemoryRequest) -> JSONResponse:
        return _answer(MemoryRequest.model_fields, lambda: _memory(request))

    @app.post("/api/search", summary="ranked configurations and Pareto fronts (distcalc search --json)")
    def search(request: SearchRequest) -> JSONResponse:
        return _answer(SearchRequest.model_fields, lambda: _search(request))

    @app.post("/api/collective", summary="cost of one collective per algorithm (distcalc collective KIND --json)")
    def collective(request: CollectiveRequest) -> JSONResponse:
        return _answer(CollectiveRequest.model_fields, lambda: _collective(request))

    @app.post("/api/simulate", summary="executed schedule vs the analytic cost (distcalc simulate KIND --json)")
    def simulate(request: SimulateRequest) -> JSONResponse:
        return _answer(SimulateRequest.model_fields, lambda: _simulate(request))

    @app.post("/api/timeline", summary="pipeline timeline of an analyze request (as drawn by analyze --plot)")
    def timeline(request: AnalyzeRequest) -> JSONResponse:
        return _answer(AnalyzeRequest.model_fields, lambda: _analyze(request, _timeline))

    @app.post("/api/config", summary="the --config YAML that `distcalc analyze --config FILE` reproduces")
    def config(request: AnalyzeRequest) -> JSONResponse:
        return _answer(AnalyzeRequest.model_fields, lambda: {
            "yaml": analyze_run_file(request), "command": "distcalc analyze --config run.yaml --json"})

    return app
