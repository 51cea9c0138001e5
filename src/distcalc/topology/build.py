"""Validated construction of topologies: :func:`make_topology` and the :class:`TopologySpec` input model."""

from __future__ import annotations

import math
from typing import Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field

from distcalc.errors import TopologyError
from distcalc.topology.graph import Topology
from distcalc.topology.kinds import TopologyKind, kind_traits, kinds_with
from distcalc.topology.model import DEFAULT_GPUS_PER_LEAF, most_square_shape, parse_shape


def make_topology(
    kind: TopologyKind | str,
    gpus: int,
    bandwidth_bytes_per_s: float = 100e9,
    latency_s: float = 5e-6,
    shape: Sequence[int] | str | None = None,
    gpus_per_node: int | None = None,
    inter_bandwidth_bytes_per_s: float | None = None,
    inter_latency_s: float | None = None,
    in_network_reduction: bool = False,
    oversubscription: float = 1.0,
    hop_latency_s: float = 0.0,
) -> Topology:
    """Build and validate a topology. Raises :class:`TopologyError` naming the bad value.

    ``bandwidth_bytes_per_s``/``latency_s`` are B/α (B1/α1 for hierarchical); ``inter_*`` default to the
    intra values. ``shape`` (mesh/torus only) is a tuple or ``"8x8"``; default most-square 2D.
    ``gpus_per_node`` is g for hierarchical (default 8, or N if N < 8) and GPUs per leaf for tree (default and
    partly filled last leaf: :func:`tree_leaf_size`).
    """
    try:
        kind = TopologyKind(kind)
    except ValueError:
        valid = ", ".join(k.value for k in TopologyKind)
        raise TopologyError(f"unknown topology {kind!r}: valid topologies are {valid}") from None
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise TopologyError(f"invalid --gpus {gpus!r}: must be a positive integer")
    traits = kind_traits(kind)
    _check_positive("--bandwidth" if not traits.two_tier else "--intra-bandwidth", bandwidth_bytes_per_s)
    _check_nonnegative("--latency" if not traits.two_tier else "--intra-latency", latency_s)
    _check_nonnegative("hop latency", hop_latency_s)
    dims: tuple[int, ...] | None = None
    if shape is not None and not traits.shaped:
        raise TopologyError(f"--shape {_fmt_shape(shape)} applies only to {kinds_with('shaped')}, not {kind.value}")
    if traits.shaped:
        dims = parse_shape(shape) if isinstance(shape, str) else (
            tuple(int(d) for d in shape) if shape is not None else most_square_shape(gpus))
        if shape is not None and (not 1 <= len(dims) <= 3 or any(d < 1 for d in dims)):
            raise TopologyError(f"invalid --shape {_fmt_shape(dims)}: expected 1 to 3 positive dimensions")
        if math.prod(dims) != gpus:
            raise TopologyError(
                f"--shape {_fmt_shape(dims)} has {math.prod(dims)} GPUs but --gpus is {gpus}")
    elif kind == TopologyKind.RING:
        dims = (gpus,)
    if kind == TopologyKind.HIERARCHICAL:
        g = gpus_per_node if gpus_per_node is not None else min(8, gpus)
        if isinstance(g, bool) or not isinstance(g, int) or g < 1:
            raise TopologyError(f"invalid --gpus-per-node {g!r}: must be a positive integer")
        if gpus % g:
            raise TopologyError(f"--gpus {gpus} is not a multiple of --gpus-per-node {g}")
        gpus_per_node = g
        inter_bandwidth_bytes_per_s = (bandwidth_bytes_per_s if inter_bandwidth_bytes_per_s is None
                                       else inter_bandwidth_bytes_per_s)
        inter_latency_s = latency_s if inter_latency_s is None else inter_latency_s
        _check_positive("--inter-bandwidth", inter_bandwidth_bytes_per_s)
        _check_nonnegative("--inter-latency", inter_latency_s)
    elif kind == TopologyKind.TREE:
        gpus_per_node = tree_leaf_size(gpus, gpus_per_node)
        if not (math.isfinite(oversubscription) and oversubscription >= 1):
            raise TopologyError(f"invalid oversubscription {oversubscription!r}: must be >= 1 (1 = full bisection)")
    elif gpus_per_node is not None:
        raise TopologyError(
            f"--gpus-per-node {gpus_per_node} applies only to {kinds_with('node_option')}, not {kind.value}")
    if not traits.two_tier and (inter_bandwidth_bytes_per_s is not None or inter_latency_s is not None):
        raise TopologyError(f"--inter-bandwidth/--inter-latency apply only to {kinds_with('two_tier')}, "
                            f"not {kind.value}")
    if in_network_reduction and not traits.in_network_reduction:
        raise TopologyError(f"--in-network-reduction applies only to the {kinds_with('in_network_reduction')} "
                            f"topology, not {kind.value}")
    return Topology(kind=kind, gpus=gpus, bandwidth_bytes_per_s=float(bandwidth_bytes_per_s),
                    latency_s=float(latency_s), shape=dims, gpus_per_node=gpus_per_node,
                    inter_bandwidth_bytes_per_s=None if inter_bandwidth_bytes_per_s is None
                    else float(inter_bandwidth_bytes_per_s),
                    inter_latency_s=None if inter_latency_s is None else float(inter_latency_s),
                    in_network_reduction=bool(in_network_reduction), oversubscription=float(oversubscription),
                    hop_latency_s=float(hop_latency_s))


def tree_leaf_size(gpus: int, gpus_per_leaf: int | None) -> int:
    """GPUs per leaf switch of a tree (leaf-spine fat tree) of ``gpus`` GPUs; ranks fill leaves in order.

    Not given: one leaf of N GPUs when N ≤ 32 (spec A12's leaf size), else 32 per leaf with a partially
    populated last leaf of N mod 32 GPUs when 32 does not divide N — a fabric of 32-GPU leaf switches where the
    last switch is not full (any N ≥ 1 works, primes included). Given: a size that divides N, or any power of
    two (then the last leaf holds the remainder; a leaf larger than N is one partly used leaf). Other sizes
    that do not divide N are refused: the fat-tree traffic formulas (:mod:`distcalc.collective.fat_tree`)
    rely on leaf boundaries at multiples of the leaf size for the binomial and XOR partner patterns, which a
    power of two guarantees (2·distance divides the leaf size for every distance below it).
    """
    if gpus_per_leaf is None:
        return min(DEFAULT_GPUS_PER_LEAF, gpus)
    leaf = gpus_per_leaf
    if isinstance(leaf, bool) or not isinstance(leaf, int) or leaf < 1:
        raise TopologyError(f"invalid --gpus-per-node {leaf!r} (GPUs per leaf): must be a positive integer")
    if gpus % leaf and leaf & (leaf - 1):
        raise TopologyError(f"--gpus {gpus} is not a multiple of --gpus-per-node {leaf} (GPUs per leaf): use a "
                            f"divisor of {gpus}, a power of two (partly filled last leaf) or omit it "
                            f"({DEFAULT_GPUS_PER_LEAF} per leaf)")
    return leaf


def _fmt_shape(shape: Sequence[int] | str) -> str:
    return shape if isinstance(shape, str) else "x".join(str(d) for d in shape)


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise TopologyError(f"invalid {name} {value!r}: must be a positive rate in bytes/s")


def _check_nonnegative(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise TopologyError(f"invalid {name} {value!r}: must be a non-negative time in seconds")



class TopologySpec(BaseModel):
    """A topology as a user (YAML preset, JSON, CLI) describes it; :meth:`build` validates it fully."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built when a user topology is read

    kind: TopologyKind = Field(description="ring, tree, switch, hierarchical, mesh or torus")
    gpus: int = Field(ge=1, description="number of GPUs (ranks) N")
    bandwidth_bytes_per_s: float = Field(100e9, gt=0, description="B (B1 on hierarchical), bytes/s per link "
                                         "per direction")
    latency_s: float = Field(5e-6, ge=0, description="α (α1 on hierarchical), seconds per step")
    shape: Optional[tuple[int, ...]] = Field(None, description="mesh/torus dimensions, e.g. (8, 8)")
    gpus_per_node: Optional[int] = Field(None, ge=1, description="g on hierarchical; GPUs per leaf on tree")
    inter_bandwidth_bytes_per_s: Optional[float] = Field(None, gt=0, description="B2, bytes/s per NIC per "
                                                         "direction (hierarchical)")
    inter_latency_s: Optional[float] = Field(None, ge=0, description="α2, seconds (hierarchical)")
    in_network_reduction: bool = Field(False, description="switch with NVLS/SHARP in-network reduction")
    oversubscription: float = Field(1.0, ge=1, description="tree: leaf uplink oversubscription s (s:1)")

    def build(self) -> Topology:
        """The :class:`Topology` (raises :class:`TopologyError` naming the bad value)."""
        return make_topology(**self.model_dump())
