"""``memory`` as a job: request → :class:`~distcalc.memory.MemoryReport` → the ``--json`` payload."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field

from distcalc.hardware import load_gpu
from distcalc.jobs.base import ModelRequest, parse_option
from distcalc.memory import MemoryOptions, MemoryReport, Recipe, memory_report
from distcalc.parallel import ParallelConfig, Precision, Recompute, Schedule
from distcalc.units import parse_size


class MemoryRequest(ModelRequest):
    """The options of ``distcalc memory`` with its defaults."""

    gpu: Optional[str] = Field("h100-sxm", description="GPU preset (a100-80gb, h100-sxm, ...)")
    gpus: Optional[int] = None
    tp: int = 1
    pp: int = 1
    dp: Optional[int] = None
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    zero: int = Field(0, ge=0, le=3)
    distributed_optimizer: bool = False
    sequence_parallel: bool = False
    recompute: Recompute = Recompute.NONE
    micro_batch: int = 1
    global_batch: Optional[int] = None
    seq_len: int = 4096
    schedule: Optional[Schedule] = None
    dtype: Precision = Precision.BF16
    flash_attention: bool = True
    account_for_embedding_and_loss: bool = False
    recipe: Recipe = Recipe.MIXED
    comm_buffer: str = "512MiB"
    cuda_context: str = "512MiB"
    allocator_reserve: float = 0.05


def run_memory(request: MemoryRequest, *, allow_files: bool = False) -> MemoryReport:
    """The report ``distcalc memory`` prints (``allow_files``: ``model`` may be a file path)."""
    spec = request.resolve_model(allow_files)
    device = load_gpu(request.gpu) if request.gpu else None
    layout = {k: getattr(request, k) for k in (
        "gpus", "tp", "pp", "dp", "cp", "ep", "vpp", "zero", "distributed_optimizer", "sequence_parallel",
        "recompute", "micro_batch", "global_batch", "seq_len", "schedule", "dtype", "flash_attention",
        "account_for_embedding_and_loss")}
    config = ParallelConfig(**layout)
    size = lambda text, option: parse_option(lambda t: parse_size(t, allow_zero=True), text, option)  # noqa: E731
    options = MemoryOptions(recipe=request.recipe, comm_buffer_bytes=size(request.comm_buffer, "--comm-buffer"),
                            cuda_context_bytes=size(request.cuda_context, "--cuda-context"),
                            allocator_reserve_fraction=request.allocator_reserve)
    return memory_report(spec, config, device, options)


def memory_payload(report: MemoryReport) -> dict[str, Any]:
    """The ``distcalc memory --json`` object."""
    return report.to_dict()
