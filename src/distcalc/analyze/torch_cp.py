"""PyTorch's context-parallel ring attention (torchtitan's CP): its collectives and what of them the attention
kernels hide (the kernels and eager merges are :mod:`distcalc.compute.torch_cp`).

From PyTorch (pytorch/pytorch@0123248a) ``torch/distributed/tensor/experimental/_attention.py``; all collectives are
functional collectives (``torch.distributed._functional_collectives``), issued asynchronously on the CP
process group's NCCL stream and waited for where the loop needs their result:

* **K,V rotation, forward.** The loop concatenates K and V (after torchtitan's ``repeat_kv``: all heads) into
  one buffer. ``_AllGatherRotater`` (``rotate_method`` ALL_GATHER, the default of ``_ContextParallelOptions``
  and of torchtitan's ``--parallelism.context_parallel_rotate_method allgather``) issues ONE AllGather of that
  buffer before step 0's kernel and waits for it at step 1: it hides behind step 0 (the causal kernel over the
  local tokens) only. ``_AllToAllRotater`` (``alltoall``) passes the block to the next rank with
  ``permute_tensor`` (an AllToAll with one non-empty split: a Send/Recv) before each step's kernel, waited
  for at the next step: ``cp − 1`` transfers, each beside one step.
* **Backward.** A new K,V rotater of the same method (the AllGather is issued again: nothing gathered is kept
  from the forward), and the gradients dK,dV are passed around the ring in FP32 (``convert_to_f32``) by an
  ``_AllToAllRotater`` whatever the method: after each of the ``cp`` steps the accumulated buffer is sent on
  and received at the next step after its kernel, so ``cp − 1`` transfers overlap a later step's backward and
  the last one (waited for right after the loop) is exposed in full. With ``alltoall`` the K,V pass and the
  dK,dV pass of a step share the stream and the step they overlap.

Per hidden transfer the exposed time is ``max(t − w, 0)`` and the kernels it runs beside are slowed by
``κ·min(t, w)`` (κ of :func:`distcalc.analyze.cp_ring.ring_slowdown`, the same NCCL kernels).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from distcalc.compute import DeviceCompute, ModelDims
from distcalc.compute.torch_cp import TorchRingTimes, torch_ring_layer_times
from distcalc.errors import ConfigError
from distcalc.parallel import Recompute
from distcalc.software import TORCH_CP_ALGORITHMS, ContextParallelAlgorithm
from distcalc.traffic import Comm, Dim, Message, Phase

ArrayLike = Any

#: notes that name the messages :func:`torch_cp_exposed_s` looks up
GATHER_NOTE = "torch CP AllGather of K,V"
PASS_NOTE = "torch CP K,V pass"
GRAD_NOTE = "torch CP dK,dV pass (FP32)"

#: bytes of one element of the dK,dV ring buffer (``_cp_options.convert_to_f32``)
GRAD_BUFFER_BYTES = 4.0


def check_torch_cp(algorithm: ContextParallelAlgorithm, cp: ArrayLike, flash_attention: ArrayLike) -> None:
    """Refuse PyTorch ring CP without a fused attention kernel: its dispatcher handles only the flash,
    memory-efficient and cuDNN SDPA ops (``_sdpa_handler``: "CP only supports flash attention and memory
    efficient attention now")."""
    if algorithm in TORCH_CP_ALGORITHMS and np.any((np.asarray(cp) > 1) & (np.asarray(flash_attention) == 0)):
        raise ConfigError(f"cp_algorithm {algorithm.value} needs flash attention (PyTorch's context parallelism "
                          "runs only the flash, memory-efficient and cuDNN SDPA kernels): turn flash attention on "
                          "or use ring, ulysses or all-gather")


def torch_cp_messages(micro_batch: ArrayLike, seq_len: ArrayLike, sdpa_hidden: ArrayLike,
                      bytes_per_element: ArrayLike, tp: ArrayLike, cp: ArrayLike, allgather: bool,
                      recompute: ArrayLike = 0) -> list[Message]:
    """Context-parallel messages of ONE layer for ONE micro-batch per rank (module docstring): the K,V block
    ``2·b·(s/cp)·h·e/t`` (``h`` = heads × head_dim as SDPA sees them) gathered once forward and once backward
    (``allgather``; size = the gathered buffer) or passed ``cp − 1`` times each way; the FP32 dK,dV block
    passed ``cp`` times backward. Full recompute repeats the forward messages."""
    on = np.where(np.asarray(cp) > 1, 1.0, 0.0)
    tokens = np.divide(np.multiply(micro_batch, seq_len), cp)
    kv_block = np.divide(2.0 * tokens * np.multiply(sdpa_hidden, bytes_per_element), tp)
    grad_block = np.divide(2.0 * tokens * np.multiply(sdpa_hidden, GRAD_BUFFER_BYTES), tp)
    full = Recompute.full_weight(recompute)
    steps = np.maximum(np.subtract(cp, 1), 0)
    if allgather:
        gathered = np.multiply(kv_block, cp)
        kv = [Message(Dim.CP, Comm.ALL_GATHER, gathered, on, Phase.FORWARD, True, GATHER_NOTE),
              Message(Dim.CP, Comm.ALL_GATHER, gathered, on, Phase.BACKWARD, True, GATHER_NOTE),
              Message(Dim.CP, Comm.ALL_GATHER, gathered, on * full, Phase.RECOMPUTE, True, GATHER_NOTE)]
    else:
        kv = [Message(Dim.CP, Comm.SEND_RECV, kv_block, on * steps, Phase.FORWARD, True, PASS_NOTE),
              Message(Dim.CP, Comm.SEND_RECV, kv_block, on * steps, Phase.BACKWARD, True, PASS_NOTE),
              Message(Dim.CP, Comm.SEND_RECV, kv_block, on * steps * full, Phase.RECOMPUTE, True, PASS_NOTE)]
    return kv + [Message(Dim.CP, Comm.SEND_RECV, grad_block, on * np.asarray(cp, dtype=float), Phase.BACKWARD,
                         True, GRAD_NOTE)]


def hidden_exposed_s(transfer_s: ArrayLike, window_s: ArrayLike, kappa: ArrayLike) -> ArrayLike:
    """Seconds a transfer of ``transfer_s`` adds beside compute of ``window_s``: its excess plus the slowdown
    κ of the compute it overlaps."""
    return np.maximum(transfer_s - window_s, 0.0) + kappa * np.minimum(transfer_s, window_s)


def _one(entries: list[tuple[Message, np.ndarray, Any]], note: str, phase: Phase) -> np.ndarray:
    """Seconds of ONE collective of the message with ``note`` in ``phase`` (0 where absent)."""
    for message, times, _ in entries:
        if message.note == note and message.phase == phase:
            return np.where(np.asarray(message.count) > 0, np.asarray(times, dtype=float), 0.0)
    return np.zeros(1)


def torch_cp_exposed_s(entries: list[tuple[Message, np.ndarray, Any]], times: TorchRingTimes, kappa: ArrayLike,
                       cp: ArrayLike, allgather: bool, recompute: ArrayLike = 0) -> tuple[ArrayLike, ArrayLike]:
    """(forward, forward + backward [+ recompute]) seconds PyTorch ring CP's collectives add to one layer, from
    the priced :func:`torch_cp_messages` (``entries``) and the step times of ``times`` (module docstring)."""
    cp = np.asarray(cp, dtype=float)
    later = np.maximum(cp - 1.0, 0.0)
    grad = _one(entries, GRAD_NOTE, Phase.BACKWARD)
    if allgather:  # the gather hides behind step 0; each dK,dV pass but the last behind a later step
        forward = hidden_exposed_s(_one(entries, GATHER_NOTE, Phase.FORWARD), times.first_forward_s, kappa)
        backward = (hidden_exposed_s(_one(entries, GATHER_NOTE, Phase.BACKWARD), times.first_backward_s, kappa)
                    + later * hidden_exposed_s(grad, times.step_backward_s, kappa) + grad)
    else:
        kv = _one(entries, PASS_NOTE, Phase.FORWARD)
        middle = np.maximum(cp - 2.0, 0.0)
        forward = np.where(cp > 1, hidden_exposed_s(kv, times.first_forward_s, kappa), 0.0) + middle * \
            hidden_exposed_s(kv, times.step_forward_s, kappa)
        # step 0 hides the first K,V pass, steps 1 … cp−2 a K,V pass and the previous dK,dV pass, the last
        # step the last but one dK,dV pass; the final dK,dV pass is exposed
        backward = (np.where(cp > 1, hidden_exposed_s(kv, times.first_backward_s, kappa), 0.0)
                    + middle * hidden_exposed_s(kv + grad, times.step_backward_s, kappa)
                    + np.where(cp > 1, hidden_exposed_s(grad, times.step_backward_s, kappa), 0.0) + grad)
    full = Recompute.full_weight(recompute)
    return forward, forward * (1.0 + full) + backward


def torch_cp_layer_exposed_s(entries: list[tuple[Message, np.ndarray, Any]], dims: ModelDims, device: DeviceCompute,
                             micro_batch: ArrayLike, seq_len: ArrayLike, tp: ArrayLike, cp: ArrayLike,
                             slowest: ArrayLike, kappa: ArrayLike, allgather: bool,
                             recompute: ArrayLike = 0) -> tuple[ArrayLike, ArrayLike]:
    """:func:`torch_cp_exposed_s` against the step times of one layer of ``dims``
    (:func:`distcalc.compute.torch_cp.torch_ring_layer_times`) on the slowest GPU (``slowest`` × them)."""
    steps = torch_ring_layer_times(dims, device, micro_batch, seq_len, tp, cp)
    steps = TorchRingTimes(*(slowest * np.asarray(getattr(steps, f.name)) for f in fields(TorchRingTimes)))
    return torch_cp_exposed_s(entries, steps, kappa, cp, allgather, recompute)
