"""The collective sweep, following nccl-tests' conventions.

For each (tier, collective, size): ``warmup`` untimed calls, then ``trials`` timed calls (each one call,
synchronised: ``torch.cuda.synchronize`` on GPUs, blocking gloo calls on CPU). Each trial's time is averaged over
all ranks, as nccl-tests does by default (``src/common.cu``: ``average = 1``, "Report average iteration time");
the row reports the median and the 1st and 99th percentiles of the trials. On a shared machine the trials
of all sizes of one collective are interleaved by default (``interleave``; nccl-tests' order, size after
size, with ``interleave=False``). Defaults ``warmup = 5``, ``trials = 20``
mirror nccl-tests' ``warmup_iters = 5`` and ``iters = 20`` (``src/common.cu``).

- ``algbw = M / t`` with M in the NCCL convention (docs/design.md §2, nccl-tests ``doc/PERFORMANCE.md``);
- ``busbw = algbw × factor(N)`` with the published factors (nccl-tests ``src/*.cu`` ``*GetBw``; the table is
  shipped as ``data/validation/nccl_tests_busbw_factors.csv``);
- sizes are rounded down to a multiple of ``element size × N`` (nccl-tests divides the buffer into N equal
  per-rank counts for ReduceScatter, AllGather and AllToAll; the same alignment is used for every collective
  so one sweep has one set of sizes).

Send/Recv is nccl-tests' ``sendrecv``: every rank sends M bytes to rank+1 and receives M from rank−1 (mod N)
at the same time.

Tiers: with ``gpus_per_node = G < N`` the sweep runs twice, on the ``intra`` groups (ranks ``[kG, (k+1)G)``,
one node each, all nodes at once) and on the ``inter`` groups (ranks with equal ``rank mod G``, one per node —
the rail-aligned groups a DP collective uses). Without it the whole world is one ``intra`` group.
"""

from __future__ import annotations

import enum
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from pydantic import BaseModel, Field, field_validator

from distcalc.collective.types import CollectiveKind
from distcalc.errors import BenchError

if TYPE_CHECKING:  # pragma: no cover
    from distcalc.bench.rank import RankContext


#: Collectives ``bench collectives`` measures: the collective model's kinds that nccl-tests benchmarks
#: (all but gather/scatter) plus Send/Recv; values are the ``distcalc collective KIND`` spellings.
BenchCollective = enum.Enum(  # type: ignore[misc]
    "BenchCollective",
    {kind.name: kind.value for kind in CollectiveKind if kind not in (CollectiveKind.GATHER, CollectiveKind.SCATTER)}
    | {"SEND_RECV": "send-recv"},
    type=str,
)


def busbw_factor(collective: BenchCollective | str, n: int) -> float:
    """nccl-tests' busbw / algbw factor for N ranks.

    AllReduce 2(N−1)/N; ReduceScatter, AllGather, AllToAll (N−1)/N; Broadcast, Reduce, Send/Recv 1.
    Source: nccl-tests ``src/all_reduce.cu`` (AllReduceGetBw), ``reduce_scatter.cu``, ``all_gather.cu``,
    ``alltoall.cu``, ``broadcast.cu``, ``reduce.cu``, ``sendrecv.cu``; ``doc/PERFORMANCE.md``.
    """
    kind = BenchCollective(collective)
    if kind is BenchCollective.ALL_REDUCE:
        return 2.0 * (n - 1) / n
    if kind in (BenchCollective.REDUCE_SCATTER, BenchCollective.ALL_GATHER, BenchCollective.ALL_TO_ALL):
        return (n - 1) / n
    return 1.0


def aligned_size(size_bytes: int, element_bytes: int, n: int) -> int:
    """Round ``size_bytes`` down to a multiple of ``element_bytes × n`` (at least one such unit)."""
    unit = element_bytes * n
    return max(unit, (int(size_bytes) // unit) * unit)


class CollectivesConfig(BaseModel):
    """Options of one sweep (recorded in full in the result file)."""

    sizes: list[int] = Field(min_length=1, description="requested message sizes M, bytes")
    collectives: list[BenchCollective] = Field(default_factory=lambda: list(BenchCollective))
    warmup: int = Field(5, ge=0, description="untimed calls before each size")
    trials: int = Field(20, ge=1, description="timed calls per size")
    dtype: str = Field("float32", description="element type of the buffers")
    gpus_per_node: int | None = Field(None, ge=1, description="ranks per node; < world size adds the inter tier")
    interleave: bool = Field(True, description="time trial r of every size before trial r+1 (see _time_block)")

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        if value not in ("float32", "float16", "bfloat16", "float64"):
            raise ValueError(f"dtype {value!r} is not one of float32, float16, bfloat16, float64")
        return value


def tier_groups(world_size: int, gpus_per_node: int | None) -> dict[str, list[list[int]]]:
    """Rank lists per tier (see the module docstring)."""
    per_node = gpus_per_node or world_size
    if per_node >= world_size:
        return {"intra": [list(range(world_size))]}
    if world_size % per_node:
        raise BenchError(f"--gpus-per-node {per_node} does not divide the world size {world_size}")
    nodes = world_size // per_node
    intra = [list(range(k * per_node, (k + 1) * per_node)) for k in range(nodes)]
    inter = [list(range(local, world_size, per_node)) for local in range(per_node)]
    groups = {"intra": intra}
    if nodes > 1:
        groups["inter"] = inter
    return {name: [g for g in ranks if len(g) > 1] or ranks for name, ranks in groups.items()}


def _operation(kind: BenchCollective, size: int, members: list[int], group: Any, ctx: RankContext) -> Callable[[], None]:
    """Allocate the buffers for one (collective, size) and return a closure doing one call."""
    import torch

    dtype = getattr(torch, ctx.dtype)
    element = torch.empty((), dtype=dtype).element_size()
    n = len(members)
    count = size // element
    shard = count // n
    full = torch.ones(count, dtype=dtype, device=ctx.device)
    comm = ctx.comm
    root = members[0]
    if kind is BenchCollective.ALL_REDUCE:
        return lambda: comm.all_reduce(full, group=group, tag="bench")
    if kind is BenchCollective.REDUCE_SCATTER:
        out = torch.empty(shard, dtype=dtype, device=ctx.device)
        return lambda: comm.reduce_scatter(out, full, group=group, tag="bench")
    if kind is BenchCollective.ALL_GATHER:
        part = torch.ones(shard, dtype=dtype, device=ctx.device)
        return lambda: comm.all_gather(full, part, group=group, tag="bench")
    if kind is BenchCollective.BROADCAST:
        return lambda: comm.broadcast(full, root, group=group, tag="bench")
    if kind is BenchCollective.REDUCE:
        return lambda: comm.reduce(full, root, group=group, tag="bench")
    if kind is BenchCollective.ALL_TO_ALL:
        out = torch.empty_like(full)
        return lambda: comm.all_to_all(out, full, group=group, tag="bench")
    position = members.index(ctx.rank)
    peer_next, peer_prev = members[(position + 1) % n], members[(position - 1) % n]
    inbox = torch.empty_like(full)

    def send_recv() -> None:
        works = [comm.isend(full, peer_next, group=group, tag="bench"),
                 comm.irecv(inbox, peer_prev, group=group, tag="bench")]
        for work in works:
            work.wait()

    return send_recv


def summarise(kind: BenchCollective, size: int, n: int, times: np.ndarray) -> dict[str, Any]:
    """Median, p99, algbw and busbw of one point's trial times (seconds)."""
    median = float(np.median(times))
    algbw = size / median
    return {
        "collective": kind.value,
        "group_size": n,
        "size_bytes": int(size),
        "time_s": median,
        "p99_time_s": float(np.percentile(times, 99)),
        "p1_time_s": float(np.percentile(times, 1)),
        "trials": int(times.size),
        "trial_times_s": [float(t) for t in times],
        "algbw_bytes_per_s": algbw,
        "busbw_bytes_per_s": algbw * busbw_factor(kind, n),
    }


def _time_block(operations: list[Callable[[], None]], config: CollectivesConfig, ctx: RankContext,
                tick: Callable[[int], None]) -> np.ndarray:
    """Trial times ``[size, trial]`` of one collective over all sizes. Sizes in turn (nccl-tests order), or
    interleaved — trial r of every size, then trial r + 1 — so that load that changes over time on a
    shared machine is spread evenly over the sizes instead of biasing whichever sizes ran during it."""
    times = np.zeros((len(operations), config.trials))
    for index, operation in enumerate(operations):
        for _ in range(config.warmup):
            operation()
        if not config.interleave:
            times[index] = _timed_calls(operation, config.trials, ctx)
            tick(config.trials)
    if config.interleave:
        for trial in range(config.trials):
            for index, operation in enumerate(operations):
                times[index, trial] = _timed_calls(operation, 1, ctx)[0]
            tick(len(operations))
    return times


def _timed_calls(operation: Callable[[], None], count: int, ctx: RankContext) -> list[float]:
    ctx.synchronize()
    out = []
    for _ in range(count):
        start = time.perf_counter()
        operation()
        ctx.synchronize()
        out.append(time.perf_counter() - start)
    return out


def run_sweep(config: CollectivesConfig, ctx: RankContext) -> list[dict[str, Any]]:
    """Run the whole sweep on this rank (every rank calls it); returns the rows (identical on every rank)."""
    import torch
    import torch.distributed as dist

    if ctx.world_size < 2:
        raise BenchError(f"world size {ctx.world_size}: collectives need at least 2 ranks")
    tiers = tier_groups(ctx.world_size, config.gpus_per_node)
    total = len(tiers) * len(config.collectives) * len(config.sizes) * config.trials  # timed calls
    done = [0]
    rows: list[dict[str, Any]] = []
    element = torch.empty((), dtype=getattr(torch, config.dtype)).element_size()

    def tick(calls: int) -> None:
        done[0] += calls
        ctx.progress(done[0], total, f"{tier} {kind.value}")

    for tier, groups in tiers.items():
        handles = [None if len(g) == ctx.world_size else dist.new_group(g) for g in groups]
        mine = next(i for i, g in enumerate(groups) if ctx.rank in g)
        members, group = groups[mine], handles[mine]
        n = len(members)
        for kind in config.collectives:
            ctx.progress(done[0], total, f"{tier} {kind.value}")
            sizes = [aligned_size(requested, element, n) for requested in config.sizes]
            operations = [_operation(kind, size, members, group, ctx) for size in sizes]
            times = torch.tensor(_time_block(operations, config, ctx, tick), dtype=torch.float64, device=ctx.device)
            dist.all_reduce(times)  # nccl-tests -a 1: average each trial over all ranks
            averaged = times.cpu().numpy() / ctx.world_size
            for requested, size, trial_times in zip(config.sizes, sizes, averaged):
                row = summarise(kind, size, n, trial_times)
                row.update(tier=tier, requested_size_bytes=int(requested))
                rows.append(row)
    ctx.progress(total, total, "done")
    return rows
