"""Communication time of message lists on the groups of many configurations at once.

A message's time depends on its size (an array over configurations) and on the topology of the group it
runs on, which depends only on a few degrees (TP: tp; DP: tp, cp, dp; …). :func:`message_times` groups
the configurations by those degrees (few distinct values), builds each placement once
(:func:`distcalc.placement.group_placement`) and evaluates the collective cost on the array of sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from distcalc.cluster import ClusterSpec
from distcalc.placement import GroupPlacement, effective_time_s, group_placement, parse_order, strides
from distcalc.traffic import Dim, Message


@dataclass(frozen=True)
class GroupKey:
    """Per-configuration group size and stride of one dimension (int arrays)."""

    size: np.ndarray
    stride: np.ndarray


def group_keys(tp: np.ndarray, pp: np.ndarray, dp: np.ndarray, cp: np.ndarray, ep: np.ndarray,
               order: str) -> dict[Dim, GroupKey]:
    """Size and stride of the group of each dimension (the rank layout of :mod:`distcalc.placement`).
    DP gradient groups span dp·cp (Megatron reduces gradients over data × context parallel ranks);
    the PP entry is one stage boundary (2 ranks at the PP stride)."""
    order_t = parse_order(order)
    sizes = {"tp": tp, "cp": cp, "dp": dp, "pp": pp}
    stride = strides(sizes, order_t)
    inner = "cp" if order_t.index("cp") < order_t.index("dp") else "dp"
    outer = "dp" if inner == "cp" else "cp"
    adjacent = order_t.index(outer) == order_t.index(inner) + 1
    one = np.ones_like(tp)
    dp_stride = np.where(cp > 1, stride[inner], stride["dp"]) if adjacent else stride["dp"]
    dp_size = dp * cp if adjacent else dp
    return {
        Dim.TP: GroupKey(tp, stride["tp"] * one),
        Dim.CP: GroupKey(cp, stride["cp"] * one),
        Dim.DP: GroupKey(dp_size, dp_stride * one),
        Dim.EP: GroupKey(ep, np.where(cp > 1, stride[inner], stride["dp"]) * one if adjacent else stride["dp"] * one),
        Dim.PP: GroupKey(np.where(pp > 1, 2, 1) * one, stride["pp"] * one),
    }


def _encode(size: np.ndarray, stride: np.ndarray) -> np.ndarray:
    return np.asarray(size, dtype=np.int64) * (1 << 32) + np.asarray(stride, dtype=np.int64)


def placements(cluster: ClusterSpec, dim: Dim, key: GroupKey) -> tuple[np.ndarray, list[GroupPlacement]]:
    """(inverse index per configuration, placement per distinct (size, stride))."""
    codes = _encode(key.size, key.stride)
    unique, inverse = np.unique(codes.ravel(), return_inverse=True)
    groups = [group_placement(cluster, dim, int(u >> 32), int(u & 0xFFFFFFFF)) for u in unique]
    return inverse.reshape(codes.shape), groups


def message_times(cluster: ClusterSpec, messages: list[Message], keys: dict[Dim, GroupKey],
                  shape: tuple[int, ...]) -> list[tuple[Message, np.ndarray, list[str]]]:
    """Time of ONE instance of each message for every configuration (seconds, array of ``shape``), with the
    algorithm chosen per distinct group (for reports)."""
    cache: dict[Dim, tuple[np.ndarray, list[GroupPlacement]]] = {}
    out = []
    for message in messages:
        if message.dim not in cache:
            cache[message.dim] = placements(cluster, message.dim, keys[message.dim])
        inverse, groups = cache[message.dim]
        sizes = np.broadcast_to(np.asarray(message.size_bytes, dtype=float), shape)
        counts = np.broadcast_to(np.asarray(message.count, dtype=float), shape)
        times = np.zeros(shape)
        algorithms = []
        for index, placement in enumerate(groups):
            mask = (inverse == index) & (counts > 0)
            if not mask.any():
                algorithms.append("none")
                continue
            t, algorithm = effective_time_s(message.collective, sizes[mask], placement)
            times[mask] = t
            algorithms.append(algorithm)
        out.append((message, times, algorithms))
    return out


def group_of(cluster: ClusterSpec, dim: Dim, key: GroupKey, index: int = 0) -> GroupPlacement:
    """The placement of configuration ``index`` (for single-configuration reports)."""
    return group_placement(cluster, dim, int(np.ravel(key.size)[index]), int(np.ravel(key.stride)[index]))


def total(entries: list[tuple[Message, np.ndarray, Any]], select) -> np.ndarray:
    """Σ count × time over the messages ``select(message)`` accepts."""
    result = 0.0
    for message, times, _ in entries:
        if select(message):
            result = result + np.asarray(message.count, dtype=float) * times
    return np.asarray(result, dtype=float)
