"""Worst-stage totals of many configurations with each memory line computed once per distinct value of the
batch fields it reads (the search's memory pass).

A configuration's total on a stage (:func:`distcalc.memory.stage.stage_lines`) is, in this order,

    subtotal = weights + gradients + optimizer + activations + dummies + comm + context
    total    = subtotal + reserve_fraction·subtotal + step_buffers

and its lines read disjoint-enough parts of the configuration:

* the **state lines** (weights, gradients, optimizer, TE dummy weight gradients, communication buffers, CUDA
  context, optimizer-step buffers) read the layers the stage holds and the sharding — :data:`STATE_FIELDS`
  (tp, pp, vpp, schedule, the pipeline split and uneven ends, dp, cp, ep, ZeRO stage), never the
  micro-batch, the sequence, recompute, sequence parallelism or flash attention;
* the **activation line** reads the stage's layers, the micro-batches in flight and the tokens —
  :data:`ACTIVATION_FIELDS` (the same pipeline fields, dp and cp, micro-batch, global batch, sequence length,
  sequence parallelism, recompute, flash attention), never ep or the ZeRO stage.

The candidate stages of a row (:mod:`distcalc.memory.batch`) are a function of (pp, vpp, split, uneven ends),
fields of both groups. A search space is close to the product of these fields, so each group has far fewer
distinct values than the space has rows (Mixtral 8x7B on 4,096 GPUs: about 980,000 rows; see the benchmark).
:func:`grouped_worst_totals` evaluates the state lines once per distinct state key and the activation lines once per
distinct activation key (on one representative row each), then adds the lines per row in the order above: every row
gets the same float64 operations on the same values as when :func:`stage_lines` runs on every row, so the
totals are equal bit for bit (tests compare them with ``memory_batch``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from distcalc.row_groups import lexicographic_codes

#: Pipeline fields both groups read (they fix the candidate stages and the layers each stage holds); the wide
#: ranges first, where the running number of groups is still small.
PIPELINE_FIELDS = ("dp", "cp", "tp", "pp", "vpp", "schedule", "account_for_embedding_and_loss",
                   "first_stage_layers", "last_stage_layers")
#: Batch fields the state lines read (module docstring).
STATE_FIELDS = PIPELINE_FIELDS + ("ep", "zero")
#: Batch fields the activation line reads (module docstring).
ACTIVATION_FIELDS = PIPELINE_FIELDS + ("global_batch", "seq_len", "micro_batch", "sequence_parallel", "recompute",
                                       "flash_attention")
#: Lines of :func:`~distcalc.memory.stage.stage_lines` taken from the state group, in the order they are added.
STATE_LINES = ("weight_gradient_dummies_bytes", "communication_buffers_bytes", "cuda_context_bytes",
               "optimizer_step_buffers_bytes")


def group_codes(columns: dict[str, np.ndarray], names: tuple[str, ...], start=None) -> tuple[np.ndarray, int]:
    """(code per row, number of codes) of the distinct values of the ``names`` columns (int64, 1-d, equal
    lengths; :func:`distcalc.row_groups.lexicographic_codes`); ``start``: (codes, count) of a prefix already
    coded."""
    return lexicographic_codes([columns[name] for name in names], start)


def representatives(code: np.ndarray, count: int) -> np.ndarray:
    """One row index per code (the last row holding it)."""
    rep = np.empty(count, dtype=np.int64)
    rep[code] = np.arange(code.shape[0])
    return rep


def _add(out: np.ndarray, table: np.ndarray, code: np.ndarray) -> None:
    """``out += table[code]``; a table of one value adds that value (the same float, no gather)."""
    if table.size and table.min() == table.max():
        out += table[0]
    else:
        out += table[code]


def grouped_worst_totals(columns: dict[str, np.ndarray], lines_at: Callable[[np.ndarray, str], list[dict]],
                         reserve_fraction: float) -> np.ndarray:
    """Worst-stage total bytes per row. ``columns``: the normalised batch fields (1-d int64);
    ``lines_at(rows, part)``: for every candidate stage (in the order the worst is chosen) of the configurations
    at row indices ``rows``, their state lines (``part`` "state": :func:`~distcalc.memory.stage.stage_state_lines`)
    or their activation lines ("activation": :func:`~distcalc.memory.stage.stage_activation_lines`);
    ``reserve_fraction``: :attr:`MemoryOptions.allocator_reserve_fraction`."""
    prefix = group_codes(columns, PIPELINE_FIELDS)
    state_code, state_count = group_codes(columns, STATE_FIELDS[len(PIPELINE_FIELDS):], prefix)
    act_code, act_count = group_codes(columns, ACTIVATION_FIELDS[len(PIPELINE_FIELDS):], prefix)
    state_lines = lines_at(representatives(state_code, state_count), "state")
    act_lines = lines_at(representatives(act_code, act_count), "activation")
    best = None
    for states, acts in zip(state_lines, act_lines):
        model_states = np.broadcast_to(states["weights_bytes"] + states["gradients_bytes"] + states["optimizer_bytes"],
                                       (state_count,))
        total = model_states[state_code]
        _add(total, np.broadcast_to(acts["activations_bytes"], (act_count,)), act_code)
        for key in STATE_LINES[:-1]:
            _add(total, np.broadcast_to(states[key], (state_count,)), state_code)
        reserve = reserve_fraction * total
        total += reserve
        _add(total, np.broadcast_to(states[STATE_LINES[-1]], (state_count,)), state_code)
        best = total if best is None else np.maximum(best, total, out=best)
    return best


__all__ = ["ACTIVATION_FIELDS", "STATE_FIELDS", "group_codes", "grouped_worst_totals", "representatives"]
