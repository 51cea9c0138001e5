"""Vectorised memory model: the worst pipeline stage of many configurations at once (for ``search``).

:func:`memory_batch` evaluates :func:`~distcalc.memory.stage.config_terms` and
:func:`~distcalc.memory.stage.stage_lines` — the functions :func:`~distcalc.memory.memory_report` uses —
on NumPy arrays of configurations, and keeps per configuration the stage with the largest total.

Candidate stages (exact, not a heuristic): two stages holding the same numbers of transformer and MoE
layers (hence the same layer parameters and per-layer activations), neither of them the first or the last
stage, differ only in their in-flight micro-batches, which never increase with the stage index under any
schedule (:func:`~distcalc.memory.activations.in_flight_micro_batches`). So the worst stage is the first
stage, the last stage, or the lowest-index middle stage of each distinct (layers, MoE layers) count. For a
model whose layers are all alike that is {0, pp−1}; with ``account_for_embedding_and_loss`` (Megatron-Core
``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``; Llama 3, Dubey et
al. 2024 §3.3.2) stages 0 and pp−1 hold (L + 2)/pp − 1 layers and the middle ones (L + 2)/pp, so it is
{0, 1, pp−1} — stage 1, the first middle stage, has the most layers and the most in-flight micro-batches
among the middle stages. For DeepSeek-V3 (three dense layers first) a few more.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from distcalc.model.dims import ModelDims, model_dims
from distcalc.memory.activations import ACTIVATION_BYTES_16
from distcalc.memory.line_groups import grouped_worst_totals
from distcalc.memory.options import MemoryOptions
from distcalc.memory.stage import (
    STAGE_KEYS, config_terms, stage_activation_lines, stage_layer_terms, stage_lines,
    stage_state_lines,
)
from distcalc.memory.states import bytes_per_parameter
from distcalc.model import ModelSpec
from distcalc.parallel import Precision, pipeline_slots_offset, stage_layout
from distcalc.parallel_batch import normalise_batch


def formula_inputs(*, options: MemoryOptions | None = None, weight_cache_bytes=0.0,
                   activation_bytes: float = ACTIVATION_BYTES_16, **batch) -> dict[str, object]:
    """Keyword arguments of :func:`~distcalc.memory.stage.config_terms` from the batch fields (plain numbers
    or arrays): the names, encodings and defaults of :data:`distcalc.parallel_batch.BATCH_FIELDS` — the
    fields of :class:`~distcalc.parallel.ParallelConfig`, ``recompute``/``schedule`` as integer codes,
    ``zero`` the effective ZeRO stage (distributed optimizer = 1), ``account_for_embedding_and_loss`` the
    embedding and the loss taking a layer slot each in the pipeline split (module docstring),
    ``first_stage_layers``/``last_stage_layers`` uneven ends, 0 when not given
    (:func:`distcalc.parallel.stage_layer_split`). ``weight_cache_bytes`` (bytes per parameter, scalar or
    array) adds the quantised weight copies of a low-precision recipe
    (:attr:`~distcalc.parallel.Precision.weight_cache_bytes_per_parameter`) to the weight bytes;
    ``activation_bytes`` is the dtype's bytes per activation element
    (:attr:`~distcalc.parallel.Precision.activation_bytes`)."""
    options = options or MemoryOptions()
    c = normalise_batch(batch)
    per_param = bytes_per_parameter(options.recipe, Precision.BF16)
    return dict(
        tp=c["tp"], pp=c["pp"], dp=c["dp"], cp=c["cp"], ep=c["ep"], vpp=c["vpp"], zero=c["zero"],
        sequence_parallel=c["sequence_parallel"] != 0, recompute=c["recompute"], micro_batch=c["micro_batch"],
        num_micro_batches=c["global_batch"] // (c["micro_batch"] * c["dp"]), seq_len=c["seq_len"],
        schedule=c["schedule"], flash=c["flash_attention"] != 0,
        weight_bytes=per_param["weights"] + np.asarray(weight_cache_bytes, dtype=float),
        gradient_bytes=per_param["gradients"], optimizer_bytes=per_param["optimizer"], options=options,
        account_for_embedding_and_loss=c["account_for_embedding_and_loss"] != 0,
        first_stage_layers=c["first_stage_layers"], last_stage_layers=c["last_stage_layers"],
        activation_bytes=activation_bytes,
    )


@lru_cache(maxsize=4096)
def _candidate_stages(dims: ModelDims, pp: int, vpp: int, split: bool = False) -> tuple[int, ...]:
    """Stages that can be the worst for this (pp, vpp, split) (see module docstring), ascending."""
    if pp <= 2:
        return tuple(sorted({0, pp - 1}))
    if dims.uniform:
        return (0, 1, pp - 1) if split else (0, pp - 1)
    stages = np.arange(pp)
    layers, counts = stage_layout(dims.layers, dims.moe_cumulative, stages, pp, vpp, int(split))
    firsts: dict[tuple[float, int], int] = {}
    for stage in range(1, pp - 1):
        firsts.setdefault((float(layers[stage]), int(counts[stage])), stage)
    return tuple(sorted({0, pp - 1, *firsts.values()}))


def _candidates(dims: ModelDims, pp: np.ndarray, vpp: np.ndarray, split: np.ndarray) -> list[np.ndarray]:
    """Arrays of candidate stage indices, one array per rank, each row ascending (padded by repeating a
    candidate: a repeat ties, and ties keep the earlier stage). ``split``: 0/1, already 0 where pp = 1."""
    if dims.uniform:
        first, last = np.zeros(pp.shape, dtype=np.int64), pp - 1
        if not np.any(split):
            return [first, last]
        return [first, np.where((split > 0) & (pp > 2), 1, 0), last]
    triples = np.stack([pp.ravel(), vpp.ravel(), split.ravel()], axis=1)
    unique, inverse = np.unique(triples, axis=0, return_inverse=True)
    lists = [_candidate_stages(dims, int(p), int(v), bool(e)) for p, v, e in unique]
    width = max(len(c) for c in lists)
    table = np.array([list(c) + [c[-1]] * (width - len(c)) for c in lists], dtype=np.int64)
    chosen = table[inverse.ravel()]
    return [chosen[:, k].reshape(pp.shape) for k in range(width)]


def _uneven_candidates(dims: ModelDims, pp: np.ndarray, vpp: np.ndarray, first: np.ndarray,
                       last: np.ndarray) -> list[np.ndarray]:
    """Candidate stages with uneven ends: 0, pp−1 and the lowest-index middle stage of each distinct
    (layers, MoE layers) count (the module docstring's argument; the middle stages hold the same layer count)."""
    rows = np.stack([pp.ravel(), vpp.ravel(), first.ravel(), last.ravel()], axis=1)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    lists = []
    for p, v, f, l_ in unique:
        stages = np.arange(int(p))
        layers, counts = stage_layout(dims.layers, dims.moe_cumulative, stages, int(p), int(v), 0, int(f), int(l_))
        firsts: dict[tuple[float, int], int] = {}
        for stage in range(1, int(p) - 1):
            firsts.setdefault((float(layers[stage]), int(counts[stage])), stage)
        lists.append(sorted({0, int(p) - 1, *firsts.values()}))
    width = max(len(c) for c in lists)
    table = np.array([list(c) + [c[-1]] * (width - len(c)) for c in lists], dtype=np.int64)
    chosen = table[inverse.ravel()]
    return [chosen[:, k].reshape(pp.shape) for k in range(width)]


def _candidate_lines(dims: ModelDims, terms: dict, candidates: list[np.ndarray], uneven: bool, lines=None):
    """:func:`stage_lines` of each candidate stage, in order. A uniform model's layer terms depend on the stage
    only through its layer count, which is the same on stages 0 and pp−1 (L/pp, or (L + 2)/pp − 1 with the
    split): computed once for both; a middle candidate (stage 1, present only with the split) gets its own.
    ``lines``: (terms, stage, layer terms) → lines, :func:`stage_lines` when not given."""
    edge_terms = None
    for index, stage in enumerate(candidates):
        edge = index in (0, len(candidates) - 1)
        if dims.uniform and edge and edge_terms is not None and not uneven:
            layer_terms = edge_terms
        else:
            layer_terms = stage_layer_terms(dims, terms, stage)
            if dims.uniform and edge:
                edge_terms = layer_terms
        yield stage, (stage_lines(dims, terms, stage, layer_terms) if lines is None
                      else lines(terms, stage, layer_terms))


def _stage_candidates(dims: ModelDims, inputs: dict, shape: tuple) -> tuple[list[np.ndarray], bool]:
    """(candidate stage arrays, uneven ends?) of the configurations ``inputs`` (:func:`formula_inputs`)."""
    pp = np.broadcast_to(np.asarray(inputs["pp"], dtype=np.int64), shape)
    vpp = np.broadcast_to(np.asarray(inputs["vpp"], dtype=np.int64), shape)
    split = np.broadcast_to(pipeline_slots_offset(inputs["account_for_embedding_and_loss"], pp), shape)
    first = np.broadcast_to(np.asarray(inputs["first_stage_layers"], dtype=np.int64), shape)
    last = np.broadcast_to(np.asarray(inputs["last_stage_layers"], dtype=np.int64), shape)
    uneven = bool(np.any(first) or np.any(last))
    if uneven and not (np.all((first > 0) | (last > 0))):
        raise ValueError("evaluate uneven-end and other pipeline splits in separate calls")
    candidates = _uneven_candidates(dims, pp, vpp, first, last) if uneven else _candidates(dims, pp, vpp, split)
    return candidates, uneven


def _evaluate(spec: ModelSpec, config: dict, keep_lines: bool) -> dict[str, np.ndarray]:
    dims = model_dims(spec)
    inputs = formula_inputs(**config)
    arrays = [np.asarray(v) for k, v in inputs.items() if k != "options"]
    shape = np.broadcast(*arrays).shape
    terms = config_terms(dims, **inputs)
    best: dict[str, np.ndarray] = {}
    candidates, uneven = _stage_candidates(dims, inputs, shape)
    for stage, lines in _candidate_lines(dims, terms, candidates, uneven):
        total = np.broadcast_to(lines["total_bytes"], shape)
        if not best:
            best = {k: np.array(np.broadcast_to(v, shape), dtype=float) for k, v in lines.items()} if keep_lines \
                else {"total_bytes": np.array(total, dtype=float)}
            best["worst_stage"] = np.array(stage, dtype=np.int64)
            continue
        better = total > best["total_bytes"]
        if keep_lines:
            for key in STAGE_KEYS:
                best[key] = np.where(better, lines[key], best[key])
        else:
            best["total_bytes"] = np.where(better, total, best["total_bytes"])
        best["worst_stage"] = np.where(better, stage, best["worst_stage"])
    return best


#: Fewest configurations priced by the grouped pass: below, its two evaluations on representative rows cost more
#: than one on every row (measured, first rows of the Mixtral 8x7B search space, CPU ms, per-row / grouped:
#: 1 row 0.41 / 0.92, 128 rows 0.55 / 1.20, 1,024 rows 1.19 / 1.90, 8,192 rows 6.99 / 3.63).
GROUPED_MIN_ROWS = 4096


def _grouped_totals(spec: ModelSpec, config: dict) -> np.ndarray | None:
    """Worst-stage totals by :func:`~distcalc.memory.line_groups.grouped_worst_totals` (each line once per
    distinct value of the fields it reads); None where that does not apply (fewer than
    :data:`GROUPED_MIN_ROWS` configurations, a per-row weight cache, or uneven ends mixed with other splits)."""
    if np.ndim(config.get("weight_cache_bytes", 0.0)) or np.ndim(config.get("activation_bytes", 0.0)):
        return None
    extra = {k: config[k] for k in ("options", "weight_cache_bytes", "activation_bytes") if k in config}
    columns = normalise_batch({k: v for k, v in config.items() if k not in extra})  # 1-d: the caller checks
    if columns["tp"].size < GROUPED_MIN_ROWS:
        return None
    uneven = (columns["first_stage_layers"] > 0) | (columns["last_stage_layers"] > 0)
    if uneven.any() and not uneven.all():
        return None
    dims = model_dims(spec)

    def lines_at(rows: np.ndarray, part: str) -> list[dict]:
        inputs = formula_inputs(**{k: v[rows] for k, v in columns.items()}, **extra)
        candidates, uneven_ends = _stage_candidates(dims, inputs, rows.shape)
        lines = stage_state_lines if part == "state" else stage_activation_lines
        return [lines for _, lines in _candidate_lines(dims, config_terms(dims, **inputs), candidates, uneven_ends,
                                                       lines)]

    options = extra.get("options") or MemoryOptions()
    return grouped_worst_totals(columns, lines_at, options.allocator_reserve_fraction)


def memory_batch(spec: ModelSpec, **config) -> dict[str, np.ndarray]:
    """Worst-stage memory lines (keys of :data:`STAGE_KEYS` plus ``worst_stage``) for arrays of
    configurations; arguments as :func:`formula_inputs` (the batch fields; scalars broadcast). Configurations are assumed
    valid (see :func:`distcalc.parallel.validate_for_model`)."""
    return _evaluate(spec, config, keep_lines=True)


def memory_worst_stage_bytes_batch(spec: ModelSpec, **config) -> np.ndarray:
    """Total bytes per GPU of the worst pipeline stage for arrays of configurations (faster than
    :func:`memory_batch`: only totals are kept, each line computed once per distinct value of the fields it
    reads — :mod:`distcalc.memory.line_groups`; equal bit for bit)."""
    shape = np.broadcast(*[np.asarray(v) for k, v in config.items() if k != "options"]).shape
    totals = _grouped_totals(spec, config) if len(shape) == 1 else None
    return _evaluate(spec, config, keep_lines=False)["total_bytes"] if totals is None else totals


__all__ = ["STAGE_KEYS", "formula_inputs", "memory_batch", "memory_worst_stage_bytes_batch"]
