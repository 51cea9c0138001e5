"""Search results a reader can use: distinct configurations in the top-k and a Pareto front that starts
where it is useful.

Equivalent configurations: two feasible configurations on the same GPU count whose step time and memory per
GPU agree to :data:`EQUIVALENT_RTOL` (e.g. selective recomputation with fused attention recomputes nothing,
so it ties with no recomputation; DP64·CP4·mb1 and DP32·CP8·mb2 do the same work per GPU). The top-k shows
one of them, the simplest (:func:`simplicity`), and says how many it stands for.

Useful front: the Pareto front of step time vs memory per GPU ends at the fastest configuration; points
slower than :data:`USEFUL_SLOWDOWN` × the fastest step time buy memory at a price no run pays (they start
at 1 % MFU), so the table begins at the first point within that factor and says how many it left out.
"""

from __future__ import annotations

from typing import Any

from distcalc.parallel import Recompute

#: Relative tolerance under which two step times (or two memory sizes) are the same result.
EQUIVALENT_RTOL = 1e-6
#: A front point is shown when its step time is at most this factor of the fastest one (half its throughput).
USEFUL_SLOWDOWN = 2.0


def simplicity(row: dict[str, Any]) -> tuple:
    """Sort key: fewer features first (no recomputation, lower ZeRO, no CP/EP, no interleaving, larger DP, no
    embedding/loss split, smaller micro-batch)."""
    return (Recompute(str(row["recompute"])).code, row["zero"], row["cp"], row["ep"], row["vpp"],
            row["tp"], row["pp"], int(bool(row["sequence_parallel"])),
            int(bool(row.get("account_for_embedding_and_loss"))), row["micro_batch"])


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= EQUIVALENT_RTOL * max(abs(a), abs(b), 1e-30)


def _equivalent(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["gpus"] == b["gpus"] and _same(a["step_time_s"], b["step_time_s"]) and _same(
        a["memory_bytes"], b["memory_bytes"])


def collapse_equivalent(rows: list[dict[str, Any]], k: int) -> tuple[list[dict[str, Any]], int]:
    """The first ``k`` distinct results of ``rows`` (ordered fastest first), each the simplest of its group with
    ``equivalent`` = how many other rows it stands for; and the number of rows collapsed in all."""
    groups: list[list[dict[str, Any]]] = []
    for row in rows:
        if groups and _equivalent(groups[-1][0], row):
            groups[-1].append(row)
            continue
        if len(groups) == k:
            break
        groups.append([row])
    out = []
    for group in groups:
        best = dict(min(group, key=simplicity))
        best["equivalent"] = len(group) - 1
        out.append(best)
    return out, sum(len(g) - 1 for g in groups)


def useful_front(front: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The points of a step-time-vs-memory front (by increasing memory) within :data:`USEFUL_SLOWDOWN` of the
    fastest, and how many slower points were left out."""
    if not front:
        return [], 0
    fastest = min(r["step_time_s"] for r in front)
    kept = [r for r in front if r["step_time_s"] <= USEFUL_SLOWDOWN * fastest]
    return kept, len(front) - len(kept)


def distinct_top(result: Any, k: int) -> tuple[list[dict[str, Any]], int]:
    """:func:`collapse_equivalent` over ``result.top(n)`` with n grown until k distinct rows (or all) are in."""
    n = max(8 * k, 32)
    while True:
        rows = result.top(n)
        distinct, collapsed = collapse_equivalent(rows, k)
        if len(distinct) >= k or len(rows) < n:
            # the last group may continue past n: count it only when all rows were read
            return distinct, collapsed
        n *= 4
