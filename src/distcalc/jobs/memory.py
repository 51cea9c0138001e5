"""``memory`` as a job: request → :class:`~distcalc.memory.MemoryReport` → the ``--json`` payload."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from pydantic import Field

from distcalc.hardware_choice import Hardware, resolve_hardware
from distcalc.jobs.base import PipelineRequest
from distcalc.jobs.messages import parse_option
from distcalc.jobs.zero3 import Zero3Fields
from distcalc.errors import DistcalcError
from distcalc.memory import MemoryOptions, MemoryReport, Recipe, memory_report
from distcalc.memory.nccl_buffers import nccl_buffer_bytes
from distcalc.memory.te_dummy_wgrad import DummyWgrad
from distcalc.parallel import ParallelConfig, Precision, Recompute, Schedule
from distcalc.run_file import DEFAULTS, default_gpus
from distcalc.software import ContextParallelAlgorithm
from distcalc.units import parse_size


class MemoryRequest(PipelineRequest, Zero3Fields):
    """The options of ``distcalc memory`` with its defaults (the shared ones from :data:`DEFAULTS`)."""

    cluster: Optional[str] = Field(None, description=f"cluster preset (CLI: or YAML file) [default: "
                                                     f"{DEFAULTS.cluster}, or the first cluster hosting --gpu]")
    gpu: Optional[str] = Field(None, description="GPU preset replacing the cluster's")
    gpus: Optional[int] = Field(None, description=f"total GPUs [default: {DEFAULTS.gpus}, or tp·pp·cp·dp]")
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
    micro_batch: int = DEFAULTS.micro_batch
    global_batch: Optional[int] = None
    seq_len: int = DEFAULTS.seq_len
    schedule: Optional[Schedule] = None
    dtype: Precision = Precision.BF16
    flash_attention: bool = True
    account_for_embedding_and_loss: bool = False
    recipe: Recipe = Recipe.MIXED
    comm_buffer: str = "512MiB"
    cuda_context: str = "512MiB"
    allocator_reserve: float = 0.05
    moe_token_factor: float = Field(1.0, ge=0.01, le=64.0, description="MoE busiest-rank routed tokens / mean")
    step_buffer: float = Field(0.0, ge=0.0, le=64.0, description="bytes per optimizer-shard parameter the "
                               "optimizer step allocates (DeepSpeed ZeRO-1/2: 6)")
    step_bucket: str = Field("0", description="gradient bucket the optimizer step allocates (DeepSpeed "
                             "ZeRO-1/2: 1e9 = 5e8 16-bit elements)")
    fsdp_shard_size: int = Field(0, ge=0, description="HSDP shard group (DP ranks); 0: FULL_SHARD")
    attention_score_buffer: bool = Field(False, description="non-flash attention keeps its scores in a persistent "
                                         "global buffer (Megatron-LM GlobalMemoryBuffer)")
    te_dummy_wgrad: DummyWgrad = Field(DummyWgrad.NONE, description="Transformer Engine's cached dummy weight "
                                       "gradients: none, linear (TE 2.3-2.9), linear-and-grouped (TE 2.10+)")
    cp_algorithm: ContextParallelAlgorithm = Field(ContextParallelAlgorithm.RING, description="context-parallel "
                                                   "algorithm; torch-allgather / torch-alltoall hold PyTorch "
                                                   "ring CP's K,V and FP32 gradient buffers")


def size_or_zero(text: str) -> int:
    """A byte size where 0 is allowed (a buffer that is not reserved)."""
    return parse_size(text, allow_zero=True)


size_or_zero.__name__ = "parse_size"  # parse_option's unit check: a size


@dataclass(frozen=True)
class MemoryRun:
    """A memory report, the hardware it was priced on and why the GPU count is what it is."""

    report: MemoryReport
    hardware: Hardware
    gpus_origin: Optional[str]  # None: given


#: ``--comm-buffer`` value that counts the job's NCCL communicators instead of a fixed size
AUTO_COMM_BUFFER = "auto"


def comm_buffer_bytes(text: str, config: ParallelConfig, hardware: Hardware, tied_embeddings: bool) -> int:
    """``--comm-buffer``: a size, or ``auto`` — the NCCL buffers of the communicators the layout holds on
    the cluster (:func:`distcalc.memory.nccl_buffers.nccl_buffer_bytes`: world, TP, CP, DP, PP, EP groups,
    the tied-embedding group, NVLS buffers on NVLink-SHARP nodes)."""
    if text.strip().lower() == AUTO_COMM_BUFFER:
        return nccl_buffer_bytes(config.tp, config.pp, config.dp, config.cp, config.ep,
                                 hardware.cluster.gpus_per_node, hardware.cluster.intra.name,
                                 tied_embeddings=tied_embeddings)
    try:
        return parse_option(size_or_zero, text, "--comm-buffer")
    except DistcalcError as error:
        raise type(error)(f"{error} (or '{AUTO_COMM_BUFFER}': count the job's NCCL communicators)") from None


def run_memory(request: MemoryRequest, *, allow_files: bool = False) -> MemoryRun:
    """The report ``distcalc memory`` prints (``allow_files``: ``model`` and ``cluster`` may be file paths)."""
    spec = request.resolve_model(allow_files)
    hardware = resolve_hardware(request.cluster, request.gpu, allow_files=allow_files)
    gpus, origin = ((request.gpus, None) if request.gpus is not None
                    else default_gpus(request.tp, request.pp, request.cp, request.dp))
    layout = {k: getattr(request, k) for k in (
        "tp", "pp", "dp", "cp", "ep", "vpp", "zero", "distributed_optimizer", "sequence_parallel",
        "recompute", "micro_batch", "global_batch", "seq_len", "schedule", "dtype", "flash_attention",
        "account_for_embedding_and_loss", "first_stage_layers", "last_stage_layers")}
    config = ParallelConfig(gpus=gpus, **layout)
    options = MemoryOptions(recipe=request.recipe,
                            comm_buffer_bytes=comm_buffer_bytes(request.comm_buffer, config, hardware,
                                                                spec.tie_word_embeddings),
                            cuda_context_bytes=parse_option(size_or_zero, request.cuda_context, "--cuda-context"),
                            allocator_reserve_fraction=request.allocator_reserve,
                            moe_token_factor=request.moe_token_factor,
                            step_buffer_bytes_per_parameter=request.step_buffer,
                            step_bucket_bytes=parse_option(size_or_zero, request.step_bucket, "--step-bucket"),
                           zero_shard_size=request.fsdp_shard_size,
                            attention_score_buffer=request.attention_score_buffer,
                            te_dummy_wgrad=request.te_dummy_wgrad, cp_algorithm=request.cp_algorithm,
                            deepspeed_zero3=request.deepspeed_zero3(config.pp) if config.zero_stage >= 3 else None)
    return MemoryRun(memory_report(spec, config, hardware.gpu, options), hardware, origin)


def memory_payload(run: MemoryRun) -> dict[str, Any]:
    """The ``distcalc memory --json`` object (``fits`` at top level, ``hardware`` with its provenance)."""
    return {**run.report.to_dict(), "hardware": run.hardware.describe()}
