"""Count every collective call a training step makes: calls and bytes, in the NCCL ``M`` convention.

:class:`CountingComm` forwards to ``torch.distributed`` and records, per (operation, tag), how many calls the
rank made and how many bytes they carried. Bytes follow docs/design.md §2 (NCCL / nccl-tests ``M``):

====================  =============================================================
operation             M
====================  =============================================================
all-reduce            the buffer
reduce-scatter        the input (= N × the output shard)
all-gather            the output (= N × the input shard)
broadcast / reduce    the buffer
all-to-all            the per-rank send buffer (self block included)
send / recv           the message (``send`` counts what this rank sends, ``recv`` what it receives)
====================  =============================================================

Source: nccl-tests ``doc/PERFORMANCE.md`` and ``src/{all_reduce,reduce_scatter,all_gather,alltoall,
sendrecv}.cu`` (``count*typesize`` / ``count*typesize*nranks``), as summarised in
docs/spec/collectives.md §3.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from distcalc.bench.collectives import BenchCollective


#: Operations :class:`CountingComm` forwards: the benchmarked collectives, and Send / Recv counted apart.
CommOp = enum.Enum(  # type: ignore[misc]
    "CommOp", {c.name: c.value for c in BenchCollective if c.value != "send-recv"} | {"SEND": "send", "RECV": "recv"},
    type=str,
)


@dataclass
class OpCount:
    """Calls and bytes (NCCL M) counted for one (operation, tag)."""

    calls: int = 0
    bytes: int = 0


def tensor_bytes(tensor: Any) -> int:
    """Bytes held by a tensor: ``numel × element_size``."""
    return int(tensor.numel()) * int(tensor.element_size())


class CountingComm:
    """A thin wrapper over ``torch.distributed`` that counts each call (see the module docstring for M).

    ``tag`` groups calls by purpose (``"tp"``, ``"dp"``, ``"pp"``, ...). Collective calls are blocking
    (``async_op=False``); ``send``/``recv`` have non-blocking ``isend``/``irecv`` twins returning the work handle.
    """

    def __init__(self) -> None:
        import torch.distributed as dist

        self._dist = dist
        self._counts: dict[tuple[CommOp, str], OpCount] = defaultdict(OpCount)

    # -- bookkeeping --------------------------------------------------------------------------------------
    def _record(self, op: CommOp, size_bytes: int, tag: str, group: Any = None) -> None:
        """Count one call. A group of one rank sends nothing (docs/design.md §2: N = 1 costs 0), so its calls —
        which torch still makes, as local copies — are not counted, as distcalc predicts none."""
        if self._dist.get_world_size(group) < 2:
            return
        entry = self._counts[(op, tag)]
        entry.calls += 1
        entry.bytes += int(size_bytes)

    def reset(self) -> None:
        """Forget everything counted so far."""
        self._counts.clear()

    def counts(self) -> dict[tuple[CommOp, str], OpCount]:
        """A copy of the counters, keyed by (operation, tag)."""
        return {key: OpCount(value.calls, value.bytes) for key, value in self._counts.items()}

    def total(self, *, op: CommOp | None = None, tag: str | None = None) -> OpCount:
        """Sum of calls and bytes over the entries matching ``op`` and ``tag`` (None matches all)."""
        result = OpCount()
        for (entry_op, entry_tag), value in self._counts.items():
            if (op is None or entry_op == op) and (tag is None or entry_tag == tag):
                result.calls += value.calls
                result.bytes += value.bytes
        return result

    def as_rows(self) -> list[dict[str, Any]]:
        """The counters as JSON rows ``{op, tag, calls, bytes}``, sorted."""
        return [
            {"op": op.value, "tag": tag, "calls": value.calls, "bytes": value.bytes}
            for (op, tag), value in sorted(self._counts.items(), key=lambda item: (item[0][1], item[0][0].value))
        ]

    # -- collectives --------------------------------------------------------------------------------------
    def all_reduce(self, tensor: Any, *, group: Any = None, tag: str = "") -> None:
        self._record(CommOp.ALL_REDUCE, tensor_bytes(tensor), tag, group)
        self._dist.all_reduce(tensor, group=group)

    def reduce_scatter(self, output: Any, input: Any, *, group: Any = None, tag: str = "") -> None:
        self._record(CommOp.REDUCE_SCATTER, tensor_bytes(input), tag, group)
        scatter = getattr(self._dist, "reduce_scatter_single", None) or self._dist.reduce_scatter_tensor
        scatter(output, input, group=group)

    def all_gather(self, output: Any, input: Any, *, group: Any = None, tag: str = "") -> None:
        self._record(CommOp.ALL_GATHER, tensor_bytes(output), tag, group)
        gather = getattr(self._dist, "all_gather_single", None) or self._dist.all_gather_into_tensor
        gather(output, input, group=group)

    def broadcast(self, tensor: Any, src: int, *, group: Any = None, tag: str = "") -> None:
        self._record(CommOp.BROADCAST, tensor_bytes(tensor), tag, group)
        self._dist.broadcast(tensor, src, group=group)

    def reduce(self, tensor: Any, dst: int, *, group: Any = None, tag: str = "") -> None:
        self._record(CommOp.REDUCE, tensor_bytes(tensor), tag, group)
        self._dist.reduce(tensor, dst, group=group)

    def all_to_all(self, output: Any, input: Any, *, group: Any = None, tag: str = "") -> None:
        self._record(CommOp.ALL_TO_ALL, tensor_bytes(input), tag, group)
        self._dist.all_to_all_single(output, input, group=group)

    # -- point to point -----------------------------------------------------------------------------------
    def isend(self, tensor: Any, dst: int, *, group: Any = None, tag: str = "") -> Any:
        self._record(CommOp.SEND, tensor_bytes(tensor), tag, group)
        return self._dist.isend(tensor, dst, group=group)

    def irecv(self, tensor: Any, src: int, *, group: Any = None, tag: str = "") -> Any:
        self._record(CommOp.RECV, tensor_bytes(tensor), tag, group)
        return self._dist.irecv(tensor, src, group=group)

    def send(self, tensor: Any, dst: int, *, group: Any = None, tag: str = "") -> None:
        self.isend(tensor, dst, group=group, tag=tag).wait()

    def recv(self, tensor: Any, src: int, *, group: Any = None, tag: str = "") -> None:
        self.irecv(tensor, src, group=group, tag=tag).wait()
