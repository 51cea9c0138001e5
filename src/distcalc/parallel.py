"""The parallel training configuration: degrees, ZeRO, recomputation, schedule, batch and precision.

Degrees follow Megatron-LM: ``gpus = tp · pp · cp · dp``; expert parallelism (EP) is carved out of the
data-parallel × context-parallel ranks (``ep`` divides ``dp·cp``; experts keep TP = tp). ``vpp`` is the
number of interleaved model chunks per pipeline stage (Narayanan et al. 2021 §2.2). Validation messages
name every factor, torchtitan style: ``tp(8) * pp(4) * cp(1) * dp(3) = 96 != gpus(64)``.

The enums (:mod:`distcalc.modes`, re-exported here) carry integer ``code``s declared with each member, so
that the vectorised formulas (memory, pipeline, step time, search) can take NumPy arrays of configurations;
:mod:`distcalc.parallel_batch` derives that array form from :class:`ParallelConfig`'s fields. The fields
themselves (names, types, units, bounds, descriptions) are :mod:`distcalc.parallel_schema`'s, which imports no
NumPy: the command line builds its options from them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from pydantic import ConfigDict

from distcalc.errors import ConfigError
from distcalc.ops import SCALAR, float_array, scalar_inputs
from distcalc.modes import (CodedEnum, Recompute, Schedule,  # noqa: F401 (re-exported)
                             schedule_shape_problem)
from distcalc.parallel_rules import (cp_splits_sequence, divides, layers_fit, sp_splits_sequence, tp_sharded_widths,
                                     uneven_fits)
from distcalc.parallel_schema import ParallelFields, require_positive  # noqa: F401 (re-exported)
from distcalc.precision import Precision  # noqa: F401 (re-exported)
from distcalc.schedules import V_SHAPED_SCHEDULES

if TYPE_CHECKING:
    from distcalc.model import ModelSpec

ArrayLike = Any  # int | numpy.ndarray (elementwise formulas)


def default_global_batch(micro_batch: ArrayLike, dp: ArrayLike, pp: ArrayLike) -> ArrayLike:
    """Sequences per step when none is given: ``micro_batch·dp·m`` with m = 2·pp micro-batches per DP rank
    (1 without pipelining) — the fewest that keep every 1F1B and interleaved stage at its peak memory.
    Elementwise on arrays."""
    return np.multiply(np.multiply(micro_batch, dp), np.where(np.asarray(pp) > 1, np.multiply(2, pp), 1))


def default_schedule_code(vpp: ArrayLike) -> ArrayLike:
    """The schedule when none is given: interleaved where vpp > 1, else 1F1B (codes; elementwise)."""
    return np.where(np.asarray(vpp) > 1, Schedule.INTERLEAVED.code, Schedule.ONE_F_ONE_B.code)


class ParallelConfig(ParallelFields):
    """A data/tensor/pipeline/context/expert-parallel training configuration (validated on creation): the
    fields of :class:`~distcalc.parallel_schema.ParallelFields`, their defaults resolved and their rules checked.

    Defaults: degrees 1; ``dp`` = gpus / (tp·pp·cp); ``gpus`` = tp·pp·cp·dp; ``schedule`` = interleaved
    when vpp > 1 else 1f1b; ``global_batch`` = micro_batch · dp · m with m = 2·pp micro-batches per DP rank
    (1 without pipelining) — the fewest that keep every 1F1B and interleaved stage at its peak memory.
    """

    model_config = ConfigDict(defer_build=False)  # validator built with the class, as for every other model

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
        if "schedule" not in data:
            data["schedule"] = Schedule.from_code(default_schedule_code(int(data.get("vpp", 1))))
        if "global_batch" not in data:
            data["global_batch"] = int(default_global_batch(int(data.get("micro_batch", 1)), dp, pp))
        return data

    def _check(self) -> None:
        dp = self.data_parallel
        per_step = self.micro_batch * dp
        if not divides(self.global_batch, per_step):
            raise ConfigError(
                f"global_batch({self.global_batch}) is not divisible by micro_batch({self.micro_batch}) * "
                f"dp({dp}) = {per_step}"
            )
        if not divides(dp * self.cp, self.ep):
            raise ConfigError(
                f"ep({self.ep}) must divide dp({dp}) * cp({self.cp}) = {dp * self.cp} "
                "(experts are sharded over the data-parallel ranks)"
            )
        if self.vpp > 1 and self.schedule != Schedule.INTERLEAVED:
            raise ConfigError(f"vpp({self.vpp}) > 1 needs schedule interleaved (got {self.schedule.value})")
        uneven = self.first_stage_layers is not None or self.last_stage_layers is not None
        interleaved = self.resolved_schedule == Schedule.INTERLEAVED
        if uneven and (self.pp < 2 or (self.vpp > 1 and not interleaved) or self.account_for_embedding_and_loss):
            raise ConfigError(
                f"--first-stage-layers/--last-stage-layers need pp >= 2, vpp 1 (or the interleaved schedule) and no "
                f"embedding/loss split (got pp({self.pp}), vpp({self.vpp}), account_for_embedding_and_loss("
                f"{self.account_for_embedding_and_loss}))")
        if uneven and Schedule.executed(self.resolved_schedule.code):
            raise ConfigError(
                f"--first-stage-layers/--last-stage-layers apply to the gpipe, 1f1b, interleaved and zero-bubble "
                f"schedules; the executed schedule {self.resolved_schedule.value} prices equal stages (got schedule "
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



def pipeline_slots_offset(split: ArrayLike, pp: ArrayLike, xp: Any = np) -> ArrayLike:
    """1 where the embedding and the loss take a layer slot each in the pipeline split (and pp > 1), else 0.
    ``xp``: :mod:`numpy`, or :data:`distcalc.ops.SCALAR` for Python integers (``split`` an int)."""
    return xp.where(xp.asarray(pp) > 1, xp.asarray(split, dtype=np.int64), 0)


class StageLayers(NamedTuple):
    """Transformer layers per pipeline stage (:func:`stage_layer_split`): the first stage, a middle stage and
    the last, each a float (array). Computed once per configuration and passed to whatever needs the split."""

    first: Any
    middle: Any
    last: Any


def stage_layer_split(layers: int, pp: ArrayLike, split: ArrayLike = 0, first: ArrayLike = 0,
                      last: ArrayLike = 0) -> StageLayers:
    """(first, middle, last) transformer layers per stage, float arrays. Even: L/pp each; with ``split`` (the
    embedding and the loss a slot each) (L + 2)/pp in the middle and one fewer at both ends; with ``first``
    and/or ``last`` > 0 (Megatron-Core ``--decoder-first/last-pipeline-num-layers``, uneven stages) those
    counts at the ends and the rest shared evenly by the other stages (0: not given). With pp = 2 and both
    ends given there is no middle stage; its count is then the larger end's (it only paces a middle stage
    when pp ≥ 3). One configuration (every input a single number) is evaluated on Python numbers
    (:mod:`distcalc.ops`, the same formula) and returned in the inputs' shape."""
    one = scalar_inputs(pp, split, first, last)
    if one is not None:
        (pp_one, split_one, first_one, last_one), shape = one
        return StageLayers(*(float_array(x, shape) for x in _stage_layer_split(
            layers, pp_one, int(split_one), first_one, last_one, SCALAR)))
    return StageLayers(*_stage_layer_split(layers, pp, split, first, last, np))


def _stage_layer_split(layers: int, pp: ArrayLike, split: ArrayLike, first: ArrayLike, last: ArrayLike,
                       xp: Any) -> tuple[Any, Any, Any]:
    """:func:`stage_layer_split` in the namespace ``xp``."""
    p = xp.asarray(pp, dtype=float)
    e = pipeline_slots_offset(split, pp, xp)
    f_in, l_in = xp.asarray(first, dtype=float), xp.asarray(last, dtype=float)
    uneven = (f_in > 0) | (l_in > 0)
    mid_even = (layers + 2.0 * e) / p
    given = xp.where(f_in > 0, 1, 0) + xp.where(l_in > 0, 1, 0)
    others = xp.maximum(p - given, 1.0)
    rest = (layers - f_in - l_in) / others
    f_out = xp.where(uneven, xp.where(f_in > 0, f_in, rest), mid_even - e)
    l_out = xp.where(uneven, xp.where(l_in > 0, l_in, rest), mid_even - e)
    mid = xp.where(uneven, xp.where(p - given >= 1, rest, xp.maximum(f_out, l_out)), mid_even)
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


class StageLayout(NamedTuple):
    """The transformer layers one pipeline stage holds (:func:`stage_layout`): ``layers`` their count
    (:func:`stage_layer_count`, float) and ``moe_layers`` how many of them are MoE layers (int64, in the inputs'
    broadcast shape). Computed once per stage and read by whatever needs the stage's layer mix."""

    layers: Any
    moe_layers: Any


def stage_layout(layers: int, moe_cumulative: np.ndarray, stage: ArrayLike, pp: ArrayLike, vpp: ArrayLike,
                 split: ArrayLike = 0, first: ArrayLike = 0, last: ArrayLike = 0) -> StageLayout:
    """The layers of stage ``stage`` (:class:`StageLayout`). ``moe_cumulative``: MoE layers among the first
    i layers, i = 0…L (:attr:`distcalc.model.dims.ModelDims.moe_cumulative`). The count is
    :func:`stage_layer_count`'s; the MoE layers are none in a dense model, all in an all-MoE model, else those
    of the chunks ``stage + j·pp`` (j < vpp) of :func:`chunk_layer_range` (L/(pp·vpp) layers each, or
    (L + 2)/(pp·vpp) slots with ``split``, the embedding and the loss a slot each), with uneven ends
    ``first``/``last`` (vpp 1) those of the one range of :func:`stage_layer_range`. Elementwise on arrays."""
    count = stage_layer_count(layers, stage, pp, split, first, last)
    stage, pp, vpp, split, first, last = (np.asarray(x, dtype=np.int64) for x in (stage, pp, vpp, split, first, last))
    total = np.zeros(np.broadcast(stage, pp, vpp, split, first, last).shape, dtype=np.int64)
    if moe_cumulative[-1] == 0:
        return StageLayout(count, total)
    if moe_cumulative[-1] == layers:  # every layer is MoE: the stage's layer count
        return StageLayout(count, total + np.rint(count).astype(np.int64))
    uneven = (first > 0) | (last > 0)
    if np.any(uneven):
        start, stop = stage_layer_range(layers, stage, pp, first, last)
        moe_uneven = moe_cumulative[stop] - moe_cumulative[start]
        if np.all(uneven):
            return StageLayout(count, total + moe_uneven)
        even = stage_layout(layers, moe_cumulative, stage, pp, vpp, split).moe_layers
        return StageLayout(count, np.where(uneven, moe_uneven, even))
    for j in range(int(np.max(vpp))):
        start, stop = chunk_layer_range(layers, stage + j * pp, pp, vpp, split)
        total = total + np.where(j < vpp, moe_cumulative[stop] - moe_cumulative[start], 0)
    return StageLayout(count, total)


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
    parallelism, the local sequence by tp — the predicates of :mod:`distcalc.parallel_rules`, which the
    search applies to its columns.
    """
    tp, name = config.tp, spec.name
    checks = [(field, value, tp, "tp") for field, value in tp_sharded_widths(spec)]
    if spec.is_moe:
        checks.append(("num_local_experts", spec.num_local_experts, config.ep, "ep"))
    for field, value, degree, degree_name in checks:
        if not divides(value, degree):
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
        if not uneven_fits(spec.num_hidden_layers, config.pp, first, last):
            raise ConfigError(
                f"model {name!r}: num_hidden_layers({spec.num_hidden_layers}) - first({first}) - last({last}) = "
                f"{rest} layers do not split evenly over the other {others} of pp({config.pp}) stages "
                "(at least one layer each)")
        v = config.vpp  # interleaved: every chunk of a stage holds its layers / vpp (Megatron-Core's layout)
        if v > 1 and (first % v or last % v or (others and (rest // others) % v)):
            raise ConfigError(
                f"model {name!r}: with vpp({v}) the first({first}), last({last}) and middle-stage "
                f"({rest // others if others else 0}) layer counts must each be divisible by vpp({v})")
    elif config.account_for_embedding_and_loss and config.pp > 1:
        slots = spec.num_hidden_layers + 2
        if not layers_fit(spec.num_hidden_layers, config.pp, stages, True):
            raise ConfigError(
                f"model {name!r}: num_hidden_layers({spec.num_hidden_layers}) + 2 (embedding and loss slots) = "
                f"{slots} is not divisible by {chunks} = {stages} (with at least 2 slots "
                f"per stage); valid pp·vpp: {_divisors(slots)}"
            )
    elif not layers_fit(spec.num_hidden_layers, config.pp, stages, False):
        hint = (f"; or --account-for-embedding-and-loss with pp·vpp dividing {spec.num_hidden_layers + 2}, or "
                "uneven ends with --first-stage-layers/--last-stage-layers" if config.pp > 1 else "")
        raise ConfigError(
            f"model {name!r}: num_hidden_layers({spec.num_hidden_layers}) is not divisible by {chunks} = {stages}; "
            f"valid pp·vpp: {_divisors(spec.num_hidden_layers)}{hint}"
        )
    if config.ep > 1 and not spec.is_moe:
        raise ConfigError(f"model {name!r} is dense: ep({config.ep}) must be 1")
    if not cp_splits_sequence(config.seq_len, config.cp):
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
    if config.sequence_parallel and not sp_splits_sequence(config.seq_len, config.cp, tp):
        raise ConfigError(
            f"seq_len({config.seq_len}) / cp({config.cp}) = {local} is not divisible by tp({tp}) "
            "(sequence parallelism splits the sequence across the TP group)"
        )
