"""One schema: each enum has one encoding (its spelling and its integer code, declared together)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.modes import schedule_shape_problem
from distcalc.parallel import Recompute, Schedule
from distcalc.schedules import BY_CODE, DUAL_PIPE, SCHEDULES, V_SHAPED, V_SHAPED_SCHEDULES
from distcalc.search.readable import config_values
from distcalc.search.space import CLOSED_FORM_SCHEDULES, DEFAULT_SCHEDULES, RECOMPUTE_CHOICES, SCHEDULE_CHOICES


@pytest.mark.parametrize("enum", [Recompute, Schedule])
def test_codes_are_the_indices_of_the_spellings(enum):
    names = enum.names_by_code()
    assert sorted(m.code for m in enum) == list(range(len(enum)))
    for member in enum:
        assert names[member.code] == member.value
        assert enum.from_code(member.code) is member
        assert enum(member.value) is member


def test_search_columns_use_the_enum_codes():
    assert RECOMPUTE_CHOICES == tuple(n for n in Recompute.names_by_code() if n != Recompute.SELECTIVE_OP.value)
    assert SCHEDULE_CHOICES == Schedule.names_by_code()
    codes = np.array([m.code for m in Schedule])
    assert config_values("schedule", codes) == [m.value for m in Schedule]
    assert config_values("recompute", np.array([2, 0])) == ["full", "none"]


def test_schedule_registry_spells_the_enum():
    assert {name: s.code for name, s in SCHEDULES.items()} == {m.value: m.code for m in Schedule}
    assert set(BY_CODE) == {m.code for m in Schedule}


def test_executed_schedules_are_the_ones_without_a_closed_form():
    executed = {m.value for m in Schedule if Schedule.executed(m.code)}
    assert executed == {"zb-h1", "zb-h2", "zb-2p", "zb-v", "dualpipe", "dualpipev"}
    assert set(CLOSED_FORM_SCHEDULES) == {m.value for m in Schedule} - executed
    assert set(DEFAULT_SCHEDULES) <= {m.value for m in Schedule}
    mask = Schedule.executed(np.array([m.code for m in Schedule]))
    assert mask.tolist() == [m.value in executed for m in Schedule]


def test_v_shaped_schedules_are_the_registry_class_flags():
    """One definition: the registry's per-code mask and code tuple are read from each class's ``v_shape``."""
    assert V_SHAPED.tolist() == [BY_CODE[code].v_shape for code in range(len(Schedule))]
    assert {Schedule.from_code(code).value for code in V_SHAPED_SCHEDULES} == {"zb-v", "dualpipev"}
    assert V_SHAPED[np.array(V_SHAPED_SCHEDULES)].all() and V_SHAPED.sum() == len(V_SHAPED_SCHEDULES)


def test_dual_pipe_schedules_are_the_registry_class_flags_and_the_scalar_rule_agrees():
    """The search's DualPipe-family mask is read from each class's ``dual_pipe``; exactly those schedules are
    refused with fewer than 2·pp micro-batches by the scalar rule (pp 4, 6 micro-batches: even, < 8)."""
    assert DUAL_PIPE.tolist() == [BY_CODE[code].dual_pipe for code in range(len(Schedule))]
    assert {Schedule.from_code(int(code)).value for code in np.flatnonzero(DUAL_PIPE)} == {"dualpipe", "dualpipev"}
    assert [schedule_shape_problem(m.code, 4, 6) is not None for m in Schedule] == [DUAL_PIPE[m.code] for m in Schedule]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from([m.code for m in Recompute]), min_size=1, max_size=8))
def test_full_recompute_weight_is_one_exactly_on_full(codes):
    weight = Recompute.full_weight(np.array(codes))
    assert weight.dtype == np.float64 and weight.shape == (len(codes),)
    assert weight.tolist() == [1.0 if code == Recompute.FULL.code else 0.0 for code in codes]
    assert [Recompute.full_weight(code) for code in codes] == weight.tolist()


def test_batch_fields_are_the_config_fields():
    from distcalc.parallel import ParallelConfig
    from distcalc.parallel_batch import BATCH_FIELDS, NOT_BATCH_FIELDS

    assert list(BATCH_FIELDS) == [f for f in ParallelConfig.model_fields if f not in NOT_BATCH_FIELDS]
    assert BATCH_FIELDS["seq_len"] == ParallelConfig.model_fields["seq_len"].default


@settings(max_examples=60, deadline=None)
@given(tp=st.sampled_from([1, 2, 8]), pp=st.sampled_from([1, 2, 4]), dp=st.sampled_from([1, 3, 4]),
       vpp=st.sampled_from([1, 2]), micro_batch=st.sampled_from([1, 2]), recompute=st.sampled_from(list(Recompute)),
       sequence_parallel=st.booleans(), distributed_optimizer=st.booleans())
def test_batch_defaults_resolve_like_the_config(tp, pp, dp, vpp, micro_batch, recompute, sequence_parallel,
                                                distributed_optimizer):
    """The batch form fills the same defaults as ParallelConfig (global batch, schedule, seq_len, ...)."""
    from distcalc.parallel import ParallelConfig
    from distcalc.parallel_batch import config_batch, normalise_batch

    vpp = vpp if pp > 1 else 1
    given_fields = dict(tp=tp, pp=pp, dp=dp, vpp=vpp, micro_batch=micro_batch, recompute=recompute.code,
                        sequence_parallel=int(sequence_parallel), zero=int(distributed_optimizer))
    config = ParallelConfig(tp=tp, pp=pp, dp=dp, vpp=vpp, micro_batch=micro_batch, recompute=recompute,
                            sequence_parallel=sequence_parallel, distributed_optimizer=distributed_optimizer)
    assert {k: int(v) for k, v in normalise_batch(given_fields).items()} == config_batch(config)


def test_search_columns_are_the_searched_batch_fields():
    from distcalc.parallel_batch import BATCH_FIELDS
    from distcalc.search.space import COLUMNS, JOB_FIELDS, ZERO_CHOICES

    assert sorted(COLUMNS) == sorted(set(BATCH_FIELDS) - set(JOB_FIELDS))
    assert set(JOB_FIELDS) <= set(BATCH_FIELDS)
    assert ZERO_CHOICES == (0, 1, 2, 3)


@pytest.mark.parametrize("command", ["analyze", "memory", "search"])
def test_cli_options_take_name_and_help_from_the_schema(command):
    """Every option named after a ParallelConfig field is that field: its help is the field's description
    (stated once, in the schema), and a flag field is --x/--no-x (analyze and memory declare the same ones)."""
    import typer

    from distcalc.cli import app
    from distcalc.parallel import ParallelConfig

    click_command = typer.main.get_command(app).get_command(None, command)
    shared = [p for p in click_command.params
              if p.name in ParallelConfig.model_fields and p.name not in ("gpus", "zero", "recompute", "schedule")
              or (command != "search" and p.name in ("zero", "recompute", "schedule"))]
    assert len(shared) >= (2 if command == "search" else 18)
    for param in shared:
        field = ParallelConfig.model_fields[param.name]
        assert param.help.startswith(field.description), param.name
        assert param.opts[0] == "--" + param.name.replace("_", "-")
        if field.annotation is bool:
            assert param.secondary_opts == ["--no-" + param.name.replace("_", "-")]


def test_one_model_dims_for_compute_and_memory():
    """One ModelDims / model_dims(): the compute, step-time and memory models read the same record."""
    import distcalc.compute as compute
    import distcalc.memory.batch as memory_batch_module
    from distcalc.model import load_model
    from distcalc.model.dims import ModelDims, model_dims

    assert compute.ModelDims is ModelDims and compute.model_dims is model_dims
    assert memory_batch_module.model_dims is model_dims
    dims = model_dims(load_model("mixtral-8x7b"))
    assert (dims.experts, dims.experts_per_token, dims.moe_layers) == (8, 2, 32)
    assert dims.embedding_parameters == dims.embedding + dims.position_embedding
    tied = model_dims(load_model("gpt3-175b"))
    assert tied.tied_embeddings and tied.lm_head == 0 and tied.lm_head_parameters == tied.vocab * tied.hidden


def test_activation_bytes_come_from_the_configured_dtype():
    """The bytes per activation element are the dtype's (Precision.activation_bytes), read by the compute
    device, the step-time messages and the memory formulas (no module keeps its own 2.0)."""
    from dataclasses import replace

    from distcalc.analyze.core import evaluate
    from distcalc.analyze.report import _device, _dims
    from distcalc.cluster import load_cluster
    from distcalc.compute import load_device
    from distcalc.memory import memory_batch
    from distcalc.model import load_model
    from distcalc.parallel import Precision

    for precision in Precision:
        gpu = "b200" if precision in (Precision.MXFP8, Precision.NVFP4) else "h100-sxm"
        assert load_device(gpu, precision.value).activation_bytes == precision.activation_bytes
    spec = load_model("llama3-8b")
    batch = dict(tp=8, pp=2, dp=1, micro_batch=1, global_batch=4, seq_len=4096)
    two = memory_batch(spec, **batch)["activations_bytes"]
    four = memory_batch(spec, **batch, activation_bytes=4.0)["activations_bytes"]
    assert float(four[()]) > 1.5 * float(two[()])
    cluster = load_cluster("dgx-h100")
    device = _device(cluster.gpu, "bf16")
    base = evaluate(_dims(spec), device, cluster, batch, _options())
    wide = evaluate(_dims(spec), replace(device, activation_bytes=4.0), cluster, batch, _options())
    assert float(wide["tp_exposed_s"][()]) > float(base["tp_exposed_s"][()])
    assert float(wide["pp_p2p_s"][()]) > float(base["pp_p2p_s"][()])


def _options():
    from distcalc.analyze import AnalyzeOptions

    return AnalyzeOptions()
