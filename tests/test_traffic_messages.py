"""Messages per parallel dimension (distcalc.traffic): sizes in the NCCL M convention and counts."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.traffic import (Comm, Dim, Phase, cp_layer_messages, dp_gradient_messages, ep_layer_messages, nonzero,
                              pp_boundary_messages, tp_embedding_messages, tp_layer_messages)

B, S, H = 1, 2048, 12288
M = B * S * H * 2


def _by(messages, collective, phase, overlappable=None):
    return [m for m in nonzero(messages) if m.collective == collective and m.phase == phase
            and (overlappable is None or m.overlappable == overlappable)]


def test_tp_without_sp_is_two_allreduce_each_way():
    msgs = nonzero(tp_layer_messages(B, S, H, 2, 8, 0, 0))
    assert {(m.collective, m.phase) for m in msgs} == {(Comm.ALL_REDUCE, Phase.FORWARD), (Comm.ALL_REDUCE, Phase.BACKWARD)}
    assert all(float(m.size_bytes) == M and float(m.count) == 2 for m in msgs)


def test_tp_with_sp_replaces_allreduce_by_allgather_and_reducescatter():
    msgs = tp_layer_messages(B, S, H, 2, 8, 1, 0)
    assert not _by(msgs, Comm.ALL_REDUCE, Phase.FORWARD)
    assert float(_by(msgs, Comm.ALL_GATHER, Phase.FORWARD)[0].count) == 2
    assert float(_by(msgs, Comm.REDUCE_SCATTER, Phase.FORWARD)[0].count) == 2
    # backward: AG on the critical path, RS and the wgrad re-gather overlappable
    assert float(_by(msgs, Comm.ALL_GATHER, Phase.BACKWARD, False)[0].count) == 2
    assert float(_by(msgs, Comm.ALL_GATHER, Phase.BACKWARD, True)[0].count) == 2
    assert all(float(m.size_bytes) == M for m in nonzero(msgs))


def test_full_recompute_repeats_forward_collectives_selective_does_not():
    full = tp_layer_messages(B, S, H, 2, 8, 0, 2)
    selective = tp_layer_messages(B, S, H, 2, 8, 0, 1)
    assert float(_by(full, Comm.ALL_REDUCE, Phase.RECOMPUTE)[0].count) == 2
    assert not _by(selective, Comm.ALL_REDUCE, Phase.RECOMPUTE)


def test_pp_boundary_is_sharded_by_tp_with_sp():
    sp = nonzero(pp_boundary_messages(B, S, H, 2, 8, 4, 1))
    sends = [m for m in sp if m.collective == Comm.SEND_RECV]
    assert len(sends) == 2 and all(float(m.size_bytes) == M / 8 for m in sends)
    plain = nonzero(pp_boundary_messages(B, S, H, 2, 8, 4, 0, scatter_gather=0))
    assert all(float(m.size_bytes) == M for m in plain)


def test_dp_zero_stages():
    p = 1e9
    z0 = nonzero(dp_gradient_messages(p, 8, 0, 4, grad_bytes=4))
    assert [(m.collective, float(m.size_bytes), float(m.count)) for m in z0] == [(Comm.ALL_REDUCE, 4e9, 1.0)]
    z1 = nonzero(dp_gradient_messages(p, 8, 1, 4, grad_bytes=4))
    assert {m.collective for m in z1} == {Comm.REDUCE_SCATTER, Comm.ALL_GATHER}
    z3 = nonzero(dp_gradient_messages(p, 8, 3, 4))
    assert sum(float(m.count) for m in z3 if m.collective == Comm.ALL_GATHER) == 8  # fwd + bwd per micro-batch


def test_cp_ring_steps_and_ulysses():
    ring = nonzero(cp_layer_messages(1, 8192, 1024, 8192, 2, 8, 4, 0))
    assert float(ring[0].count) == 3 and float(ring[1].count) == 6
    uly = nonzero(cp_layer_messages(1, 8192, 1024, 8192, 2, 8, 4, 1))
    assert all(m.collective == Comm.ALL_TO_ALL for m in uly)


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 8), tp=st.sampled_from([1, 2, 8]), sp=st.integers(0, 1), rc=st.integers(0, 2))
def test_degree_one_sends_nothing(b, tp, sp, rc):
    """Degree 1 on a dimension means zero communication on it."""
    def zero(msgs, dim):
        return sum(float(np.sum(m.total_bytes())) for m in msgs if m.dim == dim) == 0
    assert zero(tp_layer_messages(b, S, H, 2, 1, sp, rc), Dim.TP)
    assert zero(tp_embedding_messages(b, S, H, 2, 1, sp), Dim.TP)
    assert zero(pp_boundary_messages(b, S, H, 2, tp, 1, sp), Dim.PP)
    assert zero(dp_gradient_messages(1e9, 1, rc, b), Dim.DP)
    assert zero(cp_layer_messages(b, S, 1024, H, 2, tp, 1, sp, rc), Dim.CP)
    assert zero(ep_layer_messages(b, S, H, 2, tp, 1, 2, sp), Dim.EP)


def test_vectorised_counts_match_scalar():
    tp = np.array([1, 8, 8]); sp = np.array([0, 0, 1])
    vec = tp_layer_messages(B, S, H, 2, tp, sp, 0)
    for i in range(3):
        scalar = tp_layer_messages(B, S, H, 2, int(tp[i]), int(sp[i]), 0)
        assert [float(m.total_bytes()) for m in scalar] == [float(np.asarray(m.total_bytes())[i]) for m in vec]
