"""The parallel training configuration: degrees, ZeRO, recomputation, schedule, batch and precision.

Degrees follow Megatron-LM: ``gpus = tp · pp · cp · dp``; expert parallelism (EP) is carved out of the
data-parallel × context-parallel ranks (``ep`` divides ``dp·cp``; experts keep TP = tp). ``vpp`` is the
number of interleaved model chunks per pipeline stage (Narayanan et al. 2021 §2.2). Validation messages
name every factor, torchtitan style: ``tp(8) * pp(4) * cp(1) * dp(3) = 96 != gpus(64)``.

The enums carry integer ``code``s so that the vectorised formulas (memory, pipeline, search) can take
NumPy arrays of configurations.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from distcalc.errors import ConfigError
from distcalc.precision import Precision

if TYPE_CHECKING:
    from distcalc.model import ModelSpec


class Recompute(str, Enum):
    """Activation recomputation (Korthikanti et al. 2022 §5): none, selective (attention core), full (per layer);
    selective-op: torchtitan's op-level selective checkpointing (every second linear projection of a block and
    all its elementwise ops recomputed; :mod:`distcalc.op_checkpoint`)."""

    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"
    SELECTIVE_OP = "selective-op"

    @property
    def code(self) -> int:
        """Integer code for vectorised formulas: none 0, selective 1, full 2, selective-op 3."""
        return _RECOMPUTE_CODES[self]


class Schedule(str, Enum):
    """Pipeline schedule: GPipe, 1F1B (PipeDream-Flush), interleaved 1F1B, zero-bubble (ZB-H1 by its closed
    form), ZB-H1 executed, ZB-H2, ZB-V, DualPipe, DualPipeV (:mod:`distcalc.schedules`)."""

    GPIPE = "gpipe"
    ONE_F_ONE_B = "1f1b"
    INTERLEAVED = "interleaved"
    ZERO_BUBBLE = "zero-bubble"
    ZB_H1 = "zb-h1"
    ZB_H2 = "zb-h2"
    ZB_V = "zb-v"
    DUALPIPE = "dualpipe"
    DUALPIPEV = "dualpipev"

    @property
    def code(self) -> int:
        """Integer code for vectorised formulas: gpipe 0, 1f1b 1, interleaved 2, zero-bubble 3, zb-h2 4,
        zb-v 5, dualpipe 6, dualpipev 7, zb-h1 8."""
        return _SCHEDULE_CODES[self]


RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_SELECTIVE_OP = 0, 1, 2, 3
SCHEDULE_GPIPE, SCHEDULE_1F1B, SCHEDULE_INTERLEAVED, SCHEDULE_ZERO_BUBBLE = 0, 1, 2, 3
#: Schedules executed by :mod:`distcalc.schedules` (codes >= SCHEDULE_ZB_H2; the four above keep closed forms;
#: zb-h1 is ZB-H1 executed, zero-bubble the same schedule by its closed form).
SCHEDULE_ZB_H2, SCHEDULE_ZB_V, SCHEDULE_DUALPIPE, SCHEDULE_DUALPIPEV, SCHEDULE_ZB_H1 = 4, 5, 6, 7, 8
_RECOMPUTE_CODES = {Recompute.NONE: 0, Recompute.SELECTIVE: 1, Recompute.FULL: 2, Recompute.SELECTIVE_OP: 3}
_SCHEDULE_CODES = {Schedule.GPIPE: 0, Schedule.ONE_F_ONE_B: 1, Schedule.INTERLEAVED: 2, Schedule.ZERO_BUBBLE: 3,
                   Schedule.ZB_H1: 8, Schedule.ZB_H2: 4, Schedule.ZB_V: 5, Schedule.DUALPIPE: 6,
                   Schedule.DUALPIPEV: 7}


#: Schedules holding two chunks per device in a V (virtual stage j and 2p − 1 − j on device j).
V_SHAPED_SCHEDULES = (SCHEDULE_ZB_V, SCHEDULE_DUALPIPEV)


def schedule_shape_problem(code: int, pp: int, micro_batches: int) -> str | None:
    """Why schedule ``code`` cannot run ``pp`` stages with ``micro_batches`` micro-batches (None when it can):
    ZB-H2, ZB-V, DualPipe and DualPipeV need pp >= 2; DualPipe (two directions, half the micro-batches each)
    an even pp and an even number of micro-batches; DualPipe and DualPipeV at least 2·pp micro-batches (the
    deepseek-ai/DualPipe ``step`` asserts both)."""
    name = {SCHEDULE_ZB_H2: "zb-h2", SCHEDULE_ZB_V: "zb-v", SCHEDULE_DUALPIPE: "dualpipe",
            SCHEDULE_DUALPIPEV: "dualpipev"}.get(int(code))
    if name is None:
        return None
    if pp < 2:
        return f"schedule {name} needs pp >= 2 (got pp({pp}))"
    if code == SCHEDULE_DUALPIPE and (pp % 2 or micro_batches % 2):
        return f"schedule {name} needs an even pp and an even number of micro-batches (got pp({pp}), {micro_batches})"
    if code in (SCHEDULE_DUALPIPE, SCHEDULE_DUALPIPEV) and micro_batches < 2 * pp:
        return f"schedule {name} needs micro-batches({micro_batches}) >= 2 * pp({pp}) = {2 * pp}"
    return None


def require_positive(**degrees: Any) -> None:
    """Refuse the first degree (or count) below 1, naming it: ``pp(0) must be >= 1``."""
    for name, value in degrees.items():
        if value is not None and int(value) < 1:
            raise ConfigError(f"{name}({value}) must be >= 1")


class ParallelConfig(BaseModel):
    """A data/tensor/pipeline/context/expert-parallel training configuration (validated on creation).

    Defaults: degrees 1; ``dp`` = gpus / (tp·pp·cp); ``gpus`` = tp·pp·cp·dp; ``schedule`` = interleaved
    when vpp > 1 else 1f1b; ``global_batch`` = micro_batch · dp · m with m = 2·pp micro-batches per DP rank
    (1 without pipelining) — the fewest that keep every 1F1B and interleaved stage at its peak memory.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)

    gpus: int | None = Field(None, gt=0, description="total GPUs (default tp·pp·cp·dp)")
    tp: int = Field(1, gt=0, description="tensor-parallel degree")
    pp: int = Field(1, gt=0, description="pipeline-parallel degree (stages)")
    dp: int | None = Field(None, gt=0, description="data-parallel degree (default gpus/(tp·pp·cp))")
    cp: int = Field(1, gt=0, description="context-parallel degree (sequence split for attention)")
    ep: int = Field(1, gt=0, description="expert-parallel degree (divides dp·cp)")
    vpp: int = Field(1, gt=0, description="interleaved model chunks per pipeline stage")
    zero: int = Field(0, ge=0, le=3,
                      description="ZeRO stage over the dp·cp group: 0, 1 (optimizer), 2 (+grads), 3 (+params)")
    distributed_optimizer: bool = Field(False, description="Megatron distributed optimizer (= ZeRO-1 sharding)")
    sequence_parallel: bool = Field(False, description="Megatron sequence parallelism in the TP group")
    recompute: Recompute = Field(Recompute.NONE, description="activation recomputation")
    micro_batch: int = Field(1, gt=0, description="sequences per micro-batch (b)")
    global_batch: int | None = Field(None, gt=0, description="sequences per optimizer step")
    seq_len: int = Field(4096, gt=0, description="tokens per sequence (s)")
    schedule: Schedule | None = Field(None, description="pipeline schedule")
    dtype: Precision = Field(Precision.BF16, description="compute dtype")
    flash_attention: bool = Field(True, description="fused attention that never stores the s×s scores")
    account_for_embedding_and_loss: bool = Field(
        False, description="the embedding and the output layer + loss each take one layer's slot in the pipeline "
                           "split: the first and the last stage hold one transformer layer fewer")
    first_stage_layers: int | None = Field(
        None, gt=0, description="transformer layers on the first pipeline stage (Megatron-Core "
                                "--decoder-first-pipeline-num-layers); the other stages share the rest evenly")
    last_stage_layers: int | None = Field(
        None, gt=0, description="transformer layers on the last pipeline stage (Megatron-Core "
                                "--decoder-last-pipeline-num-layers)")

    def __init__(self, **data: object) -> None:
        # Cross-field checks run outside pydantic validators so that they raise ConfigError itself (pydantic
        # would wrap a ValueError raised inside a validator into a ValidationError).
        super().__init__(**self._resolve(data))
        self._check()

    @staticmethod
    def _resolve(data: dict[str, object]) -> dict[str, object]:
        data = {k: v for k, v in data.items() if v is not None}
        tp, pp, cp = (int(data.get(k, 1)) for k in ("tp", "pp", "cp"))
        require_positive(**{k: data[k] for k in ("tp", "pp", "cp", "vpp", "ep", "micro_batch") if k in data})
        model_parallel = tp * pp * cp
        if "dp" not in data:
            gpus = int(data.get("gpus", model_parallel))
            if gpus % model_parallel:
                raise ConfigError(
                    f"gpus({gpus}) is not divisible by tp({tp}) * pp({pp}) * cp({cp}) = {model_parallel}"
                )
            data["dp"] = gpus // model_parallel
        dp = int(data["dp"])
        data.setdefault("gpus", model_parallel * dp)
        if model_parallel * dp != int(data["gpus"]):
            raise ConfigError(
                f"tp({tp}) * pp({pp}) * cp({cp}) * dp({dp}) = {model_parallel * dp} != gpus({data['gpus']})"
            )
        vpp = int(data.get("vpp", 1))
        if "schedule" not in data:
            data["schedule"] = Schedule.INTERLEAVED if vpp > 1 else Schedule.ONE_F_ONE_B
        if "global_batch" not in data:
            data["global_batch"] = int(data.get("micro_batch", 1)) * dp * (2 * pp if pp > 1 else 1)
        return data

    def _check(self) -> None:
        dp = self.data_parallel
        per_step = self.micro_batch * dp
        if self.global_batch % per_step:
            raise ConfigError(
                f"global_batch({self.global_batch}) is not divisible by micro_batch({self.micro_batch}) * "
                f"dp({dp}) = {per_step}"
            )
        if (dp * self.cp) % self.ep:
            raise ConfigError(
                f"ep({self.ep}) must divide dp({dp}) * cp({self.cp}) = {dp * self.cp} "
                "(experts are sharded over the data-parallel ranks)"
            )
        if self.vpp > 1 and self.schedule != Schedule.INTERLEAVED:
            raise ConfigError(f"vpp({self.vpp}) > 1 needs schedule interleaved (got {self.schedule.value})")
        uneven = self.first_stage_layers is not None or self.last_stage_layers is not None
        if uneven and (self.pp < 2 or self.vpp > 1 or self.account_for_embedding_and_loss):
            raise ConfigError(
                f"--first-stage-layers/--last-stage-layers need pp >= 2, vpp 1 and no embedding/loss split (got "
                f"pp({self.pp}), vpp({self.vpp}), account_for_embedding_and_loss({self.account_for_embedding_and_loss}))")
        if uneven and self.resolved_schedule.code >= SCHEDULE_ZB_H2:
            raise ConfigError(
                f"--first-stage-layers/--last-stage-layers apply to the gpipe, 1f1b and zero-bubble schedules; the "
                f"executed schedule {self.resolved_schedule.value} prices equal stages (got schedule "
                f"{self.resolved_schedule.value})")
        if self.schedule == Schedule.INTERLEAVED and (self.vpp < 2 or self.pp < 2):
            raise ConfigError(
                f"schedule interleaved needs pp >= 2 and vpp >= 2 (got pp({self.pp}), vpp({self.vpp}))"
            )
        problem = schedule_shape_problem(self.resolved_schedule.code, self.pp, self.num_micro_batches)
        if problem:
            raise ConfigError(problem)

    # ----------------------------------------------------------------------------------- derived
    @property
    def data_parallel(self) -> int:
        """dp (always resolved after validation)."""
        return int(self.dp or 1)

    @property
    def world_size(self) -> int:
        """Total GPUs tp·pp·cp·dp."""
        return int(self.gpus or self.tp * self.pp * self.cp * self.data_parallel)

    @property
    def num_micro_batches(self) -> int:
        """m = global_batch / (micro_batch · dp), micro-batches per DP rank per step."""
        per_step = self.micro_batch * self.data_parallel
        return int(self.global_batch or per_step) // per_step

    @property
    def zero_stage(self) -> int:
        """Effective ZeRO stage for memory: the distributed optimizer counts as stage 1."""
        return max(self.zero, 1 if self.distributed_optimizer else 0)

    @property
    def resolved_schedule(self) -> Schedule:
        """The schedule (always set after validation)."""
        return self.schedule or Schedule.ONE_F_ONE_B


ArrayLike = Any


def pipeline_slots_offset(split: ArrayLike, pp: ArrayLike) -> ArrayLike:
    """1 where the embedding and the loss take a layer slot each in the pipeline split (and pp > 1), else 0."""
    return np.where(np.asarray(pp) > 1, np.asarray(split, dtype=np.int64), 0)


def stage_layer_split(layers: int, pp: ArrayLike, split: ArrayLike = 0, first: ArrayLike = 0,
                      last: ArrayLike = 0) -> tuple[Any, Any, Any]:
    """(first, middle, last) transformer layers per stage, float arrays. Even: L/pp each; with ``split`` (the
    embedding and the loss a slot each) (L + 2)/pp in the middle and one fewer at both ends; with ``first``
    and/or ``last`` > 0 (Megatron-Core ``--decoder-first/last-pipeline-num-layers``, uneven stages) those
    counts at the ends and the rest shared evenly by the other stages (0: not given). With pp = 2 and both
    ends given there is no middle stage; its count is then the larger end's (it only paces a middle stage
    when pp ≥ 3)."""
    p = np.asarray(pp, dtype=float)
    e = pipeline_slots_offset(split, pp)
    f_in, l_in = np.asarray(first, dtype=float), np.asarray(last, dtype=float)
    uneven = (f_in > 0) | (l_in > 0)
    mid_even = (layers + 2.0 * e) / p
    given = np.where(f_in > 0, 1, 0) + np.where(l_in > 0, 1, 0)
    others = np.maximum(p - given, 1.0)
    rest = (layers - f_in - l_in) / others
    f_out = np.where(uneven, np.where(f_in > 0, f_in, rest), mid_even - e)
    l_out = np.where(uneven, np.where(l_in > 0, l_in, rest), mid_even - e)
    mid = np.where(uneven, np.where(p - given >= 1, rest, np.maximum(f_out, l_out)), mid_even)
    return f_out, mid, l_out


def chunk_layer_range(layers: int, chunk: ArrayLike, pp: ArrayLike, vpp: ArrayLike, split: ArrayLike = 0):
    """Transformer layers ``[start, stop)`` of global model chunk ``chunk`` (stage ``chunk mod pp``, Megatron's
    interleaved layout: stage i holds chunks i, i + pp, …). The L layers (+ 2 slots for the embedding and the
    loss when ``split``) are cut into pp·vpp equal chunks; the embedding takes the first slot of chunk 0, the
    loss the last slot of the last chunk (Megatron-Core ``--account-for-embedding-in-pipeline-split``,
    ``--account-for-loss-in-pipeline-split``; Llama 3, Dubey et al. 2024 §3.3.2). Elementwise on arrays."""
    e = pipeline_slots_offset(split, pp)
    per_chunk = (layers + 2 * e) // (np.asarray(pp) * np.asarray(vpp))
    start = np.clip(np.asarray(chunk) * per_chunk - e, 0, layers)
    stop = np.clip((np.asarray(chunk) + 1) * per_chunk - e, 0, layers)
    return start, stop


def stage_layer_count(layers: int, stage: ArrayLike, pp: ArrayLike, split: ArrayLike = 0, first: ArrayLike = 0,
                      last: ArrayLike = 0) -> ArrayLike:
    """Transformer layers held by pipeline stage ``stage``: L/pp, or with ``split`` (L + 2)/pp less one on the
    first and on the last stage (:func:`chunk_layer_range`), or with uneven ends ``first``/``last``
    (:func:`stage_layer_split`). Elementwise on arrays; float."""
    s = np.asarray(stage)
    if not (np.any(np.asarray(first)) or np.any(np.asarray(last))):
        e = pipeline_slots_offset(split, pp)
        p = np.asarray(pp, dtype=float)
        return (layers + 2.0 * e) / p - e * ((s == 0).astype(float) + (s == np.asarray(pp) - 1).astype(float))
    f, m, l_ = stage_layer_split(layers, pp, split, first, last)
    return np.where(s == 0, f, np.where(s == np.asarray(pp) - 1, l_, m))


def stage_layer_range(layers: int, stage: ArrayLike, pp: ArrayLike, first: ArrayLike = 0, last: ArrayLike = 0):
    """Transformer layers ``[start, stop)`` of stage ``stage`` with uneven ends (vpp = 1): the first stage
    [0, f), a middle stage s [f + (s − 1)·m, f + s·m), the last [L − l, L). Elementwise; int64."""
    f, m, _ = stage_layer_split(layers, pp, 0, first, last)
    s = np.asarray(stage)
    start = np.where(s == 0, 0.0, f + (s - 1) * m)
    stop = np.where(s == np.asarray(pp) - 1, float(layers), np.where(s == 0, f, f + s * m))
    return np.rint(start).astype(np.int64), np.rint(stop).astype(np.int64)


def _divisors(n: int) -> str:
    values = [d for d in range(1, n + 1) if n % d == 0]
    shown = values if len(values) <= 16 else values[:15] + ["...", values[-1]]
    return ", ".join(str(v) for v in shown)


def validate_for_model(config: ParallelConfig, spec: "ModelSpec") -> None:
    """Check that ``config`` can shard ``spec`` the way Megatron-LM requires; :class:`ConfigError` naming
    the value and what is valid.

    Checks: heads, KV heads, hidden and MLP widths divisible by tp (Megatron-core ``divide``); layers by
    pp·vpp; routed experts by ep (and ep = 1 for dense models); seq_len by 2·cp (load-balanced CP chunks,
    Megatron ``get_batch_on_this_cp_rank``), within a learned position table, and, with sequence
    parallelism, the local sequence by tp.
    """
    tp, name = config.tp, spec.name
    checks = [
        ("num_attention_heads", spec.num_attention_heads, tp, "tp"),
        ("num_key_value_heads", spec.kv_heads, tp, "tp"),
        ("hidden_size", spec.hidden_size, tp, "tp"),
        ("intermediate_size", spec.intermediate_size, tp, "tp"),
    ]
    if spec.is_moe:
        checks.append(("moe_intermediate_size", spec.expert_intermediate_size, tp, "tp"))
        checks.append(("num_local_experts", spec.num_local_experts, config.ep, "ep"))
    for field, value, degree, degree_name in checks:
        if value % degree:
            raise ConfigError(
                f"model {name!r}: {field}({value}) is not divisible by {degree_name}({degree}); "
                f"valid {degree_name}: {_divisors(value)}"
            )
    v_shape = config.resolved_schedule.code in V_SHAPED_SCHEDULES  # two chunks per stage
    stages = config.pp * config.vpp * (2 if v_shape else 1)
    chunks = f"pp({config.pp}) * vpp({config.vpp})" + (" * 2 (V-shaped schedule)" if v_shape else "")
    first, last = config.first_stage_layers or 0, config.last_stage_layers or 0
    if first or last:
        given = (1 if first else 0) + (1 if last else 0)
        rest, others = spec.num_hidden_layers - first - last, config.pp - given
        if rest < 0 or (others == 0 and rest != 0) or (others > 0 and (rest % others or rest // others < 1)):
            raise ConfigError(
                f"model {name!r}: num_hidden_layers({spec.num_hidden_layers}) - first({first}) - last({last}) = "
                f"{rest} layers do not split evenly over the other {others} of pp({config.pp}) stages "
                "(at least one layer each)")
    elif config.account_for_embedding_and_loss and config.pp > 1:
        slots = spec.num_hidden_layers + 2
        if slots % stages or slots // config.pp < 2:
            raise ConfigError(
                f"model {name!r}: num_hidden_layers({spec.num_hidden_layers}) + 2 (embedding and loss slots) = "
                f"{slots} is not divisible by {chunks} = {stages} (with at least 2 slots "
                f"per stage); valid pp·vpp: {_divisors(slots)}"
            )
    elif spec.num_hidden_layers % stages:
        hint = (f"; or --account-for-embedding-and-loss with pp·vpp dividing {spec.num_hidden_layers + 2}, or "
                "uneven ends with --first-stage-layers/--last-stage-layers" if config.pp > 1 else "")
        raise ConfigError(
            f"model {name!r}: num_hidden_layers({spec.num_hidden_layers}) is not divisible by {chunks} = {stages}; "
            f"valid pp·vpp: {_divisors(spec.num_hidden_layers)}{hint}"
        )
    if config.ep > 1 and not spec.is_moe:
        raise ConfigError(f"model {name!r} is dense: ep({config.ep}) must be 1")
    if config.cp > 1 and config.seq_len % (2 * config.cp):
        raise ConfigError(
            f"seq_len({config.seq_len}) is not divisible by 2 * cp({config.cp}) = {2 * config.cp} "
            "(context parallelism splits the sequence into 2·cp load-balanced chunks)"
        )
    if spec.position_embedding.value == "learned" and config.seq_len > spec.max_position_embeddings:
        raise ConfigError(
            f"model {name!r}: seq_len({config.seq_len}) exceeds its learned position table "
            f"max_position_embeddings({spec.max_position_embeddings})"
        )
    local = config.seq_len // config.cp
    if config.sequence_parallel and tp > 1 and local % tp:
        raise ConfigError(
            f"seq_len({config.seq_len}) / cp({config.cp}) = {local} is not divisible by tp({tp}) "
            "(sequence parallelism splits the sequence across the TP group)"
        )
