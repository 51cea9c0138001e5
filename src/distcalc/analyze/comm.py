"""Communication time of message lists on the groups of many configurations at once.

A message's time depends on its size (an array over configurations) and on the topology of the group it
runs on, which depends only on a few degrees (TP: tp; DP: tp, cp, dp; …). :func:`message_times` groups
the configurations by those degrees (few distinct values), builds each placement once
(:func:`distcalc.placement.group_placement`) and evaluates the collective cost on the array of sizes.

Calibration (``distcalc calibrate``, :mod:`distcalc.calibration`): a :class:`CalibratedCluster` carries a
calibration, and every collective on a group whose tier was measured runs on α and B fitted for that
collective kind (:func:`calibrated_placement`). Link efficiency η: a placement's topology holds ``η·B`` of
the preset links; a measured tier's α and B *replace* those values and η is not applied on top (the
measurement already contains whatever the link and the library lose), nor is the NCCL pipeline-fill term
of :func:`distcalc.placement.effective_time_s` (the fitted ``t = a + c·M`` already contains the fill: it
is constant in M for large messages and linear for small ones). Tiers the calibration did not measure
keep ``η·B``, α and the fill term of the preset.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from distcalc.calibration import Calibration, calibrated_topology
from distcalc.cluster import ClusterSpec
from distcalc.placement import (GroupPlacement, algorithm_name, effective_time_elementwise_s, effective_time_s,
                                group_placement, parse_order, strides)
from distcalc.ops import SCALAR, array_of_shape, scalar_inputs
from distcalc.shaped import float_of_shape
from distcalc.traffic import Comm, Dim, Message

#: Tier whose link sets a placement's pipeline-fill term (its slowest tier, see :mod:`distcalc.placement`).
FILL_TIER = {"intra": "intra", "inter": "inter", "hierarchical": "inter"}


class CalibratedCluster(ClusterSpec):
    """A cluster whose collectives use the α and B that ``distcalc calibrate`` fitted (module docstring)."""

    calibration: Calibration = Field(exclude=True, description="fits replacing η·B and α of measured tiers")

    def __hash__(self) -> int:  # the calibration is mutable: identity, like the lru caches expect
        return hash((self.name, id(self.calibration)))


def with_calibration(cluster: ClusterSpec, calibration: Calibration | None) -> ClusterSpec:
    """``cluster`` carrying ``calibration`` (unchanged without one or without collective fits)."""
    if calibration is None or not calibration.fits:
        return cluster
    fields = {name: getattr(cluster, name) for name in ClusterSpec.model_fields}
    return CalibratedCluster(**fields, calibration=calibration)


def measured_tiers(calibration: Calibration) -> set[str]:
    """Tiers (``intra``, ``inter``) the calibration has collective fits for."""
    return {fit.tier for fit in calibration.collective_fits()}


def calibrated_placement(placement: GroupPlacement, kind: Comm, calibration: Calibration,
                         size_bytes: float | None = None) -> GroupPlacement:
    """``placement`` with the fitted α and B of ``kind`` on its measured tiers (module docstring).

    Flat groups take the fit of their own tier (``intra``: one node; ``inter``: one GPU per node, the
    ``bench collectives`` inter tier); hierarchical groups go through
    :func:`distcalc.calibration.calibrated_topology` (``intra`` fit on B1/α1, ``inter`` on B2/α2). When the
    tier that sets the pipeline fill was measured, the fill term is dropped and the algorithm becomes the
    one the fit was made for (where valid on the topology), so that the model reproduces the measured
    times at the measured group size. ``size_bytes`` picks the segment of two-segment fits."""
    if placement.topology is None:
        return placement
    tiers = measured_tiers(calibration)
    topo = placement.topology
    if placement.tier == "hierarchical":
        topo = calibrated_topology(topo, kind.value, calibration, size_bytes)
    elif placement.tier in tiers:
        segment = calibration.fit_for(kind.value, placement.tier).segment_for(size_bytes)
        topo = dataclasses.replace(topo, latency_s=segment["latency_s"],
                                   bandwidth_bytes_per_s=segment["bandwidth_bytes_per_s"])
    fill_tier = FILL_TIER[placement.tier]
    if fill_tier not in tiers:
        return dataclasses.replace(placement, topology=topo)
    fit = calibration.fit_for(kind.value, fill_tier)
    # the fitted t = a + c·M already holds the per-collective overhead, like the fill
    return dataclasses.replace(placement, topology=topo, pipeline_chunk_bytes=0.0, preferred_algorithm=fit.algorithm,
                               collective_overhead_s=0.0, alltoall_bandwidth_scale=1.0)


def segment_bounds(calibration: Calibration) -> np.ndarray:
    """Every finite segment boundary of the calibration's fits (sorted): sizes between two consecutive
    bounds pick the same segment of every fit (:meth:`CollectiveFit.segment_for`)."""
    bounds = {float(s["max_size_bytes"]) for fit in calibration.collective_fits() for s in fit.segments}
    return np.array(sorted(b for b in bounds if np.isfinite(b)))


def calibrated_time_s(kind: Comm, size_bytes: np.ndarray, placement: GroupPlacement, calibration: Calibration,
                      bounds: np.ndarray, cache: dict) -> tuple[np.ndarray, str]:
    """:func:`distcalc.placement.effective_time_s` on the calibrated placement of each size's segment."""
    bins = np.searchsorted(bounds, size_bytes, side="right")
    times = np.zeros(size_bytes.shape)
    algorithm = "none"
    for b in np.unique(bins):
        sel = bins == b
        key = (id(placement), kind, int(b))
        if key not in cache:
            cache[key] = calibrated_placement(placement, kind, calibration, float(size_bytes[sel][0]))
        times[sel], algo = effective_time_s(kind, size_bytes[sel], cache[key])
        algorithm = algo if algorithm == "none" else algorithm
    return times, algorithm


@dataclass(frozen=True)
class GroupKey:
    """Per-configuration group size and stride of one dimension (int arrays)."""

    size: np.ndarray
    stride: np.ndarray


def group_keys(tp: np.ndarray, pp: np.ndarray, dp: np.ndarray, cp: np.ndarray, ep: np.ndarray,
               order: str) -> dict[Dim, GroupKey]:
    """Size and stride of the group of each dimension (the rank layout of :mod:`distcalc.placement`).
    DP gradient groups span dp·cp (Megatron reduces gradients over data × context parallel ranks);
    the PP entry is one stage boundary (2 ranks at the PP stride). One configuration (every degree a single
    number) is laid out on Python integers (:mod:`distcalc.ops`), the same formula, and returned as arrays
    of the degrees' shape."""
    one = scalar_inputs(tp, pp, dp, cp, ep)
    if one is not None:
        values, shape = one
        return {dim: GroupKey(array_of_shape(size, shape), array_of_shape(stride, shape))
                for dim, (size, stride) in _group_layout(*values, order, SCALAR).items()}
    ones = np.ones_like(tp)
    return {dim: GroupKey(size * ones if dim is Dim.PP else size, stride * ones)
            for dim, (size, stride) in _group_layout(tp, pp, dp, cp, ep, order, np).items()}


def _group_layout(tp: Any, pp: Any, dp: Any, cp: Any, ep: Any, order: str, xp: Any) -> dict[Dim, tuple[Any, Any]]:
    """(size, stride) of each dimension's group (:func:`group_keys`), in the namespace ``xp``."""
    order_t = parse_order(order)
    sizes = {"tp": tp, "cp": cp, "dp": dp, "pp": pp}
    stride = strides(sizes, order_t)
    inner = "cp" if order_t.index("cp") < order_t.index("dp") else "dp"
    outer = "dp" if inner == "cp" else "cp"
    adjacent = order_t.index(outer) == order_t.index(inner) + 1
    dp_stride = xp.where(cp > 1, stride[inner], stride["dp"]) if adjacent else stride["dp"]
    dp_size = dp * cp if adjacent else dp
    return {
        Dim.TP: (tp, stride["tp"]),
        Dim.CP: (cp, stride["cp"]),
        Dim.DP: (dp_size, dp_stride),
        Dim.EP: (ep, dp_stride),  # the expert group is laid out like the DP group (same stride)
        Dim.PP: (xp.where(pp > 1, 2, 1), stride["pp"]),
    }


def _encode(size: np.ndarray, stride: np.ndarray) -> np.ndarray:
    return np.asarray(size, dtype=np.int64) * (1 << 32) + np.asarray(stride, dtype=np.int64)


def placements(cluster: ClusterSpec, dim: Dim, key: GroupKey,
               memo: dict | None = None) -> tuple[np.ndarray, list[GroupPlacement]]:
    """(inverse index per configuration, placement per distinct (size, stride)). ``memo``: a dict shared
    by the calls of ONE evaluation on ``cluster`` (each placement is then built once per evaluation)."""
    codes = _encode(key.size, key.stride)
    if codes.size == 1:  # one configuration (analyze): one group
        unique, inverse = codes.ravel(), np.zeros(codes.shape, dtype=np.intp)
    else:
        unique, inverse = np.unique(codes.ravel(), return_inverse=True)
    memo = {} if memo is None else memo
    groups = []
    for u in unique.tolist():
        if (dim, u) not in memo:
            memo[(dim, u)] = group_placement(cluster, dim, u >> 32, u & 0xFFFFFFFF)
        groups.append(memo[(dim, u)])
    return inverse.reshape(codes.shape), groups


def cost_signature(placement: GroupPlacement) -> tuple:
    """What :func:`distcalc.placement.effective_time_s` reads of a placement: groups of any dimension and
    stride with equal signatures cost the same, so their sizes are priced in one call."""
    return (placement.topology, placement.size, placement.pipeline_chunk_bytes,
            placement.fill_bandwidth_bytes_per_s, placement.preferred_algorithm, placement.collective_overhead_s,
            placement.alltoall_bandwidth_scale)


def message_times(cluster: ClusterSpec, messages: list[Message], keys: dict[Dim, GroupKey],
                  shape: tuple[int, ...], memo: dict | None = None) -> list[tuple[Message, np.ndarray, list[str]]]:
    """Time of ONE instance of each message for every configuration (seconds, array of ``shape``), with the
    algorithm chosen per distinct group (for reports). On a :class:`CalibratedCluster` the collectives use
    the calibrated α and B (:func:`calibrated_placement`). ``memo``: see :func:`placements`.

    Without a calibration the messages of one collective kind are priced together: one
    :func:`distcalc.placement.effective_time_elementwise_s` call per (kind, :func:`cost_signature`) on the
    concatenated sizes (elementwise, so each element gets the same float64 operations as alone)."""
    cache: dict[Dim, tuple[np.ndarray, list[GroupPlacement], list[np.ndarray], list[int]]] = {}
    signatures: dict[tuple, int] = {}  # each distinct cost signature numbered once (hashed per group, not per message)
    calibration = cluster.calibration if isinstance(cluster, CalibratedCluster) else None
    bounds = segment_bounds(calibration) if calibration is not None else None
    calibrated: dict = {}
    masks: list[list[np.ndarray]] = []
    prepared = []
    for message in messages:
        if message.dim not in cache:
            inverse, groups = placements(cluster, message.dim, keys[message.dim], memo)
            cache[message.dim] = (inverse, groups, [inverse == index for index in range(len(groups))],
                                  [signatures.setdefault(cost_signature(placement), len(signatures))
                                   for placement in groups])
        _, groups, in_group, _ = cache[message.dim]
        sizes = float_of_shape(message.size_bytes, shape)
        active = float_of_shape(message.count, shape) > 0
        # one group (one configuration, or all on the same group): everyone is in it, the mask is ``active``
        masks.append([active] if len(in_group) == 1 else [g & active for g in in_group])
        prepared.append(sizes)
    times_out = [np.zeros(shape) for _ in messages]
    algorithms: list[list[str]] = [[] for _ in messages]
    def per_group(price) -> None:
        """Price each message on each of its groups with ``price(kind, sizes, placement)``."""
        for i, message in enumerate(messages):
            for index, placement in enumerate(cache[message.dim][1]):
                mask = masks[i][index]
                if not mask.any():
                    algorithms[i].append("none")
                    continue
                t, algorithm = price(message.collective, prepared[i][mask], placement)
                times_out[i][mask] = t
                algorithms[i].append(algorithm)

    # opt-in: a cluster priced by its own model per group (analyze.collective_models); looked up on the class,
    # where a miss is cheap (a pydantic instance answers a missing attribute through its __getattr__)
    model_time_s = getattr(type(cluster), "collective_time_s", None)
    if model_time_s is not None:
        per_group(lambda kind, sizes, placement: model_time_s(cluster, kind, sizes, placement))
    elif calibration is None:
        # one call per (collective kind, distinct placement cost inputs), over every dimension and message
        buckets: dict[tuple, list[tuple[int, int]]] = {}
        for i, message in enumerate(messages):
            for index, signature in enumerate(cache[message.dim][3]):
                buckets.setdefault((message.collective, signature), []).append((i, index))
        slots = [["none"] * len(cache[message.dim][1]) for message in messages]
        one = all(n == 1 for n in shape)  # one configuration: a message is priced whole or not at all
        for (kind, _), members in buckets.items():
            if one:  # its size itself, no boolean-mask copy
                used = [(i, index, prepared[i].reshape(1)) for i, index in members if masks[i][index].item()]
            else:
                used = [(i, index, prepared[i][masks[i][index]]) for i, index in members]
                used = [entry for entry in used if entry[2].size]
            if not used:
                continue
            placement = cache[messages[used[0][0]].dim][1][used[0][1]]
            sizes = np.concatenate([part for _, _, part in used]) if len(used) > 1 else used[0][2]
            t, algo = effective_time_elementwise_s(kind, sizes, placement)
            offset = 0
            for i, index, part in used:
                if one:  # the message's time in its own array of the configuration's shape
                    times_out[i] = t[offset:offset + 1].reshape(shape)
                else:
                    times_out[i][masks[i][index]] = t[offset:offset + part.size]
                slots[i][index] = algorithm_name(algo, offset)
                offset += part.size
        algorithms = slots
    else:
        per_group(lambda kind, sizes, placement: calibrated_time_s(kind, sizes, placement, calibration, bounds,
                                                                   calibrated))
    return [(message, times_out[i], algorithms[i]) for i, message in enumerate(messages)]


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
