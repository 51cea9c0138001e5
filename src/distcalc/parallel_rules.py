"""Validity rules of a parallel configuration, written once and applied to scalars and arrays alike.

Each rule is an elementwise predicate (True where the configuration satisfies it) on plain integers or NumPy
arrays. :class:`~distcalc.parallel.ParallelConfig` and :func:`~distcalc.parallel.validate_for_model` apply
them to one configuration and raise :class:`~distcalc.errors.ConfigError` with a message naming the values;
the search (:func:`distcalc.search.space.enumerate_space`) applies the same predicates to its columns and
counts the rows each one drops. The rules are Megatron-LM's constraints (see each function).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from distcalc.model import ModelSpec

ArrayLike = Any  # int | numpy.ndarray (elementwise)


def divides(value: ArrayLike, degree: ArrayLike) -> ArrayLike:
    """``value % degree == 0`` (a sharded width by its parallel degree, the global batch by micro_batch·dp)."""
    return np.asarray(value) % degree == 0


def tp_sharded_widths(spec: "ModelSpec") -> list[tuple[str, int]]:
    """The widths tensor parallelism shards, hence that ``tp`` must divide (Megatron-core ``divide``): heads,
    KV heads, hidden and MLP widths, and the expert MLP width of an MoE model; as (config field, value)."""
    widths = [("num_attention_heads", spec.num_attention_heads), ("num_key_value_heads", spec.kv_heads),
              ("hidden_size", spec.hidden_size), ("intermediate_size", spec.intermediate_size)]
    if spec.is_moe:
        widths.append(("moe_intermediate_size", spec.expert_intermediate_size))
    return widths


def layers_fit(layers: int, pp: ArrayLike, chunks: ArrayLike, split: ArrayLike) -> ArrayLike:
    """Whether ``layers`` transformer layers cut into ``chunks`` equal model chunks over ``pp`` stages
    (chunks = pp·vpp, twice that on a V-shaped schedule): ``L % chunks == 0``; with ``split`` (the embedding
    and the loss take a layer slot each, Megatron-Core ``--account-for-embedding-in-pipeline-split`` /
    ``--account-for-loss-in-pipeline-split``) and pp > 1, ``(L + 2) % chunks == 0`` with at least 2 slots
    per stage instead."""
    slots = layers + 2
    with_split = (slots % np.asarray(chunks) == 0) & (slots // np.asarray(pp) >= 2)
    return np.where(np.asarray(split, dtype=bool) & (np.asarray(pp) > 1), with_split,
                    layers % np.asarray(chunks) == 0)


def uneven_fits(layers: int, pp: ArrayLike, first: ArrayLike, last: ArrayLike) -> ArrayLike:
    """Whether, with ``first``/``last`` layers on the end stages (0: not given; Megatron-Core
    ``--decoder-first/last-pipeline-num-layers``), the other L − first − last layers split evenly, at least
    one each, over the remaining stages of ``pp`` (pp ≥ 2); pp = 1 always fits (the ends do not apply)."""
    p = np.asarray(pp)
    given = np.where(np.asarray(first) > 0, 1, 0) + np.where(np.asarray(last) > 0, 1, 0)
    rest, others = layers - np.asarray(first) - np.asarray(last), p - given
    safe = np.maximum(others, 1)
    ok = np.where(others == 0, rest == 0, (rest >= others) & (rest % safe == 0))
    return (p == 1) | ((p >= 2) & (rest >= 0) & ok)


def cp_splits_sequence(seq_len: ArrayLike, cp: ArrayLike) -> ArrayLike:
    """Context parallelism cuts the sequence into 2·cp load-balanced chunks (Megatron
    ``get_batch_on_this_cp_rank``): ``seq_len % (2·cp) == 0`` when cp > 1."""
    c = np.asarray(cp)
    return (c == 1) | (np.asarray(seq_len) % (2 * c) == 0)


def sp_splits_sequence(seq_len: ArrayLike, cp: ArrayLike, tp: ArrayLike) -> ArrayLike:
    """Sequence parallelism splits the local sequence ``seq_len / cp`` across the TP group: divisible by tp."""
    return (np.asarray(seq_len) // np.asarray(cp)) % np.asarray(tp) == 0


__all__ = ["cp_splits_sequence", "divides", "layers_fit", "sp_splits_sequence", "tp_sharded_widths", "uneven_fits"]
