"""The per-GPU memory report: every pipeline stage, the worst one as the headline, and ``fits``."""

from __future__ import annotations

from enum import Enum
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from distcalc.errors import ConfigError
from distcalc.hardware import GpuSpec, load_gpu
from distcalc.memory.batch import formula_inputs
from distcalc.model.dims import model_dims
from distcalc.memory.options import MemoryOptions
from distcalc.memory.stage import STAGE_KEYS, config_terms, stage_lines
from distcalc.memory.states import bytes_per_parameter, zero_divisors
from distcalc.model import ModelSpec, load_model
from distcalc.parallel import ParallelConfig, Precision, validate_for_model
from distcalc.parallel_batch import config_batch

class MemoryBasis(str, Enum):
    """What a measured peak memory counts, as measurement tools report it.

    * ``allocated``: ``torch.cuda.max_memory_allocated`` — tensors only: model states, activations and
      workspaces; not NCCL's own buffers (``cudaMalloc``-ed by NCCL outside PyTorch), the CUDA context or
      the caching allocator's unused reserve.
    * ``reserved``: ``torch.cuda.max_memory_reserved`` — allocated plus the allocator's reserve.
    * ``device``: nvidia-smi "memory used" — everything on the device: reserved plus NCCL buffers and the
      CUDA context (= ``total_bytes``).
    """

    ALLOCATED = "allocated"
    RESERVED = "reserved"
    DEVICE = "device"


HEADLINE_KEYS = ("total_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                 "activations_per_layer_bytes")


class StageMemory(BaseModel):
    """Memory lines of one pipeline stage on one GPU (bytes unless named otherwise)."""

    model_config = ConfigDict(frozen=True)

    stage: int
    layers: int = Field(description="transformer layers on this stage (L/pp; with account_for_embedding_and_loss "
                                    "(L + 2)/pp, one fewer on the first and the last stage)")
    moe_layers: int = Field(description="MoE layers among them")
    parameters: int = Field(description="parameters this GPU holds before ZeRO sharding")
    layer_parameters: int = Field(description="of which in transformer layers (no embedding / LM head)")
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float = Field(description="fp32 master weights + Adam moments")
    model_states_bytes: float
    layer_model_states_bytes: float = Field(description="model states of the transformer layers only")
    in_flight_micro_batches: float = Field(description="(micro-batch × chunk) forward passes held at peak")
    activations_per_layer_bytes: float = Field(description="stored activations of one layer, one micro-batch")
    layer_activations_bytes: float = Field(description="stored activations of all layers × in-flight")
    recompute_workspace_bytes: float = Field(description="one layer's recomputed activations in backward")
    embedding_activations_bytes: float
    output_activations_bytes: float = Field(description="final norm / LM-head inputs and 16-bit logits")
    loss_workspace_bytes: float = Field(description="fp32 softmax of the cross-entropy")
    attention_buffer_bytes: float = Field(0.0, description="persistent non-flash attention-score buffer "
                                          "(MemoryOptions.attention_score_buffer)")
    activations_bytes: float
    weight_gradient_dummies_bytes: float = Field(0.0, description="Transformer Engine's cached dummy weight "
                                                 "gradients (MemoryOptions.te_dummy_wgrad)")
    communication_buffers_bytes: float
    cuda_context_bytes: float
    allocator_reserve_bytes: float
    optimizer_step_buffers_bytes: float = Field(0.0, description="tensors the optimizer step allocates in new "
                                                "segments (MemoryOptions.step_*)")
    total_bytes: float

    def peak_bytes(self, basis: MemoryBasis) -> float:
        """This stage's peak on a measurement ``basis`` (:class:`MemoryBasis`); ``device`` is ``total_bytes``."""
        if basis is MemoryBasis.DEVICE:
            return self.total_bytes
        reserved = self.total_bytes - self.communication_buffers_bytes - self.cuda_context_bytes
        if basis is MemoryBasis.RESERVED:
            return reserved
        # allocated: the steady state, or the model states with the optimizer step's tensors if that is more
        steady = reserved - self.allocator_reserve_bytes - self.optimizer_step_buffers_bytes
        return max(steady, self.model_states_bytes + self.optimizer_step_buffers_bytes)


class MemoryReport(BaseModel):
    """Per-GPU memory of every pipeline stage; the worst stage is the headline."""

    model_config = ConfigDict(frozen=True)

    model_name: str
    parameters: int
    config: ParallelConfig
    options: MemoryOptions
    gpu: GpuSpec | None
    bytes_per_parameter: dict[str, float] = Field(description="before sharding: weights, gradients, optimizer")
    sharding: dict[str, float] = Field(description="ZeRO group sizes and the divisor of each state")
    stages: list[StageMemory]
    worst_stage: int

    @property
    def worst(self) -> StageMemory:
        """The stage with the largest total."""
        return self.stages[self.worst_stage]

    @property
    def total_bytes(self) -> float:
        """Headline: the worst stage's total bytes per GPU."""
        return self.worst.total_bytes

    @property
    def fits(self) -> bool | None:
        """Worst stage ≤ GPU memory (None without a GPU)."""
        return None if self.gpu is None else self.total_bytes <= self.gpu.memory_bytes

    def memory_dict(self) -> dict[str, Any]:
        """The ``memory`` object of the CLI/JSON contract: headline lines of the worst stage, the other
        worst-stage lines, ``worst_stage``, ``bytes_per_parameter``, ``sharding``, and every stage."""
        worst = self.worst.model_dump()
        out: dict[str, Any] = {k: worst[k] for k in HEADLINE_KEYS}
        out.update({k: v for k, v in worst.items() if k not in out and k != "stage"})
        out["worst_stage"] = self.worst_stage
        out.update({f"{basis.value}_bytes": max(s.peak_bytes(basis) for s in self.stages)
                    for basis in (MemoryBasis.ALLOCATED, MemoryBasis.RESERVED)})
        out["gpu_memory_bytes"] = self.gpu.memory_bytes if self.gpu else None
        out["headroom_bytes"] = (self.gpu.memory_bytes - self.total_bytes) if self.gpu else None
        out["bytes_per_parameter"] = self.bytes_per_parameter
        out["sharding"] = self.sharding
        out["stages"] = [s.model_dump() for s in self.stages]
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON payload: ``model`` {name, parameters}, ``gpu``, ``config``, ``memory``, ``fits``."""
        return {
            "model": {"name": self.model_name, "parameters": self.parameters},
            "gpu": None if self.gpu is None else {"name": self.gpu.name, "memory_bytes": self.gpu.memory_bytes},
            "config": self.config.model_dump(mode="json"),
            "options": self.options.model_dump(mode="json"),
            "memory": self.memory_dict(),
            "fits": self.fits,
        }


def config_formula_inputs(config: ParallelConfig, options: MemoryOptions) -> dict[str, object]:
    """:func:`formula_inputs` of one :class:`ParallelConfig`."""
    return formula_inputs(**config_batch(config), options=options,
                          weight_cache_bytes=config.dtype.weight_cache_bytes_per_parameter,
                          activation_bytes=config.dtype.activation_bytes)


def _per_stage(value: object, stages: int) -> list[float]:
    """``value`` (one number, or one per stage) as a list of ``stages`` Python floats."""
    array = np.asarray(value, dtype=float)
    return array.tolist() if array.shape == (stages,) else np.broadcast_to(array, (stages,)).tolist()


def memory_report(spec: ModelSpec | str, config: ParallelConfig, gpu: GpuSpec | str | None = None,
                  options: MemoryOptions | None = None) -> MemoryReport:
    """Per-GPU memory of every pipeline stage of ``spec`` trained with ``config``.

    Validates ``config`` against the model (:func:`~distcalc.parallel.validate_for_model`), evaluates
    :func:`~distcalc.memory.stage.stage_lines` for each stage and takes the largest total as the headline.
    ``config.account_for_embedding_and_loss`` gives the embedding and the loss a layer slot each in the
    pipeline split (Megatron-Core ``--account-for-embedding-in-pipeline-split`` /
    ``--account-for-loss-in-pipeline-split``; Dubey et al. 2024, arXiv:2407.21783 §3.3.2): stages 0 and pp−1
    then hold (L + 2)/pp − 1 layers, the others (L + 2)/pp. ``spec`` / ``gpu`` may be preset names."""
    spec = load_model(spec) if isinstance(spec, str) else spec
    validate_for_model(config, spec)
    return validated_memory_report(spec, config, gpu, options)


def validated_memory_report(spec: ModelSpec, config: ParallelConfig, gpu: GpuSpec | str | None = None,
                            options: MemoryOptions | None = None) -> MemoryReport:
    """:func:`memory_report` of a configuration already checked against ``spec``
    (:func:`~distcalc.parallel.validate_for_model`; ``analyze`` checks it once for both reports)."""
    gpu = load_gpu(gpu) if isinstance(gpu, str) else gpu
    options = options or MemoryOptions()
    if options.zero_shard_size and (config.data_parallel * config.cp) % options.zero_shard_size:
        raise ConfigError(f"fsdp_shard_size({options.zero_shard_size}) must divide the data-parallel group "
                          f"dp·cp({config.data_parallel * config.cp})")
    dims = model_dims(spec)
    terms = config_terms(dims, **config_formula_inputs(config, options))
    stages = []
    lines = stage_lines(dims, terms, np.arange(config.pp))  # every stage in one call (elementwise in the stage)
    lines = {k: _per_stage(lines[k], config.pp) for k in STAGE_KEYS}
    for index in range(config.pp):
        values = {k: lines[k][index] for k in STAGE_KEYS}
        for key in ("layers", "moe_layers", "parameters", "layer_parameters"):
            values[key] = int(round(values[key]))
        stages.append(StageMemory(stage=index, **values))
    worst = int(np.argmax([s.total_bytes for s in stages]))
    per_param = bytes_per_parameter(options.recipe, config.dtype)
    shard = config.data_parallel * config.cp
    if options.zero_shard_size and config.zero_stage >= 3:  # HSDP (MemoryOptions.zero_shard_size)
        shard = min(options.zero_shard_size, shard)
    dw, dg, do = (float(x) for x in zero_divisors(config.zero_stage, shard))
    sharding = {"zero_stage": config.zero_stage, "dp_cp_group": shard, "expert_dp_group": shard / config.ep,
                "weights_divisor": dw, "gradients_divisor": dg, "optimizer_divisor": do}
    return MemoryReport(model_name=spec.name, parameters=spec.parameters, config=config, options=options, gpu=gpu,
                        bytes_per_parameter=per_param, sharding=sharding, stages=stages, worst_stage=worst)
