"""Per-message records of one configuration for the reports (``analyze --json`` ``messages``, the message
table): each message of the step model (:mod:`distcalc.analyze.core`) with its count per step, its time on the
link and the part of it that is exposed, shared so that the rows add up to the step model's breakdown."""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.analyze.block_terms import BoundaryTerms, DpTerms, MicroBatchTerms
from distcalc.traffic import Dim, Phase


def _first(x: Any) -> float:
    """The first element of ``x`` (configuration 0) as a Python float."""
    return float(x.item(0) if isinstance(x, np.ndarray) else np.asarray(x).flat[0])


def message_rows(mb: MicroBatchTerms, bd: BoundaryTerms, dpb: DpTerms, counts, m, lps, transfers, grad_exposed,
                 ag_exposed, o, expert_counts=()) -> list[dict[str, Any]]:
    """Per-message records of configuration 0: count per step, time on the link, exposed time (the routed
    experts' DP messages, over the expert-DP group, with ``expert_counts``)."""
    f = _first
    rows = []
    ov_ratio = f(mb.tp_overlappable_exposed_s) / f(mb.tp_overlappable_s) if f(mb.tp_overlappable_s) > 0 else 0.0
    # CP's ring K,V passes overlap attention compute: the exposed share per layer is cp_exposed_s / (CP time on link),
    # spread evenly over the CP messages so that the rows add up to the breakdown's cp_exposed_s.
    cp_on_link = sum(f(times) * f(msg.count) for msg, times, _ in mb.messages if msg.dim == Dim.CP)
    cp_ratio = f(mb.cp_exposed_s) / cp_on_link if cp_on_link > 0 else 0.0
    # userbuffers (tp_comm_overlap) hide part of the forward and backward-critical TP messages too: their rows
    # carry the exposed share of their class (forward / backward-critical) so that they add up to tp_forward_s /
    # tp_backward_s
    crit_ratio = {Phase.FORWARD: 1.0, Phase.BACKWARD: 1.0, Phase.RECOMPUTE: 1.0}
    if o.tp_comm_overlap:
        for phases, exposed in (((Phase.FORWARD,), mb.tp_forward_s),
                                ((Phase.BACKWARD, Phase.RECOMPUTE), mb.tp_backward_s)):
            on_link = sum(f(times) * f(msg.count) for msg, times, _ in mb.messages if msg.dim == Dim.TP
                          and not msg.overlappable and msg.phase in phases)
            for phase in phases:
                crit_ratio[phase] = f(exposed) / on_link if on_link > 0 else 0.0
    for msg, times, algos in mb.messages:
        per_layer = msg.dim in (Dim.TP, Dim.CP, Dim.EP) and "embedding" not in msg.note and "logits" not in msg.note
        scope = f(m) * (f(lps) if per_layer else 1.0) * (f(mb.moe_fraction) if msg.dim == Dim.EP else 1.0)
        exposed_frac = (ov_ratio if (msg.dim == Dim.TP and msg.overlappable)
                        else crit_ratio.get(msg.phase, 1.0) if msg.dim == Dim.TP and per_layer
                        else cp_ratio if msg.dim == Dim.CP else 1.0)
        rows.append((msg, f(times), algos, scope, exposed_frac))
    for msg, times, algos in bd.messages:
        rows.append((msg, f(times), algos, f(m) * f(transfers), 0.0 if o.pipeline_p2p_overlap else 1.0))
    dp_rows = list(zip(counts, dpb.messages))
    if f(dpb.expert_dp_group_ranks) > 1:
        dp_rows += list(zip(expert_counts, dpb.expert_messages))
    dp_total = sum(f(cnt) * f(t) for cnt, (_, t, _) in dp_rows)
    dp_ratio = (f(grad_exposed) + f(ag_exposed)) / dp_total if dp_total > 0 else 0.0
    for cnt, (msg, times, algos) in dp_rows:
        rows.append((msg, f(times), algos, f(cnt), dp_ratio))
    for msg, times, algos in dpb.sync_messages:
        rows.append((msg, f(times), algos, f(msg.count), 1.0))
    out = []
    for msg, time_one, algos, count, exposed_frac in rows:
        base = 1.0 if msg.dim == Dim.DP or msg.phase == Phase.STEP else f(msg.count)
        count = base * count
        if count <= 0 or f(msg.size_bytes) <= 0 or time_one <= 0:
            continue
        used = [a for a in algos if a != "none"]
        out.append({"dim": msg.dim.value, "collective": msg.collective.value, "size_bytes": f(msg.size_bytes),
                    "count": count, "phase": msg.phase.value, "time_s": time_one * count,
                    "exposed_s": time_one * count * exposed_frac, "algorithm": used[0] if used else "none",
                    "note": msg.note})
    return out
