"""Schedule objects: executed bubbles equal the published closed forms, peak in-flight activations equal the
papers' memory tables, every pass runs exactly once."""

import importlib
from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from distcalc.errors import ConfigError
from distcalc.modes import Schedule
from distcalc.schedules import SCHEDULES, PassKind, PassTimes, execute, get_schedule, peak_in_flight

NAMES = ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb-2p", "zb-v", "dualpipe", "dualpipev"]


def _bubble(name, p, m, tf, tb, tw, p2p=0.0):
    s = get_schedule(name)
    plan = s.plan(p, m)
    c = plan.chunk_fraction
    ex = execute(plan, PassTimes(tf * c, tb * c, tw * c, p2p))
    return float(ex.bubble_s(s.tiles_iterations)[0]), s.closed_form_bubble_s(p, m, tf * c, tb * c, tw * c), ex


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 20), (6, 12), (8, 16), (8, 40)])
def test_equal_pass_times_reproduce_published_bubble(name, p, m):
    executed, closed, _ = _bubble(name, p, m, 1.0, 1.0, 1.0)
    assert executed == pytest.approx(closed, abs=1e-9)


def test_published_values_at_equal_times():
    """1F1B 3(p−1), ZB-H1 (p−1) (a third), ZB-H2 and ZB-V 0 (Qi et al. Table 2 / ZB authors' table),
    DualPipe (PP/2 − 1)(F&B + B − 3W) = (PP/2 − 1)·(3 + 2 − 3)·... with F&B = F + B (no overlap)."""
    p, m = 8, 32
    assert _bubble("1f1b", p, m, 1, 1, 1)[0] == pytest.approx(3 * (p - 1))
    assert _bubble("zb-h1", p, m, 1, 1, 1)[0] == pytest.approx(p - 1)
    assert _bubble("zb-h2", p, m, 1, 1, 1)[0] == pytest.approx(0.0, abs=1e-12)
    assert _bubble("zb-v", p, m, 1, 1, 1)[0] == pytest.approx(0.0, abs=1e-12)
    # F = B = W = 1 (full backward 2): (4 − 1)(F&B 3 + B 2 − 3W 3) = 6
    assert _bubble("dualpipe", p, m, 1, 1, 1)[0] == pytest.approx((p / 2 - 1) * (3 + 2 - 3))


@settings(max_examples=40, deadline=None)
@given(p=st.integers(2, 8), k=st.integers(2, 4), tf=st.floats(0.3, 3), tb=st.floats(0.3, 3), tw=st.floats(0.05, 3),
       name=st.sampled_from(["gpipe", "1f1b", "zb-h1", "zb-h2", "zb-2p"]))
def test_linear_schedules_match_closed_form_for_real_times(p, k, tf, tb, tw, name):
    """ZB-H1 / ZB-H2 formulas hold exactly when W is no longer than F and B (the papers' regime)."""
    if name.startswith("zb"):
        assume(tw <= min(tf, tb))
    executed, closed, _ = _bubble(name, p, k * p, tf, tb, tw)
    assert executed == pytest.approx(closed, rel=1e-9, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 4), k=st.integers(2, 4), tf=st.floats(0.5, 2), tw=st.floats(0.05, 2),
       name=st.sampled_from(["dualpipe", "dualpipev"]))
def test_dualpipe_matches_published_formula(h, k, tf, tw, name):
    """DualPipe / DualPipeV bubble (PP/2 − 1)(F&B + B − 3W) (B the full backward) when a chunk's forward and
    input-gradient passes take the same time and W no longer (the figure's regime); F ≠ B moves it by
    (PP/2 − 1)·|F − B| (seen, not published)."""
    assume(tw <= tf)
    p = 2 * h if name == "dualpipe" else h + 1
    executed, closed, _ = _bubble(name, p, k * 2 * p, tf, tf, tw)
    assert executed == pytest.approx(closed, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("name,p,expected", [("1f1b", 8, 8), ("zb-h1", 8, 8), ("zb-h2", 8, 15), ("zb-v", 8, 8),
                                             ("dualpipe", 8, 9), ("dualpipev", 8, 8.5), ("zb-h2", 4, 7),
                                             ("zb-2p", 8, 16), ("zb-2p", 4, 8)])
def test_peak_in_flight_matches_memory_tables(name, p, expected):
    """1F1B/ZB-H1/ZB-V p·M_B, ZB-H2 (2p − 1)·M_B (Qi et al.), DualPipe PP + 1, DualPipeV PP + 1 chunks of half
    a stage (DualPipe README)."""
    s = get_schedule(name)
    peaks = peak_in_flight(s.plan(p, 4 * p))
    assert max(peaks) == expected == s.closed_form_peak_in_flight(p)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 12), (6, 14)])
def test_every_pass_runs_once(name, p, m):
    plan = get_schedule(name).plan(p, m)
    seen = Counter()
    for order in plan.orders:
        for op in order:
            for ps in op:
                kinds = ("B", "W") if ps.kind is PassKind.BW else (ps.kind.value,)
                for kind in kinds:
                    seen[(kind, ps.micro_batch, ps.stage)] += 1
                assert plan.device_of(ps.micro_batch, ps.stage) == plan.orders.index(order)
    assert set(seen.values()) == {1}
    assert len(seen) == 3 * m * plan.virtual_stages


def test_interleaved_plan_matches_megatron_bubble():
    s = get_schedule("interleaved")
    plan = s.plan(4, 8, 2)
    ex = execute(plan, PassTimes(0.5, 1.0, 0.0))
    assert float(ex.makespan_s[0]) == pytest.approx(8 * 3 + 3 * 3 / 2)


def test_overlapped_pair_hides_communication():
    """F&B = F + B − hidden: with half of each pass being communication, DualPipe's steady state shrinks."""
    plan = get_schedule("dualpipe").plan(4, 16)
    plain = execute(plan, PassTimes(1.0, 1.0, 1.0))
    hidden = execute(plan, PassTimes(1.0, 1.0, 1.0, 0.0, 0.5, 1.0))
    assert float(hidden.makespan_s[0]) < float(plain.makespan_s[0])


def test_times_vectorise():
    plan = get_schedule("zb-v").plan(4, 8)
    ex = execute(plan, PassTimes(np.array([[0.5, 1.0]] * 8), 0.5, 0.5, np.array([0.0, 0.1])))
    assert ex.makespan_s.shape == (2,)
    assert np.all(ex.makespan_s > 0)


@pytest.mark.parametrize("name,p,m", [("dualpipe", 3, 12), ("dualpipe", 4, 6), ("dualpipe", 4, 9),
                                      ("dualpipev", 4, 6), ("zb-v", 1, 4), ("zb-h2", 1, 4)])
def test_invalid_shapes_raise(name, p, m):
    with pytest.raises(ConfigError):
        get_schedule(name).plan(p, m)


def test_registry_names():
    assert set(SCHEDULES) >= {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev"}
    assert SCHEDULES["zero-bubble"].plan(4, 8).orders == SCHEDULES["zb-h1"].plan(4, 8).orders
    # one object per name, one name per code, the codes dense 0…n−1 and exactly the enum's: adding a schedule
    # is one module and one registration, nothing here to recount
    codes = {s.code for s in SCHEDULES.values()}
    assert codes == set(range(len(SCHEDULES))) == {m.code for m in Schedule}
    assert all(SCHEDULES[m.value].schedule is m for m in Schedule)
    with pytest.raises(ConfigError, match="valid"):
        get_schedule("nope")


def test_zero_bubble_formula_set_passes():
    from distcalc.validation import CASE_SETS
    cases = CASE_SETS["zero-bubble-formulas"].run()
    assert cases and all(c.passed for c in cases)


@settings(max_examples=30, deadline=None)
@given(p=st.integers(2, 8), k=st.integers(1, 4), tf=st.floats(0.3, 3), tb=st.floats(0.3, 3), tw=st.floats(0.05, 3))
def test_zb_2p_warm_up_to_the_memory_limit_keeps_zb_h2_step(p, k, tf, tb, tw):
    """ZB-2p's extra warm-up forward (filling the 2p·M_B limit) moves no pass's end: same step as ZB-H2 at
    any times, one more micro-batch in flight."""
    times = PassTimes(tf, tb, tw)
    h2, two = get_schedule("zb-h2").plan(p, k * 2 * p), get_schedule("zb-2p").plan(p, k * 2 * p)
    assert execute(two, times).step_s(True)[0] == pytest.approx(execute(h2, times).step_s(True)[0], rel=1e-12)
    assert max(peak_in_flight(two)) == max(peak_in_flight(h2)) + 1 == 2 * p


@pytest.mark.parametrize("name", ["zb-v", "dualpipe", "interleaved"])
def test_wave_and_one_by_one_execution_agree(name):
    """Few configurations run wave by wave, many one operation at a time: the same events either way."""
    from distcalc.schedules.execute import WAVE_MAX_CONFIGURATIONS

    plan = get_schedule(name).plan(4, 16, 2)
    rng = np.random.default_rng(3)
    n = WAVE_MAX_CONFIGURATIONS + 1
    times = PassTimes(rng.uniform(0.5, 2, (plan.virtual_stages, n)), rng.uniform(0.5, 2, (plan.virtual_stages, n)),
                      rng.uniform(0.1, 1, (plan.virtual_stages, n)), rng.uniform(0, 0.2, n),
                      rng.uniform(0, 0.3, (plan.virtual_stages, n)), rng.uniform(0, 0.3, (plan.virtual_stages, n)))
    many = execute(plan, times)
    for column in (0, 7, n - 1):
        pick = lambda x: np.asarray(x)[:, column] if np.ndim(x) == 2 else np.asarray(x)[column]  # noqa: E731
        one = execute(plan, PassTimes(*(pick(getattr(times, f)) for f in ("forward_s", "backward_s", "weight_s", "p2p_s",
                                                                          "forward_comm_s", "backward_comm_s"))))
        assert one.makespan_s[0] == pytest.approx(many.makespan_s[column], rel=1e-12)
        assert one.busy_s[:, 0] == pytest.approx(many.busy_s[:, column], rel=1e-12)
        assert one.first_start_s[:, 0] == pytest.approx(many.first_start_s[:, column], rel=1e-12)


@pytest.mark.parametrize("name,p,m,v", [("zb-v", 4, 16, 1), ("zb-h2", 4, 12, 1), ("dualpipe", 4, 16, 1),
                                        ("dualpipev", 4, 16, 1), ("interleaved", 4, 16, 2)])
@pytest.mark.parametrize("sends", [False, True])
@pytest.mark.parametrize("negative", [False, True])
def test_row_runner_and_waves_give_the_same_bits(name, p, m, v, sends, negative, monkeypatch):
    """One operation at a time on reused rows (schedules.row_runner; inputs from the operation's own device
    skipped when every duration is >= 0) and wave by wave: the same bits for every configuration, with and
    without Send/Recv time, and with negative durations (no skipping then)."""
    execute_module = importlib.import_module("distcalc.schedules.execute")  # the package exports the function

    plan = get_schedule(name).plan(p, m, v)
    rng = np.random.default_rng(11)
    n, S = 37, plan.virtual_stages
    forward, weight = rng.uniform(0.5, 2, (S, n)), rng.uniform(0.1, 1, (S, n))
    if negative:  # a pass ending before an earlier one of its device: an own-device input then matters
        forward[:, 3], weight[:, 3] = -3.0, -5.0
    times = PassTimes(forward, rng.uniform(0.5, 2, (S, n)), weight,
                      rng.uniform(0, 0.2, n) if sends else 0.0,
                      rng.uniform(0, 0.3, (S, n)), rng.uniform(0, 0.3, (S, n)))
    runs = {}
    for waves in (True, False):
        monkeypatch.setattr(execute_module, "runs_waves", lambda *_, waves=waves: waves)
        runs[waves] = execute_module.execute(plan, times)
    if not negative:
        for field in ("first_start_s", "last_end_s", "busy_s"):
            assert np.array_equal(getattr(runs[True], field), getattr(runs[False], field)), field
        return
    # negative durations (never physical): the waves read "nothing to wait for" as 0, so compare the row
    # runner with the plain recurrence over every input, one configuration at a time in Python floats
    program = execute_module.compile_plan(plan)
    *stages, p2p = times.arrays(S)
    durations = execute_module._durations(program, tuple(stages))
    K = len(program.ops)
    for column in range(n):
        ends = [0.0] * K
        for k, (w0, w1, a1, w2, a2, _) in enumerate(program.steps):
            ready = ends[w0] if w0 < K else 0.0
            for w, a in ((w1, a1), (w2, a2)):
                if w >= 0:
                    ready = max(ready, ends[w] + p2p[column] if a and sends else ends[w])
            ends[k] = ready + float(durations[k, column])
        assert [ends[k] for k in program.last.tolist()] == runs[False].last_end_s[:, column].tolist()


@pytest.mark.parametrize("name,p,m", [("zb-v", 8, 64), ("dualpipe", 8, 64), ("zb-h2", 8, 64), ("zb-h2", 32, 64)])
def test_row_plan_reuses_rows_without_overwriting_inputs(name, p, m):
    """The row runner's rows: fewer than the operations (without own-device inputs), and every input an operation reads still holds the
    end of the operation it waits for (no later operation wrote that row in between, nor does the reader)."""
    from distcalc.schedules.execute import compile_plan

    program = compile_plan(get_schedule(name).plan(p, m))
    K = len(program.ops)
    for rows, own in ((program.row_plan_all_inputs, True), (program.row_plan_across, False)):
        assert rows.rows < (K + 1 + 2 * p if own else K / 2)  # every input: a W may wait long for its B
        holder = {0: K}  # row -> operation whose end it holds (row 0: zeros, "nothing to wait for")
        for k, ((w0, w1, _, w2, _, _, out), (p0, p1, p2), (_, a1, a2)) in enumerate(
                zip(rows.steps, program.waits.tolist(), program.across.tolist())):
            expected = [(w0, p0)] + [(w, op) for w, op, a in ((w1, p1, a1), (w2, p2, a2)) if op < K and (own or a)]
            assert [holder.get(w) for w, _ in expected] == [op for _, op in expected], k
            assert out not in [w for w, _ in expected] and out != 0
            holder[out] = k
        assert [holder[r] for r in rows.first] == program.first.tolist()
        assert [holder[r] for r in rows.last] == program.last.tolist()


@pytest.mark.parametrize("name,p,m", [("dualpipe", 4, 16), ("zb-v", 4, 8), ("dualpipev", 4, 8)])
def test_duration_rows_from_the_cached_layout_are_the_durations(name, p, m):
    """The durations' rows come from a layout found once per program and stage count (pairs included): calls
    with other times and other numbers of configurations read the same bits as the gathered durations."""
    execute_module = importlib.import_module("distcalc.schedules.execute")
    plan = get_schedule(name).plan(p, m)
    program = execute_module.compile_plan(plan)
    S = plan.virtual_stages
    rng = np.random.default_rng(11)
    for n in (3, 7, 3):
        times = PassTimes(*(rng.uniform(0.5, 2, (S, n)) for _ in range(3)), 0.0,
                          rng.uniform(0, 0.3, (S, n)), rng.uniform(0, 0.3, (S, n)))
        stages = tuple(times.arrays(S)[:-1])
        rows, source, index, nonnegative = execute_module._duration_rows(program, stages)
        assert nonnegative and len(program.duration_layouts) == 1
        assert np.array_equal(np.stack(rows), execute_module._durations(program, stages))
        assert np.array_equal(source[index], np.stack(rows))
