"""Enumerate the valid parallel configurations of one training job, vectorized with NumPy.

A configuration is one value per column of :data:`COLUMNS`: the degrees ``tp, pp, dp, cp, ep``, the
interleaving ``vpp``, the ``micro_batch``, the ``zero`` stage, the ``recompute`` and ``schedule`` codes
(:class:`distcalc.parallel.Recompute` / :class:`distcalc.parallel.Schedule` ``.code``, i.e. indices into
:data:`RECOMPUTE_CHOICES` / :data:`SCHEDULE_CHOICES`), ``sequence_parallel`` (0/1) and
``account_for_embedding_and_loss`` (0/1; :class:`distcalc.parallel.ParallelConfig`'s field: the embedding and
the loss take one layer slot each in the pipeline split — Megatron-Core
``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``, Llama 3, Dubey et
al. 2024 §3.3.2). That flag is *derived*, not searched: it is 1 exactly when the L layers cannot be cut into
pp·vpp equal chunks (``L % (pp·vpp) != 0``) but the L + 2 slots can, else 0.

The *universe* is the cartesian product of every candidate value: ``tp, cp, pp`` over the divisors of the GPU
count N whose product divides N (``dp = N / (tp·cp·pp)``), ``ep`` over the divisors of ``dp·cp`` (MoE
models only; ep = 1 for a dense model), ``vpp`` over the divisors of the layer count L and of L + 2 (the
embedding/loss split), ``micro_batch`` over the divisors of the global batch, and every ZeRO stage, recompute
mode, sequence-parallel flag and schedule. The product is built in stages (degrees, then pipeline, then
batch, then memory options); after each stage the rows breaking a rule are dropped and counted *with the
multiplicity of the columns not yet expanded*, so ``sum(rejected) + equivalent + valid == universe``.

Rules — the same as :class:`distcalc.parallel.ParallelConfig` and :func:`distcalc.parallel.validate_for_model`
(Megatron-LM constraints; the divisibility and layer-split predicates are the same functions,
:mod:`distcalc.parallel_rules`, and a test checks the two agree), plus the search-only rules marked (*); each is
named in :class:`Rejections.rules`:

* divisibility — every TP-sharded width (heads, KV heads, hidden, MLP and expert-MLP widths) by ``tp``;
  ``seq_len % (2·cp)`` when cp > 1 (load-balanced CP chunks); ``num_experts % ep``; the layers by the pipeline
  (first by ``pp`` alone, then by ``pp·vpp``): ``L % (pp·vpp) == 0`` (even split) or, with the embedding/loss
  split, pp > 1, ``(L + 2) % (pp·vpp) == 0`` and ``(L + 2) // pp >= 2``; ``global_batch % (micro_batch·dp)``;
  with sequence parallelism ``(seq_len / cp) % tp``; and (*) for the interleaved schedule the number of
  micro-batches ``global_batch / (micro_batch·dp)`` a multiple of ``pp`` (Megatron-LM's interleaved schedule
  requires it, Narayanan et al. 2021 §2.2; :class:`distcalc.schedules.classic.Interleaved`).
* group does not fit (*) — a TP group must lie inside one node's fast tier: ``tp`` divides ``gpus_per_node``
  (when N ≥ gpus_per_node; otherwise ``tp`` divides N, which always holds).
* incompatible — ``vpp > 1`` needs the interleaved schedule; the interleaved and zero-bubble (*) schedules
  need ``pp > 1``; DualPipe an even ``pp``, DualPipe(V) at least 2·pp micro-batches (an even number for
  DualPipe), ZB-V and DualPipeV the layers cut into 2·pp chunks; (*) an executed schedule (zb-h1, zb-h2,
  zb-2p, zb-v, dualpipe, dualpipev; interleaved with uneven ends) whose plan has more than
  :data:`EXECUTED_PASS_BUDGET` passes.
* equivalent (*) (skipped, not rejected: the same job as a configuration already kept) — any schedule
  other than 1F1B when ``pp = 1`` (there is no pipeline), interleaved with ``vpp = 1`` (that is 1F1B),
  sequence parallelism with ``tp = 1``, ZeRO stage > 0 with ``dp·cp = 1`` (ZeRO shards over the dp·cp group).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from distcalc.parallel import Recompute, Schedule
from distcalc.parallel_batch import field_values
from distcalc.parallel_rules import (cp_splits_sequence, divides, layers_fit, sp_splits_sequence, tp_sharded_widths,
                                     uneven_fits)
from distcalc.schedules import DUAL_PIPE, V_SHAPED

if TYPE_CHECKING:
    from distcalc.model import ModelSpec

#: Batch fields (:data:`distcalc.parallel_batch.BATCH_FIELDS`) with one value per search (the job's), not
#: searched: the global batch, the sequence length, flash attention and the uneven ends
#: (SpaceChoices.first/last_stage_layers; the configuration arrays carry those, 0 where pp = 1, for the
#: memory and step-time models).
JOB_FIELDS = ("global_batch", "seq_len", "flash_attention", "first_stage_layers", "last_stage_layers")
#: The searched columns: every other batch field, in the CSV / JSON column order (kept; new columns go last).
COLUMNS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero", "recompute", "sequence_parallel", "schedule",
           "account_for_embedding_and_loss")
#: Megatron-LM's recompute modes; torchtitan's op-level "selective-op" is analysed, not searched (its code is
#: the last, so column value v still means RECOMPUTE_CHOICES[v]).
RECOMPUTE_CHOICES = tuple(name for name in Recompute.names_by_code() if name != Recompute.SELECTIVE_OP.value)
SCHEDULE_CHOICES = Schedule.names_by_code()
#: Searched when ``--schedule`` is not given: every schedule but ``zb-h1`` (the same ZB-H1 order as
#: ``zero-bubble``, which prices it by its closed form) and ``zb-2p`` (ZB-H2's times with one more micro-batch
#: in flight). The executed ones (zb-h2, zb-v, dualpipe, dualpipev) run one plan per (schedule, pp,
#: micro-batches), within :data:`EXECUTED_PASS_BUDGET`.
DEFAULT_SCHEDULES = tuple(name for name in SCHEDULE_CHOICES if name not in (Schedule.ZB_H1.value, Schedule.ZB_2P.value))
#: The closed-form schedules (gpipe, 1f1b, interleaved, zero-bubble); the others are executed.
CLOSED_FORM_SCHEDULES = tuple(name for name in SCHEDULE_CHOICES if not Schedule.executed(Schedule(name).code))
#: Most passes (F, B, W per micro-batch per virtual stage, over all devices) of a plan that the search
#: executes: building and executing a plan costs about 10 µs a pass in Python, and a search meets one plan
#: per (schedule, pp, micro-batches) — Llama 3 405B on 16,384 GPUs meets 212 of them, 9.1 million passes
#: (over three minutes). Larger plans are rejected by this rule (counted; ``distcalc analyze`` prices any).
EXECUTED_PASS_BUDGET = 20_000
#: Other spellings accepted by ``--schedule``.
SCHEDULE_ALIASES = {"zb-1p": "zb-h1"}
ZERO_CHOICES = field_values("zero")
_BUDGET_RULE = f"executed schedule: its plan has more than {EXECUTED_PASS_BUDGET} passes"
_INTERLEAVED, _ONE_F_ONE_B, _ZERO_BUBBLE = Schedule.INTERLEAVED.code, Schedule.ONE_F_ONE_B.code, Schedule.ZERO_BUBBLE.code
_DUALPIPE = Schedule.DUALPIPE.code
INDEX_DTYPE = np.int64

ConfigArrays = dict[str, np.ndarray]


class RejectReason(str, Enum):
    """Why a combination of candidate values is not searched."""

    DIVISIBILITY = "divisibility"
    GROUP_DOES_NOT_FIT = "group_does_not_fit"
    INCOMPATIBLE = "incompatible"
    OOM = "oom"


@dataclass(frozen=True)
class SpaceLimits:
    """The facts about model, job and cluster that decide which configurations are valid.

    ``num_experts`` is 1 for a dense model. ``gpus_per_node`` is the size of the cluster's fast (NVLink /
    NVSwitch) tier, the largest group a TP group may span.
    """

    num_layers: int
    num_heads: int
    num_kv_heads: int
    num_experts: int
    seq_len: int
    global_batch: int
    gpus_per_node: int
    tp_sharded: tuple[tuple[str, int], ...] = ()  # further widths TP must divide: (name, value)


def limits_for_model(spec: "ModelSpec", *, seq_len: int, global_batch: int, gpus_per_node: int) -> SpaceLimits:
    """The :class:`SpaceLimits` of training ``spec`` (a :class:`distcalc.model.ModelSpec`); the TP-sharded
    widths are those :func:`distcalc.parallel.validate_for_model` checks."""
    sharded = tp_sharded_widths(spec)[2:]  # heads and KV heads are SpaceLimits fields of their own
    return SpaceLimits(num_layers=spec.num_hidden_layers, num_heads=spec.num_attention_heads,
                       num_kv_heads=spec.kv_heads, num_experts=spec.num_local_experts if spec.is_moe else 1,
                       seq_len=int(seq_len), global_batch=int(global_batch), gpus_per_node=int(gpus_per_node),
                       tp_sharded=tuple(sharded))


@dataclass(frozen=True)
class SpaceChoices:
    """Optional restrictions of the searched values (``None`` = every candidate)."""

    zero: tuple[int, ...] = ZERO_CHOICES
    recompute: tuple[str, ...] = RECOMPUTE_CHOICES
    schedule: tuple[str, ...] = DEFAULT_SCHEDULES
    sequence_parallel: tuple[bool, ...] = (False, True)
    embedding_loss_split: bool = True  # False: only even splits of the layers (L % (pp·vpp) == 0)
    # Uneven ends (Megatron-Core --decoder-first/last-pipeline-num-layers; 0: not given): every pipelined
    # configuration (pp ≥ 2) puts these layers on its first / last stage, the other stages share the rest
    # evenly; vpp 1 only.
    first_stage_layers: int = 0
    last_stage_layers: int = 0

    @property
    def uneven(self) -> bool:
        return bool(self.first_stage_layers or self.last_stage_layers)


@dataclass
class Rejections:
    """Counts of universe combinations dropped, by reason, and by the rule that dropped them."""

    by_reason: dict[str, int] = field(default_factory=lambda: {r.value: 0 for r in RejectReason})
    rules: dict[str, int] = field(default_factory=dict)
    equivalent: int = 0

    def add(self, reason: RejectReason, rule: str, count: int) -> None:
        if count:
            self.by_reason[reason.value] += int(count)
            self.rules[rule] = self.rules.get(rule, 0) + int(count)

    def merge(self, other: "Rejections") -> None:
        for key, value in other.by_reason.items():
            self.by_reason[key] += value
        for key, value in other.rules.items():
            self.rules[key] = self.rules.get(key, 0) + value
        self.equivalent += other.equivalent

    @property
    def total(self) -> int:
        return sum(self.by_reason.values())


@dataclass
class Space:
    """The valid configurations for one GPU count (one row per configuration) and what was dropped."""

    gpus: int
    configs: ConfigArrays
    universe: int
    rejections: Rejections

    @property
    def size(self) -> int:
        return int(self.configs["tp"].shape[0])


def divisors(n: int) -> np.ndarray:
    """All positive divisors of ``n`` in increasing order."""
    candidates = np.arange(1, int(n) + 1, dtype=INDEX_DTYPE)
    return candidates[n % candidates == 0]


def _cross(columns: ConfigArrays, name: str, values: np.ndarray) -> ConfigArrays:
    """Cartesian product of the rows in ``columns`` with ``values`` (new column ``name``)."""
    rows = next(iter(columns.values())).shape[0]
    values = np.asarray(values, dtype=INDEX_DTYPE)
    out = {key: np.repeat(col, values.shape[0]) for key, col in columns.items()}
    out[name] = np.tile(values, rows)
    return out


def _pipeline_fits(limits: SpaceLimits, pp: np.ndarray, chunks: np.ndarray, split: bool) -> np.ndarray:
    """Whether the layers can be cut into ``chunks`` (pp or pp·vpp) equal pieces over ``pp`` stages: evenly
    (``L % chunks == 0``) or, when ``split``, with the embedding and the loss taking a slot each (pp > 1,
    ``(L + 2) % chunks == 0``, ``(L + 2) // pp >= 2``; :func:`distcalc.parallel.validate_for_model`)."""
    ok = layers_fit(limits.num_layers, pp, chunks, False)
    return ok | layers_fit(limits.num_layers, pp, chunks, True) if split else ok


def _uneven_fits(limits: SpaceLimits, pp: np.ndarray, first: int, last: int) -> np.ndarray:
    """Whether L − first − last layers split evenly (≥ 1 each) over the other stages of ``pp`` (pp ≥ 2);
    pp = 1 always fits (no pipeline, the ends do not apply)."""
    return uneven_fits(limits.num_layers, pp, first, last)


def _uneven_chunks_fit(limits: SpaceLimits, pp: np.ndarray, vpp: np.ndarray, first: int, last: int) -> np.ndarray:
    """With uneven ends and vpp > 1 every chunk of a stage holds its layers / vpp (Megatron-Core's
    interleaved uneven layout): the first, last and middle-stage layer counts divisible by vpp."""
    given = int(first > 0) + int(last > 0)
    middle = (limits.num_layers - first - last) // np.maximum(pp - given, 1)
    return (first % vpp == 0) & (last % vpp == 0) & ((pp - given == 0) | (middle % vpp == 0))


_PP_RULE = "num_layers % pp (and num_layers+2 with the embedding/loss split)"
_UNEVEN_RULE = "num_layers - first - last over the other stages"
_PP_VPP_RULE = "num_layers % (pp*vpp) (and num_layers+2 with the embedding/loss split)"


def _select(columns: ConfigArrays, keep: np.ndarray) -> ConfigArrays:
    return {key: col[keep] for key, col in columns.items()}


class _Filter:
    """Applies named rules in order; a row is counted under the first rule it breaks."""

    def __init__(self, columns: ConfigArrays, multiplicity: int, rejections: Rejections):
        self.columns = columns
        self.multiplicity = multiplicity
        self.rejections = rejections
        self.alive = np.ones(next(iter(columns.values())).shape[0], dtype=bool)

    def reject(self, reason: RejectReason | None, rule: str, bad: np.ndarray) -> None:
        dropped = bad & self.alive
        count = int(np.count_nonzero(dropped)) * self.multiplicity
        if reason is None:
            self.rejections.equivalent += count
        else:
            self.rejections.add(reason, rule, count)
        self.alive &= ~bad

    def result(self) -> ConfigArrays:
        return _select(self.columns, self.alive)


def enumerate_space(limits: SpaceLimits, gpus: int, choices: SpaceChoices | None = None) -> Space:
    """All valid configurations of ``limits`` on ``gpus`` GPUs (see the module docstring for the rules)."""
    choices = choices or SpaceChoices()
    n = int(gpus)
    divs = divisors(n)
    split = bool(choices.embedding_loss_split)
    vpp_values = divisors(limits.num_layers)
    if split:
        vpp_values = np.union1d(vpp_values, divisors(limits.num_layers + 2))
    mb_values = divisors(limits.global_batch)
    zero_values = np.array(sorted(set(choices.zero)), dtype=INDEX_DTYPE)
    recompute_values = np.array([Recompute(r).code for r in choices.recompute], dtype=INDEX_DTYPE)
    schedule_values = np.array([Schedule(s).code for s in choices.schedule], dtype=INDEX_DTYPE)
    sp_values = np.array(sorted({int(bool(s)) for s in choices.sequence_parallel}), dtype=INDEX_DTYPE)
    rejections = Rejections()

    # Stage 1: degrees. tp, cp, pp with product dividing N; dp the rest; ep over the divisors of dp·cp.
    tp, cp, pp = (g.ravel() for g in np.meshgrid(divs, divs, divs, indexing="ij"))
    ok = n % (tp * cp * pp) == 0
    tp, cp, pp = tp[ok], cp[ok], pp[ok]
    dp = n // (tp * cp * pp)
    dense = limits.num_experts <= 1  # expert parallelism is no dimension of a dense model
    ep_rows = [(i, e) for i in range(dp.shape[0])
               for e in ((1,) if dense else divisors(int(dp[i] * cp[i])))]
    index = np.array([i for i, _ in ep_rows], dtype=INDEX_DTYPE)
    degrees = {"tp": tp[index], "cp": cp[index], "pp": pp[index], "dp": dp[index],
               "ep": np.array([e for _, e in ep_rows], dtype=INDEX_DTYPE)}
    later = (vpp_values.size * schedule_values.size * mb_values.size * zero_values.size
             * recompute_values.size * sp_values.size)
    universe = degrees["tp"].shape[0] * later
    f = _Filter(degrees, later, rejections)
    f.reject(RejectReason.DIVISIBILITY, "num_heads % tp", ~divides(limits.num_heads, f.columns["tp"]))
    f.reject(RejectReason.DIVISIBILITY, "num_kv_heads % tp", ~divides(limits.num_kv_heads, f.columns["tp"]))
    if choices.uneven:
        f.reject(RejectReason.DIVISIBILITY, _UNEVEN_RULE, ~_uneven_fits(limits, f.columns["pp"],
                                                                         choices.first_stage_layers,
                                                                         choices.last_stage_layers))
    else:
        f.reject(RejectReason.DIVISIBILITY, _PP_RULE, ~_pipeline_fits(limits, f.columns["pp"], f.columns["pp"], split))
    for name, width in limits.tp_sharded:
        f.reject(RejectReason.DIVISIBILITY, f"{name} % tp", ~divides(width, f.columns["tp"]))
    f.reject(RejectReason.DIVISIBILITY, "seq_len % (2*cp)", ~cp_splits_sequence(limits.seq_len, f.columns["cp"]))
    f.reject(RejectReason.DIVISIBILITY, "num_experts % ep", ~divides(max(limits.num_experts, 1), f.columns["ep"]))
    node = min(limits.gpus_per_node, n)
    f.reject(RejectReason.GROUP_DOES_NOT_FIT, "tp spans more than one node", node % f.columns["tp"] != 0)
    columns = f.result()

    # Stage 2: pipeline (vpp, schedule).
    later = mb_values.size * zero_values.size * recompute_values.size * sp_values.size
    columns = _cross(_cross(columns, "vpp", vpp_values), "schedule", schedule_values)
    f = _Filter(columns, later, rejections)
    pp, vpp, schedule = columns["pp"], columns["vpp"], columns["schedule"]
    if choices.uneven:
        f.reject(RejectReason.INCOMPATIBLE, "uneven first/last stages: gpipe, 1f1b, interleaved or zero-bubble",
                 (pp > 1) & Schedule.executed(schedule))
        f.reject(RejectReason.DIVISIBILITY, "uneven first/last stages: first, last and middle layers % vpp",
                 (vpp > 1) & ~_uneven_chunks_fit(limits, pp, vpp, choices.first_stage_layers,
                                                 choices.last_stage_layers))
    else:
        f.reject(RejectReason.DIVISIBILITY, _PP_VPP_RULE, ~_pipeline_fits(limits, pp, pp * vpp, split))
    f.reject(None, "schedule without pipeline", (pp == 1) & (schedule != _ONE_F_ONE_B) & (vpp == 1))
    f.reject(RejectReason.INCOMPATIBLE, "vpp > 1 needs the interleaved schedule",
             (vpp > 1) & (schedule != _INTERLEAVED))
    f.reject(RejectReason.INCOMPATIBLE, "interleaved needs pp > 1", (pp == 1) & (schedule == _INTERLEAVED))
    f.reject(None, "interleaved with vpp = 1 is 1f1b", (schedule == _INTERLEAVED) & (vpp == 1))
    f.reject(RejectReason.INCOMPATIBLE, "zero-bubble needs pp > 1", (pp == 1) & (schedule == _ZERO_BUBBLE))
    f.reject(RejectReason.INCOMPATIBLE, "dualpipe needs an even pp", (schedule == _DUALPIPE) & (pp % 2 != 0))
    # The split is derived: on exactly where the layers alone cannot be cut evenly.
    split_on = limits.num_layers % (pp * vpp) != 0
    v_shape = V_SHAPED[schedule]  # two chunks per stage (the registry's class flag)
    f.reject(RejectReason.DIVISIBILITY, "V-shaped: (num_layers [+2 split]) % (2*pp)",
             v_shape & ~layers_fit(limits.num_layers, pp, 2 * pp * vpp, split_on))
    columns = f.result()
    columns["account_for_embedding_and_loss"] = (
        limits.num_layers % (columns["pp"] * columns["vpp"]) != 0).astype(INDEX_DTYPE)
    if choices.uneven:
        pipelined = columns["pp"] > 1
        columns["account_for_embedding_and_loss"] = np.zeros_like(columns["pp"])
        columns["first_stage_layers"] = np.where(pipelined, choices.first_stage_layers, 0).astype(INDEX_DTYPE)
        columns["last_stage_layers"] = np.where(pipelined, choices.last_stage_layers, 0).astype(INDEX_DTYPE)

    # Stage 3: micro-batch.
    later = zero_values.size * recompute_values.size * sp_values.size
    columns = _cross(columns, "micro_batch", mb_values)
    f = _Filter(columns, later, rejections)
    per_step = columns["micro_batch"] * columns["dp"]
    f.reject(RejectReason.DIVISIBILITY, "global_batch % (micro_batch*dp)", ~divides(limits.global_batch, per_step))
    micro_batches = limits.global_batch // per_step
    f.reject(RejectReason.DIVISIBILITY, "interleaved: micro-batches % pp",
             (columns["schedule"] == _INTERLEAVED) & (micro_batches % columns["pp"] != 0))
    dual = DUAL_PIPE[columns["schedule"]]  # the DualPipe family (the registry's class flag)
    f.reject(RejectReason.DIVISIBILITY, "dualpipe(v): micro-batches >= 2*pp (and even for dualpipe)",
             dual & ((micro_batches < 2 * columns["pp"])
                     | ((columns["schedule"] == _DUALPIPE) & (micro_batches % 2 != 0))))
    sched = columns["schedule"]
    chunks = np.where(V_SHAPED[sched], 2, 1)
    passes = 3 * chunks * columns["pp"] * micro_batches
    executed = Schedule.executed(sched)
    if choices.uneven:  # interleaved with uneven ends is executed too: F and BW per chunk
        executed = executed | (sched == _INTERLEAVED)
        passes = np.where(sched == _INTERLEAVED, 2 * columns["vpp"] * columns["pp"] * micro_batches, passes)
    f.reject(RejectReason.INCOMPATIBLE, _BUDGET_RULE, executed & (columns["pp"] > 1) & (passes > EXECUTED_PASS_BUDGET))
    columns = f.result()

    # Stage 4: memory options: sequence parallelism, then ZeRO, then recompute (filtered in between).
    columns = _cross(columns, "sequence_parallel", sp_values)
    f = _Filter(columns, zero_values.size * recompute_values.size, rejections)
    sp, tp = columns["sequence_parallel"] == 1, columns["tp"]
    f.reject(None, "sequence parallel with tp = 1", sp & (tp == 1))
    f.reject(RejectReason.DIVISIBILITY, "sequence parallel: (seq_len/cp) % tp",
             sp & ~sp_splits_sequence(limits.seq_len, columns["cp"], tp))
    columns = _cross(f.result(), "zero", zero_values)
    f = _Filter(columns, recompute_values.size, rejections)
    f.reject(None, "zero with dp*cp = 1", (columns["zero"] > 0) & (columns["dp"] * columns["cp"] == 1))
    columns = _cross(f.result(), "recompute", recompute_values)

    ordered = {name: columns[name] for name in COLUMNS}
    if choices.uneven:  # carried for the models, not a result column (see COLUMNS)
        ordered.update({name: columns[name] for name in ("first_stage_layers", "last_stage_layers")})
    return Space(gpus=n, configs=ordered, universe=int(universe), rejections=rejections)


__all__ = [
    "COLUMNS", "DEFAULT_SCHEDULES", "RECOMPUTE_CHOICES", "SCHEDULE_ALIASES", "SCHEDULE_CHOICES", "ZERO_CHOICES", "ConfigArrays", "RejectReason",
    "Rejections", "Space", "SpaceChoices", "SpaceLimits", "divisors", "enumerate_space", "limits_for_model",
]
