"""α-β formulas for multi-dimensional torus and mesh topologies (docs/spec/collectives.md §2.3, T01–T13).

Symbols: dimensions n_i (size-1 dimensions dropped), N = Πn_i, M bytes, B per link per direction, α per step.
s_i = ⌊n_i/2⌋ steps for a wraparound dimension with n_i ≥ 3, else n_i − 1; B_i^eff = 2B for a wraparound
dimension with n_i ≥ 3, else B (a dimension of 2 has one link per direction; a mesh line is unidirectional
per phase) — spec A7/A8. D_i = M/Π_{j<i} n_j is the data left after reduce-scattering earlier dimensions.
Multi-hop latency inside one step is folded into α (A9).
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from distcalc.collective.types import Terms, simple


def _phase_steps(n: int, wrap: bool) -> int:
    return n // 2 if (wrap and n >= 3) else n - 1


def _phase_bandwidth(n: int, wrap: bool, b: float) -> float:
    return 2 * b if (wrap and n >= 3) else b


def _sent_fraction(n: int, wrap: bool, allgather: bool) -> float:
    # Bytes a GPU injects in one phase per byte of D: (n−1)/n, except an AllGather along a mesh line of n ≥ 3,
    # where interior GPUs forward both ways: p+1 blocks right and n−p left, (n+1)/n (simulator note 9).
    if allgather and not wrap and n >= 3:
        return (n + 1) / n
    return (n - 1) / n


def _axis_orders(dims: Sequence[int]) -> list[tuple[int, ...]]:
    # Axis permutations, ascending axis order first: among equally fast orders the ascending one wins
    # (ASTRA-sim Sys.cc L768: RS visits dimensions in ascending order, AG in reverse).
    return [tuple(dims[i] for i in perm) for perm in itertools.permutations(range(len(dims)))]


def sequential_reduce_scatter(dims: Sequence[int], m: Any, b: float, a: float, wrap: bool,
                              allgather: bool = False) -> Terms:
    """T03 (torus) and the mesh-line analogue: RS one dimension at a time (AG in reverse order, same cost):
    Σ s_i·α + Σ (n_i−1)/n_i·D_i/B_i^eff; sends f·M. The dimension order minimising the bandwidth term is used
    (docs/spec/collectives.md §4.6: it matters when dimensions differ; ties keep the ascending axis order); steps are order
    independent. ``allgather`` only changes
    the bytes sent on mesh lines (interior GPUs forward both ways, see ``_sent_fraction``).
    Source: scaling-book sharding.md L305-317 per axis; ASTRA-sim Sys.cc L768-787 (ascending dimension
    phases) and L729 (AG reversed) [V]."""
    best = None
    for order in _axis_orders(dims):
        data, coefficient, sent = 1.0, 0.0, 0.0
        for n in order:
            coefficient += (n - 1) / n * data / _phase_bandwidth(n, wrap, b)
            sent += _sent_fraction(n, wrap, allgather) * data
            data /= n
        if best is None or coefficient < best[0] * (1 - 1e-15):
            best = (coefficient, sent)
    steps = sum(_phase_steps(n, wrap) for n in dims)
    coefficient, sent = best if best is not None else (0.0, 0.0)
    return simple(steps, a, coefficient * m, sent * m)


def concurrent_reduce_scatter(dims: Sequence[int], m: Any, b: float, a: float, wrap: bool,
                              allgather: bool = False) -> Terms:
    """T04/T12 (torus) and T08's RS half (mesh): the data is split into k = #dims parts, part p visiting the
    dimensions in the order rotated by p, so every phase keeps all 2k ports busy. Phase j costs
    max_p [s_d·α] and max_p [(n_d−1)/n_d·(D_p/k)/B_d^eff] (phase-synchronous, docs/spec/collectives.md §7). Equal dimensions:
    Σ s_i·α + f·M/(2kB). The cyclic base order with the smallest bandwidth term is used. Sends f·M (AllGather
    on mesh lines: more, see ``_sent_fraction``).
    Source: scaling-book sharding.md L337-343 ("increases the available bandwidth by a factor of n_axes") [V];
    Ying et al. 2018 [P]; phase-max generalisation [D]."""
    k = len(dims)
    best = None
    for order in _axis_orders(dims):
        steps, coefficient, sent = 0, 0.0, 0.0
        data = [1.0 / k] * k
        for phase in range(k):
            phase_steps, phase_time = 0, 0.0
            for part in range(k):
                n = order[(part + phase) % k]
                phase_steps = max(phase_steps, _phase_steps(n, wrap))
                phase_time = max(phase_time, (n - 1) / n * data[part] / _phase_bandwidth(n, wrap, b))
                sent += _sent_fraction(n, wrap, allgather) * data[part]
                data[part] /= n
            steps += phase_steps
            coefficient += phase_time
        if best is None or (coefficient, steps) < (best[0] * (1 - 1e-15), best[1]):
            best = (coefficient, steps, sent)
    coefficient, steps, sent = best if best is not None else (0.0, 0, 0.0)
    return simple(steps, a, coefficient * m, sent * m)


def concurrent_reduce_scatter_overlapped(dims: Sequence[int], m: float, b: float, a: float, wrap: bool,
                                         allgather: bool = False) -> Terms:
    """T04/T12/T08-RS without phase barriers: the same k parts in rotated dimension orders, each part going
    on to its next dimension as soon as it is done with the previous one, and the links of a dimension
    serving the parts in phase order (one part per dimension per phase). A job shop with a fixed sequence:
    part p's phase j on dimension d costs c = s_d·α + (n_d−1)/n_d·D_{p,j}/B_d^eff and

        start(p, j) = max(end(p, j−1), end of the previous phase served on d),   end = start + c,

    T = min over cyclic orders of max_p end(p, k−1). Never above the phase-synchronous T04 (which starts
    every phase at the latest end of the previous one); equal to it when all dimensions are equal (all
    parts then cost the same in every phase). The library's T04 keeps the phase-synchronous value that
    docs/spec/collectives.md pins (§7 caveat); the event-driven simulation of the schedule (no step barrier)
    reproduces this form exactly. ``steps`` and the α term follow the critical path (ties: more α).
    Scalar M only (the critical path depends on M). Source: [D]; the makespan recursion of a job shop with
    fixed sequences (Conway, Maxwell & Miller, *Theory of Scheduling*, 1967)."""
    k = len(dims)
    best = None
    for order in _axis_orders(dims):
        part_end = [(0.0, 0)] * k  # (time, α-steps on the path to it)
        dim_free = [(0.0, 0)] * k
        sent, data = 0.0, [1.0 / k] * k
        for phase in range(k):
            for part in range(k):
                slot = (part + phase) % k
                n = order[slot]
                steps = _phase_steps(n, wrap)
                cost = steps * a + (n - 1) / n * data[part] * m / _phase_bandwidth(n, wrap, b)
                start = max(part_end[part], dim_free[slot])
                part_end[part] = dim_free[slot] = (start[0] + cost, start[1] + steps)
                sent += _sent_fraction(n, wrap, allgather) * data[part]
                data[part] /= n
        finish = max(part_end)
        if best is None or finish[0] < best[0][0] * (1 - 1e-15):
            best = (finish, sent)
    if best is None:
        return simple(0, a, 0.0, 0.0)
    (time_s, steps), sent = best
    return Terms(steps, steps * a, time_s - steps * a, sent * m)


def grid_alltoall(dims: Sequence[int], m: Any, b: float, a: float, wrap: bool) -> Terms:
    """T05/T13 (torus) and T09 (mesh): dimension-ordered shortest-path AllToAll, all messages concurrent:
    α·Σ hops_i + max_i L_i·M/B; torus hops_i = ⌊n_i/2⌋, L_i = (n_i² − [n_i odd])/(8n_i) (1/2 for n_i = 2);
    mesh hops_i = n_i − 1, L_i = ⌊n_i/2⌋⌈n_i/2⌉/n_i. Equals the bisection bound. ``sent_bytes`` counts each
    GPU's own data only, f·M (as reference_cases.csv does; blocks forwarded for other GPUs are not counted).
    Source: [D]."""
    steps, load = 0, 0.0
    for n in dims:
        if wrap and n >= 3:
            steps += n // 2
            load = max(load, (n * n - (n % 2)) / (8 * n))
        else:
            steps += n - 1
            load = max(load, (n // 2) * ((n + 1) // 2) / n)
    total = 1
    for n in dims:
        total *= n
    return simple(steps, a, load * m / b, (total - 1) / total * m)


def has_hamiltonian_cycle(dims: Sequence[int], wrap: bool) -> bool:
    """Torus: always (N ≥ 2). Mesh: iff N is even and at least two dimensions are ≥ 2 (a grid graph is
    bipartite; docs/spec/collectives.md §4.8), or N = 2 (one link pair used both ways)."""
    total = 1
    for n in dims:
        total *= n
    if total < 2:
        return False
    if wrap or total == 2:
        return True
    return total % 2 == 0 and len(dims) >= 2
