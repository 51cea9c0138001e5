"""Schedules: the transfers every rank makes, step by step, stored as NumPy arrays.

A schedule is the algorithm itself. Each *row* is one transfer of one chunk:

* ``step`` — the synchronous communication step it belongs to (all rows of a step run concurrently and
  read the buffers as they were at the start of the step);
* ``src``, ``dst`` — node ids: GPU ranks ``0..gpus-1``; extra compute nodes (an in-network-reducing
  switch) get ids ``gpus, gpus+1, ...`` and are named in :attr:`Schedule.extra_nodes`;
* ``chunk`` — which chunk of the buffer moves (every node holds a buffer of ``chunks`` chunks);
* ``op`` — :class:`Op.COPY` (the receiver overwrites its chunk) or :class:`Op.REDUCE` (the receiver adds);
* ``tie`` — 0: the topology's shortest route; 1: on a ring/torus, break a tie between the two shortest
  directions the other way (−) — how the mirrored instance of a collective uses the other port.

Buffer layout (what :mod:`distcalc.simulate.execute` checks), with ``parts = chunks / gpus``:

* AllReduce, Broadcast, Reduce: the whole buffer (M bytes) is ``chunks`` chunks of ``M/chunks`` bytes.
* ReduceScatter, AllGather, Gather, Scatter: chunk ``c`` belongs to shard ``c // parts``; rank ``r``'s
  shard is ``r`` (NCCL layout). M is the full buffer (RS input, AG output; docs/design.md §2).
* All-to-All: ``chunks = gpus·gpus·p``; chunk ``c`` is part ``c % p`` of the block that rank
  ``(c // p) // gpus`` sends to rank ``(c // p) % gpus``; M is one rank's send buffer, so a chunk is
  ``M/(gpus·p)`` bytes.

Byte accounting uses the real M (``chunk_bytes``); the simulated data can be a few elements per chunk.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from distcalc.collective.types import CollectiveKind

INDEX = np.int32  # row arrays: steps, node ids and chunk ids all fit (and halve the memory traffic)


class Op(enum.IntEnum):
    """What the receiver does with an arriving chunk."""

    COPY = 0
    REDUCE = 1


#: The collective a schedule computes (the collective library's kinds).
Pattern = CollectiveKind


@dataclass
class Rows:
    """An unsorted bag of transfer rows (``step, src, dst, chunk, op, tie`` int32 arrays) built by generators."""

    step: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    chunk: np.ndarray
    op: np.ndarray
    tie: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.tie is None:
            self.tie = np.zeros_like(self.step)

    @staticmethod
    def empty() -> "Rows":
        z = np.zeros(0, dtype=INDEX)
        return Rows(z, z, z, z, z, z)

    @staticmethod
    def of(step, src, dst, chunk, op, tie=0) -> "Rows":
        """Broadcast the arguments against each other and flatten them (int32)."""
        arrays = np.broadcast_arrays(*(np.asarray(a) for a in (step, src, dst, chunk, op, tie)))
        return Rows(*(a.astype(INDEX).ravel() for a in arrays))

    def _fields(self) -> tuple[np.ndarray, ...]:
        return self.step, self.src, self.dst, self.chunk, self.op, self.tie

    def select(self, mask: np.ndarray) -> "Rows":
        return Rows(*(a[mask] for a in self._fields()))

    @property
    def size(self) -> int:
        return int(self.step.size)

    @property
    def span(self) -> int:
        """Number of step slots used, counting from 0 (``max(step) + 1``; 0 when empty)."""
        return int(self.step.max()) + 1 if self.step.size else 0

    def shifted(self, offset: int) -> "Rows":
        return Rows((self.step + offset).astype(INDEX), self.src, self.dst, self.chunk, self.op, self.tie)

    def reversed(self, op: Op) -> "Rows":
        """Time-reverse the rows and swap every edge, with every row's op set to ``op``.

        A reduction that converges each chunk on a tree becomes the broadcast that spreads it over the same
        tree (RS → AG, binomial reduce → binomial broadcast, chain reduce → chain broadcast), and back.
        Per-step link loads are mirrored, so the time is unchanged on a topology with symmetric links. A
        reversed transfer retraces its wires backwards, so an explicit tie-break flips.
        """
        last = self.span - 1
        return Rows((last - self.step).astype(INDEX), self.dst, self.src, self.chunk, np.full_like(self.op, int(op)),
                    (1 - self.tie).astype(INDEX))


def concat(*parts: Rows) -> Rows:
    """Union of row bags (steps are kept as given)."""
    parts = tuple(p for p in parts if p.size)
    if not parts:
        return Rows.empty()
    return Rows(*(np.concatenate([p._fields()[i] for p in parts]) for i in range(6)))


def sequence(*phases: Rows) -> Rows:
    """Run phases one after another: each starts on the step after the previous one ends."""
    out, offset = [], 0
    for phase in phases:
        if phase.size:
            out.append(phase.shifted(offset - int(phase.step.min())))
            offset += phase.span - int(phase.step.min())
    return concat(*out)


@dataclass
class Schedule:
    """A finished schedule, rows sorted by step; ``step_ptr[s]:step_ptr[s+1]`` are the rows of step ``s``."""

    pattern: Pattern
    algorithm: str
    gpus: int
    chunks: int
    chunk_bytes: float
    src: np.ndarray
    dst: np.ndarray
    chunk: np.ndarray
    op: np.ndarray
    step_ptr: np.ndarray
    tie: np.ndarray | None = None
    root: int = 0
    extra_nodes: tuple[str, ...] = ()
    notes: dict = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return int(self.step_ptr.size - 1)

    @property
    def nodes(self) -> int:
        return self.gpus + len(self.extra_nodes)

    @property
    def parts(self) -> int:
        """Chunks per shard (RS/AG/Gather/Scatter) or per block (All-to-All)."""
        per = self.gpus * self.gpus if self.pattern == Pattern.ALL_TO_ALL else self.gpus
        return self.chunks // per

    def step_rows(self, s: int) -> slice:
        return slice(int(self.step_ptr[s]), int(self.step_ptr[s + 1]))

    def step_of_row(self) -> np.ndarray:
        return np.repeat(np.arange(self.steps), np.diff(self.step_ptr))


def build(pattern: Pattern, algorithm: str, gpus: int, chunks: int, chunk_bytes: float, rows: Rows, *,
          root: int = 0, extra_nodes: tuple[str, ...] = (), notes: dict | None = None) -> Schedule:
    """Sort rows by step, drop empty steps (renumbering densely) and wrap them in a :class:`Schedule`."""
    if rows.size:
        # stable radix sort on the (small) step numbers; empty steps are dropped by renumbering densely
        counts = np.bincount(rows.step)
        used = np.flatnonzero(counts)
        key = rows.step.astype(np.uint16) if used[-1] < 65536 else rows.step
        order = np.argsort(key, kind="stable")
        step_ptr = np.concatenate([[0], np.cumsum(counts[used])])
        src, dst, chunk, op, tie = (rows.src[order], rows.dst[order], rows.chunk[order], rows.op[order],
                                    rows.tie[order])
    else:
        step_ptr = np.zeros(1, dtype=np.int64)
        src = dst = chunk = op = tie = np.zeros(0, dtype=INDEX)
    nodes = gpus + len(extra_nodes)
    if src.size and (src.min() < 0 or dst.min() < 0 or src.max() >= nodes or dst.max() >= nodes):
        raise ValueError(f"{algorithm}: a transfer names a node outside 0..{nodes - 1}")
    if chunk.size and (chunk.min() < 0 or chunk.max() >= chunks):
        raise ValueError(f"{algorithm}: a transfer names a chunk outside 0..{chunks - 1}")
    if np.any(src == dst):
        raise ValueError(f"{algorithm}: a transfer sends to itself")
    return Schedule(pattern=pattern, algorithm=algorithm, gpus=gpus, chunks=chunks, chunk_bytes=float(chunk_bytes),
                    src=src, dst=dst, chunk=chunk, op=op.astype(np.int8), step_ptr=step_ptr.astype(np.int64),
                    tie=tie.astype(np.int8),
                    root=root, extra_nodes=tuple(extra_nodes), notes=dict(notes or {}))
