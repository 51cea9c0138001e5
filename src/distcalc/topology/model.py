"""Topology data model: links and the :class:`TopologyLayout` record, the parameters of a topology and
the facts that follow from its shape alone (see :mod:`distcalc.topology`). Its links and routes are
:mod:`distcalc.topology.wiring`; the two together are :class:`distcalc.topology.graph.Topology`."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Hashable, Sequence

from distcalc.errors import TopologyError
from distcalc.topology.kinds import TopologyKind, kind_traits

NodeId = Hashable

DEFAULT_GPUS_PER_LEAF = 32


class LinkTier(str, enum.Enum):
    """Which network a link belongs to."""

    DIRECT = "direct"  # GPU-to-GPU wire (ring, mesh, torus)
    SWITCH = "switch"  # GPU port to a crossbar / leaf switch
    UPLINK = "uplink"  # leaf (tree) or rail (hierarchical) switch to spine
    INTRA = "intra"  # GPU to NVLink switch (hierarchical)
    INTER = "inter"  # GPU NIC to rail switch (hierarchical)


@dataclass(frozen=True)
class Link:
    """One directed physical link: ``bandwidth_bytes_per_s`` in this direction, ``latency_s`` per traversal."""

    src: NodeId
    dst: NodeId
    bandwidth_bytes_per_s: float
    latency_s: float
    tier: LinkTier


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse ``"8x8"`` / ``"4x4x4"`` into a tuple of ints; raises :class:`TopologyError` on bad input."""
    try:
        dims = tuple(int(part) for part in str(text).lower().replace("×", "x").split("x"))
    except ValueError:
        raise TopologyError(f"invalid --shape {text!r}: expected dimensions like 8x8 or 4x4x4") from None
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise TopologyError(f"invalid --shape {text!r}: expected 1 to 3 positive dimensions like 8x8 or 4x4x4")
    return dims


def most_square_shape(gpus: int, ndims: int = 2) -> tuple[int, ...]:
    """Default mesh/torus shape (docs/spec/collectives.md §4.6): 2D n_y = largest divisor ≤ √N, n_x = N/n_y (n_x ≥ n_y);
    3D: n_x ≥ n_y ≥ n_z, minimising n_x, then n_y. Prime N degenerates to N×1 (1D)."""
    if ndims == 1:
        return (gpus,)
    if ndims == 2:
        n_y = max(d for d in range(1, math.isqrt(gpus) + 1) if gpus % d == 0)
        return (gpus // n_y, n_y)
    best: tuple[int, int, int] | None = None
    for n_z in range(1, round(gpus ** (1 / 3)) + 2):
        if gpus % n_z:
            continue
        rest = gpus // n_z
        for n_y in range(n_z, math.isqrt(rest) + 1):
            if rest % n_y:
                continue
            n_x = rest // n_y
            candidate = (n_x, n_y, n_z)
            if best is None or (candidate[0], candidate[1]) < (best[0], best[1]):
                best = candidate
    return best if best is not None else (gpus, 1, 1)


@dataclass(frozen=True)
class TopologyLayout:
    """The parameters of a topology and the facts that follow from its shape (fields carry units). Built as a
    :class:`~distcalc.topology.graph.Topology` by :func:`~distcalc.topology.build.make_topology`."""

    kind: TopologyKind
    gpus: int
    bandwidth_bytes_per_s: float
    latency_s: float
    shape: tuple[int, ...] | None = None
    gpus_per_node: int | None = None
    inter_bandwidth_bytes_per_s: float | None = None
    inter_latency_s: float | None = None
    in_network_reduction: bool = False
    oversubscription: float = 1.0
    hop_latency_s: float = 0.0
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    # ----------------------------------------------------------------- derived shape facts
    @property
    def dims(self) -> tuple[int, ...]:
        """Mesh/torus/ring dimensions with size-1 dimensions removed (docs/spec/collectives.md §4.4: size 1 is absent)."""
        return tuple(d for d in (self.shape or ()) if d > 1)

    @property
    def wraparound(self) -> bool:
        """True for ring and torus (every dimension closes on itself: :class:`~distcalc.topology.kinds.KindTraits`)."""
        return kind_traits(self.kind).wraparound

    @property
    def nodes(self) -> int:
        """Hierarchical: number of nodes n = N / g. Tree: number of leaves ⌈N / n_l⌉ (the last one may be
        partly filled, :attr:`last_leaf_gpus`). Otherwise 1."""
        if self.kind == TopologyKind.TREE:
            return -(-self.gpus // (self.gpus_per_node or self.gpus))
        if self.kind == TopologyKind.HIERARCHICAL:
            return self.gpus // (self.gpus_per_node or self.gpus)
        return 1

    @property
    def last_leaf_gpus(self) -> int:
        """Tree: GPUs on the last leaf, N − (leaves − 1)·n_l (= n_l unless the last leaf is partly filled)."""
        return self.gpus - (self.nodes - 1) * (self.gpus_per_node or self.gpus)

    @property
    def leaf_layout(self) -> str:
        """Tree: the leaf layout in words, e.g. ``3 leaves × 32 GPUs + 1 leaf × 4 GPUs``."""
        leaf, leaves, last = self.gpus_per_node or self.gpus, self.nodes, self.last_leaf_gpus
        full = leaves if last == leaf else leaves - 1
        parts = [f"{full} lea{'f' if full == 1 else 'ves'} × {leaf} GPU{'' if leaf == 1 else 's'}"] if full else []
        if last != leaf:
            parts.append(f"1 leaf × {last} GPU{'' if last == 1 else 's'}")
        return " + ".join(parts)

    @property
    def intra_bandwidth_bytes_per_s(self) -> float:
        """B1 (hierarchical) — the same as ``bandwidth_bytes_per_s``."""
        return self.bandwidth_bytes_per_s

    @property
    def intra_latency_s(self) -> float:
        """α1 (hierarchical) — the same as ``latency_s``."""
        return self.latency_s

    def coords(self, rank: int) -> tuple[int, ...]:
        """Mesh/torus/ring coordinates of a rank (dimension 0 fastest)."""
        out = []
        for n in self.shape or (self.gpus,):
            out.append(rank % n)
            rank //= n
        return tuple(out)

    def rank_of(self, coords: Sequence[int]) -> int:
        """Inverse of :meth:`coords`."""
        rank, stride = 0, 1
        for c, n in zip(coords, self.shape or (self.gpus,)):
            rank += (c % n) * stride
            stride *= n
        return rank

    def _check_rank(self, rank: int) -> None:
        if not isinstance(rank, int) or not 0 <= rank < self.gpus:
            raise TopologyError(f"rank {rank!r} is not a GPU of this topology (valid: 0..{self.gpus - 1})")

    @property
    def diameter(self) -> int:
        """Largest hop distance between two GPUs."""
        n = self.gpus
        if n == 1:
            return 0
        kind = self.kind
        if kind_traits(kind).direct:  # ring, torus: half way round each dimension; mesh: end to end
            return sum(d // 2 if self.wraparound else d - 1 for d in self.dims)
        if kind == TopologyKind.SWITCH:
            return 2
        if kind == TopologyKind.TREE:
            return 4 if self.nodes > 1 else 2
        g = self.gpus_per_node or n
        if self.nodes == 1:
            return 2
        return 4 if g > 1 else 2

    @property
    def bisection_bandwidth_bytes_per_s(self) -> float:
        """Per-direction bandwidth across the worst even cut (docs/spec/collectives.md §3): torus 2·N/max(n_i)·B (1·… for a
        largest dimension of 2), mesh N/max(n_i)·B, ring 2B, switch (N/2)·B, tree min((N/2)·B, (N/2)·B/s),
        hierarchical (N/2)·B2 across nodes or (g/2)·B1 inside one node."""
        n, bw = self.gpus, self.bandwidth_bytes_per_s
        if n == 1:
            return 0.0
        kind = self.kind
        if kind_traits(kind).direct:
            dims = self.dims
            longest = max(dims)
            per_row = 2 if (self.wraparound and longest >= 3) else 1
            return per_row * (n // longest) * bw
        if kind == TopologyKind.SWITCH:
            return n / 2 * bw
        if kind == TopologyKind.TREE:
            return n / 2 * bw / (self.oversubscription if self.nodes > 1 else 1.0)
        if self.nodes == 1:
            return n / 2 * bw
        return n / 2 * float(self.inter_bandwidth_bytes_per_s)

    def describe(self) -> dict:
        """Plain dict for JSON output (``kind``, ``gpus`` and the parameters that apply)."""
        out: dict = {"kind": self.kind.value, "gpus": self.gpus}
        if self.kind == TopologyKind.HIERARCHICAL:
            out.update(gpus_per_node=self.gpus_per_node, nodes=self.nodes,
                       intra_bandwidth_bytes_per_s=self.bandwidth_bytes_per_s, intra_latency_s=self.latency_s,
                       inter_bandwidth_bytes_per_s=self.inter_bandwidth_bytes_per_s,
                       inter_latency_s=self.inter_latency_s)
        else:
            out.update(bandwidth_bytes_per_s=self.bandwidth_bytes_per_s, latency_s=self.latency_s)
        if self.shape is not None and kind_traits(self.kind).shaped:
            out["shape"] = list(self.shape)
        if self.kind == TopologyKind.TREE:
            out.update(gpus_per_leaf=self.gpus_per_node, leaves=self.nodes, last_leaf_gpus=self.last_leaf_gpus,
                       leaf_layout=self.leaf_layout, oversubscription=self.oversubscription)
        if kind_traits(self.kind).in_network_reduction:
            out["in_network_reduction"] = self.in_network_reduction
        out["diameter_hops"] = self.diameter
        out["bisection_bandwidth_bytes_per_s"] = self.bisection_bandwidth_bytes_per_s
        return out
