"""HSDP (hybrid sharded data parallelism): ZeRO-3/FSDP sharded inside groups of ``k`` DP ranks and
replicated across the ``d/k`` groups, priced on the groups it really runs on.

PyTorch FSDP1 ``ShardingStrategy.HYBRID_SHARD`` ("FULL_SHARD within a node, and replicate parameters across
nodes"; PyTorch docs, ``torch.distributed.fsdp.ShardingStrategy``) and FSDP2 ``fully_shard`` on a 2-D
(replicate, shard) device mesh. With Megatron's rank order (TP innermost, then CP, then DP) the shard group
is ``k`` consecutive DP ranks (stride: the DP stride) and the replicate group takes one rank of each shard
group (stride ``k`` × the DP stride). Per FSDP unit and micro-batch:

* AllGather of the unit's parameters and ReduceScatter of its gradients inside the shard group;
* AllReduce of the reduced gradient shard (``1/k`` of the unit) over the replicate group: FSDP1
  ``_reduce_grad`` issues it on ``_all_reduce_stream`` right after the ReduceScatter, on the inter-node process
  group (its own NCCL communicator), so it runs beside the next unit's collectives
  (:func:`distcalc.analyze.fsdp.fsdp_exposure` prices the overlap);
* the optimizer step updates ``1/k`` of the parameters (not ``1/d``).

Per step the whole-model volumes are those of ZeRO-3 over ``k`` ranks plus one AllReduce of ``P·g/k`` over
``d/k`` ranks (Zhao et al. 2023, "PyTorch FSDP", VLDB 16(12) §3.2.2: hybrid sharding trades memory for
collectives that stay within the fast intra-node fabric).
"""

from __future__ import annotations

import numpy as np

from distcalc.analyze.block_terms import HsdpTimes
from distcalc.analyze.comm import GroupKey, message_times
from distcalc.cluster import ClusterSpec
from distcalc.errors import ConfigError
from distcalc.traffic import Comm, Dim, Message, Phase, dp_gradient_messages


def hsdp_groups(dp: GroupKey, shard_size: int) -> tuple[GroupKey, GroupKey]:
    """(shard group, replicate group) of the DP group ``dp`` with ``shard_size`` ranks per shard group; raises
    :class:`ConfigError` where ``shard_size`` does not divide the DP group."""
    size = np.asarray(dp.size, dtype=np.int64)
    if np.any(size % shard_size):
        bad = int(np.ravel(size[size % shard_size != 0])[0])
        raise ConfigError(f"fsdp_shard_size({shard_size}) must divide the data-parallel group dp·cp({bad})")
    stride = np.asarray(dp.stride, dtype=np.int64)
    k = np.full(size.shape, shard_size, dtype=np.int64)
    return GroupKey(k, stride), GroupKey(size // shard_size, stride * shard_size)


def hsdp_times(cluster: ClusterSpec, keys: dict[Dim, GroupKey], shard_size: int, params: np.ndarray,
               unit_params: np.ndarray, root_params: np.ndarray, grad_bytes: float, param_bytes: float,
               ones: np.ndarray, memo: dict | None = None) -> HsdpTimes:
    """Seconds of ONE instance of each HSDP collective (:class:`~distcalc.analyze.block_terms.HsdpTimes`): the
    unit's and the root's AllGather / ReduceScatter in the shard group, their gradient-shard AllReduce over the
    replicate group, and the whole model's ZeRO-3 messages (the gradient reduction: the ReduceScatter in the
    shard group plus the replicate AllReduce); and the ranks the states are sharded over. ``params``: this
    rank's parameters before sharding."""
    shard, replicate = hsdp_groups(keys[Dim.DP], shard_size)
    k = float(shard_size)
    inner = [Message(Dim.DP, Comm.ALL_GATHER, unit_params * param_bytes, ones, Phase.FORWARD, True,
                     "HSDP unit AllGather (shard group)"),
             Message(Dim.DP, Comm.REDUCE_SCATTER, unit_params * grad_bytes, ones, Phase.BACKWARD, True,
                     "HSDP unit ReduceScatter (shard group)"),
             Message(Dim.DP, Comm.ALL_GATHER, root_params * param_bytes, ones, Phase.FORWARD, True,
                     "HSDP root AllGather (shard group)"),
             Message(Dim.DP, Comm.REDUCE_SCATTER, root_params * grad_bytes, ones, Phase.BACKWARD, True,
                     "HSDP root ReduceScatter (shard group)")]
    whole = dp_gradient_messages(params, shard.size, 3, ones, grad_bytes, param_bytes)
    outer = [Message(Dim.DP, Comm.ALL_REDUCE, unit_params * grad_bytes / k, ones, Phase.BACKWARD, True,
                     "HSDP unit gradient-shard AllReduce (replicate group)"),
             Message(Dim.DP, Comm.ALL_REDUCE, root_params * grad_bytes / k, ones, Phase.BACKWARD, True,
                     "HSDP root gradient-shard AllReduce (replicate group)"),
             Message(Dim.DP, Comm.ALL_REDUCE, params * grad_bytes / k, ones, Phase.BACKWARD, True,
                     "HSDP gradient-shard AllReduce (replicate group)")]
    shape = ones.shape
    in_shard = message_times(cluster, inner + whole, {**keys, Dim.DP: shard}, shape, memo)
    across = message_times(cluster, outer, {**keys, Dim.DP: replicate}, shape)
    t = [times for _, times, _ in in_shard]
    a = [times for _, times, _ in across]
    return HsdpTimes(unit_gather_s=t[0], unit_reduce_scatter_s=t[1], root_gather_s=t[2],
                     root_reduce_scatter_s=t[3],
                     zero3_grad_reduce_s=t[5] + a[2], zero3_forward_gather_s=t[7], zero3_backward_gather_s=t[8],
                     unit_all_reduce_s=a[0], root_all_reduce_s=a[1],
                     zero_group_ranks=np.asarray(shard.size, dtype=float))
