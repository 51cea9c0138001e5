"""Per-GPU memory model: model states by precision recipe and ZeRO stage, activations per Korthikanti et
al. 2022, pipeline in-flight micro-batches per schedule, logits/loss, buffers; every stage, worst headline.

Scalar API: :func:`memory_report`. Vectorised API (same formulas): :func:`memory_batch`,
:func:`memory_worst_stage_bytes_batch`. Formula building blocks: :mod:`distcalc.memory.activations`,
:mod:`distcalc.memory.states`, :mod:`distcalc.memory.stage`; what a software stack adds (recipe, CUDA
context, allocator fragmentation): :mod:`distcalc.memory.stacks`.
"""

from __future__ import annotations

from distcalc.memory.activations import in_flight_micro_batches, layer_activation_bytes
from distcalc.memory.batch import formula_inputs, memory_batch, memory_worst_stage_bytes_batch
from distcalc.memory.options import MemoryOptions
from distcalc.memory.report import MemoryBasis, MemoryReport, StageMemory, memory_report
from distcalc.memory.stacks import stack_memory_options
from distcalc.memory.states import Recipe, bytes_per_parameter, model_state_bytes

__all__ = [
    "MemoryBasis",
    "MemoryOptions",
    "MemoryReport",
    "Recipe",
    "StageMemory",
    "bytes_per_parameter",
    "formula_inputs",
    "in_flight_micro_batches",
    "layer_activation_bytes",
    "memory_batch",
    "memory_report",
    "memory_worst_stage_bytes_batch",
    "model_state_bytes",
    "stack_memory_options",
]
