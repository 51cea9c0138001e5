"""Shared types of the collective cost model: collective kinds, algorithm names, the cost record.

Conventions (docs/design.md §2, docs/spec/collectives.md §1/§4): M (``size_bytes``) follows NCCL/nccl-tests
(AllReduce/Broadcast/Reduce: the buffer; ReduceScatter: the input; AllGather: the output; Gather: the root's
output; Scatter: the root's input; AllToAll: the per-rank send buffer incl. the self block). B is per link per
direction, α the cost of one step. γ (reduction cost) is taken as 0, as in the spec's worked numbers (A1).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np


class CollectiveKind(str, enum.Enum):
    """Collective operations (values are the CLI spellings)."""

    ALL_REDUCE = "all-reduce"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_GATHER = "all-gather"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    GATHER = "gather"
    SCATTER = "scatter"
    ALL_TO_ALL = "all-to-all"


class Algorithm(str, enum.Enum):
    """Algorithm names (values are the CLI spellings). Which apply depends on collective × topology."""

    RING = "ring"
    BIDIRECTIONAL_RING = "bidirectional-ring"
    BUCKET = "bucket"
    BINOMIAL_TREE = "binomial-tree"
    DOUBLE_BINARY_TREE = "double-binary-tree"
    RECURSIVE_DOUBLING = "recursive-doubling"
    RECURSIVE_HALVING = "recursive-halving"
    RABENSEIFNER = "rabenseifner"
    BRUCK = "bruck"
    PAIRWISE = "pairwise"
    DIRECT = "direct"
    IN_NETWORK = "in-network"
    LINEAR = "linear"
    PIPELINED_CHAIN = "pipelined-chain"
    SCATTER_ALLGATHER = "scatter-allgather"
    MIRRORED_HALVING = "mirrored-halving"
    SWING = "swing"
    DIM_SEQUENTIAL = "dim-sequential"
    DIM_CONCURRENT = "dim-concurrent"
    SNAKE_RING = "snake-ring"
    HIERARCHICAL = "hierarchical"
    RAIL_RING = "rail-ring"
    CHAIN_DBT = "chain-dbt"
    ASTRA_BASELINE = "astra-baseline"
    NCCL_RING = "nccl-ring"
    NCCL_TREE = "nccl-tree"
    P2P = "p2p"


#: Seed-tool and convenience aliases accepted by :func:`parse_algorithm`. The seed's "binary tree" AllReduce
#: 2⌈log2 N⌉(α + M/B) and Broadcast ⌈log2 N⌉(α + M/B) are the binomial tree's costs (F17, F08).
ALGORITHM_ALIASES = {"tree": Algorithm.BINOMIAL_TREE, "binomial": Algorithm.BINOMIAL_TREE,
                     "binary-tree": Algorithm.BINOMIAL_TREE,
                     "dbt": Algorithm.DOUBLE_BINARY_TREE, "nvls": Algorithm.IN_NETWORK,
                     "sharp": Algorithm.IN_NETWORK, "snake": Algorithm.SNAKE_RING}


class Terms(NamedTuple):
    """Raw output of one formula: steps, α-term (s), bandwidth term (s), bytes sent by the busiest GPU.
    Each may be a float or a NumPy array (elementwise in M)."""

    steps: Any
    alpha_term_s: Any
    bw_term_s: Any
    sent_bytes: Any


@dataclass(frozen=True)
class Candidate:
    """An algorithm valid for one (collective, topology): its spec formula id and its cost function of M."""

    algorithm: Algorithm
    formula_id: str
    cost: Callable[[Any], Terms]


@dataclass(frozen=True)
class CollectiveCost:
    """The cost of one collective. Fields are floats, or NumPy arrays when ``size_bytes`` was an array
    (then ``algorithm`` is an object array of :class:`Algorithm` for ``auto``)."""

    collective: CollectiveKind | str
    algorithm: Any
    size_bytes: Any
    gpus: int
    time_s: Any
    latency_term_s: Any
    bandwidth_term_s: Any
    steps: Any
    bytes_sent_per_gpu: Any
    formula_id: Any = ""

    @property
    def latency(self) -> Any:
        """Seed-tool name for :attr:`time_s` (seconds)."""
        return self.time_s

    @property
    def volume(self) -> Any:
        """Seed-tool name for :attr:`bytes_sent_per_gpu`."""
        return self.bytes_sent_per_gpu

    def as_dict(self) -> dict:
        """The CLI/JSON result record (docs/design.md §4 keys)."""
        algorithm = self.algorithm.value if isinstance(self.algorithm, enum.Enum) else self.algorithm
        return {"algorithm": algorithm, "formula_id": self.formula_id, "time_s": self.time_s,
                "latency_term_s": self.latency_term_s, "bandwidth_term_s": self.bandwidth_term_s,
                "steps": self.steps, "bytes_sent_per_gpu": self.bytes_sent_per_gpu}


# --------------------------------------------------------------------------- small numeric helpers
def as_size(size_bytes: Any) -> Any:
    """M as float or float array."""
    if isinstance(size_bytes, (int, float)) or np.ndim(size_bytes) == 0:
        return float(size_bytes)
    return np.asarray(size_bytes, dtype=float)


def ceil_log2(n: int) -> int:
    """L = ⌈log2 N⌉ (0 for N = 1)."""
    return (n - 1).bit_length()


def floor_log2(n: int) -> int:
    """⌊log2 N⌋."""
    return n.bit_length() - 1


def is_pow2(n: int) -> bool:
    """True for 1, 2, 4, …"""
    return n >= 1 and n & (n - 1) == 0


def subtree_blocks(n: int) -> int:
    """Blocks held by the largest child subtree of a binomial tree rooted at 0 over N ranks:
    max(N − 2^(L−1), 2^(L−2)) (0 for N = 1)."""
    lg = ceil_log2(n)
    if lg == 0:
        return 0
    return max(n - 2 ** (lg - 1), 2 ** (lg - 2) if lg >= 2 else 0)


def simple(steps: Any, alpha_s: float, bw_term_s: Any, sent_bytes: Any) -> Terms:
    """Terms with a uniform α: α-term = steps·α."""
    return Terms(steps, steps * alpha_s, bw_term_s, sent_bytes)


def zero_terms(m: Any) -> Terms:
    """N = 1: every collective costs 0 (docs/spec/collectives.md §4.7; NCCL tuning.cc L261)."""
    zero = m * 0.0
    return Terms(0 if np.ndim(m) == 0 else np.zeros(np.shape(m), dtype=int), zero, zero, zero)


def broadcast_steps(steps: Any, m: Any) -> Any:
    """Steps as int or int array with M's shape."""
    if np.ndim(m) == 0 and np.ndim(steps) == 0:
        return int(steps)
    return np.full(np.shape(m), steps, dtype=int)  # broadcast into a new array

