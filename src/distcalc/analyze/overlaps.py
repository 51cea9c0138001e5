"""Which communication the step-time model assumes hidden behind compute, per parallel dimension, and why.

:func:`assumed_overlaps` states, for one configuration and its options, what each dimension's collectives
overlap with (or that they sit on the critical path), the option or framework mechanism that decides it,
and the exposed seconds the breakdown charged for it — so a user sees why a collective is or is not
exposed. The statements mirror the formulas of :mod:`distcalc.analyze.core` and
:mod:`distcalc.analyze.fsdp`; nothing here changes a time.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from distcalc.analyze.options import AnalyzeOptions, ContextParallelAlgorithm, FsdpSharding
from distcalc.analyze.tp_async import ASYNC_HIDDEN_FRACTION
from distcalc.zero3_config import DeepSpeedZero3
from distcalc.parallel import ParallelConfig


@dataclass(frozen=True)
class OverlapAssumption:
    """One dimension's overlap as modelled: what runs, what hides it, why, and what stays exposed."""

    dim: str  #: tp, cp, ep, pp or dp
    collectives: str  #: the messages concerned
    hidden_behind: str  #: the compute they overlap, or "nothing (critical path)"
    reason: str  #: the option / framework mechanism that decides it
    exposed_s: float  #: seconds per step charged to this dimension (time breakdown)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (every field a str or a float: no recursive copy needed, unlike ``dataclasses.asdict``)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


def _tp(options: AnalyzeOptions, exposed: float) -> OverlapAssumption:
    if options.tp_comm_overlap:
        return OverlapAssumption(
            "tp", "per-layer AllGather / ReduceScatter, forward and backward (sequence parallel)",
            "each beside one GEMM: forward AllGather with QKV / MLP-up (ring exchange), ReduceScatter with "
            "projection / MLP-down (pipelined in 4 chunks); backward AllGather with projection / MLP-down dgrad (ring "
            "exchange), input re-gather with QKV / MLP-up dgrad and their ReduceScatter with their wgrad (bulk)",
            "tp_comm_overlap: TransformerEngine userbuffers (TE default methods); exposed where a collective outlasts "
            "its GEMM (ring exchange: (t-1)/t of it) and a pipelined ReduceScatter's last chunk, the GEMM slowed by "
            "the 1 or 16 SMs the kernels take", exposed)
    eff = options.tp_overlap_efficiency
    if eff == 0 and options.tp_async_backward:
        return OverlapAssumption(
            "tp", "per-layer AllReduce / AllGather / ReduceScatter, forward and backward",
            f"{100 * ASYNC_HIDDEN_FRACTION:.0f} % of the backward input-gradient AllReduce (SP: input re-gather and "
            "input-gradient ReduceScatter) behind the GEMM of their layer; forward ones and the rest exposed",
            "tp_async_backward: Megatron-LM / TransformerEngine launch them asynchronously through NCCL, which "
            "slows the GEMM meanwhile (Lee et al. 2025 averages; analyze.tp_async)", exposed)
    hidden = (f"{100 * eff:.0f} % of the backward ones behind the backward GEMMs; forward ones exposed" if eff > 0
              else "nothing (critical path)")
    reason = ("tp_overlap_efficiency {:.2f}: TransformerEngine userbuffers (--tp-comm-overlap) pipeline them with "
              "the GEMMs".format(eff) if eff > 0 else
              "tp_overlap_efficiency 0, tp_async_backward off: priced as synchronous (Megatron-LM SC21 code, "
              "Megatron-DeepSpeed); --tp-async-backward for Megatron-LM since 2021-08 / TransformerEngine")
    return OverlapAssumption("tp", "per-layer AllReduce / AllGather / ReduceScatter, forward and backward", hidden,
                             reason, exposed)


def _cp(options: AnalyzeOptions, exposed: float, slowdown: float) -> OverlapAssumption:
    if options.cp_algorithm == ContextParallelAlgorithm.ALL_GATHER:
        return OverlapAssumption("cp", "AllGather of K,V (forward, again in backward), ReduceScatter of dK,dV",
                                 "nothing (critical path)", "cp_algorithm all-gather: the gathered K,V feed the "
                                 "attention kernels (Llama 3 CP; TransformerEngine: \"KV all-gather ... is exposed\")",
                                 exposed)
    if options.cp_algorithm == ContextParallelAlgorithm.TORCH_ALLGATHER:
        return OverlapAssumption("cp", "PyTorch CP: one AllGather of K,V (forward, again in backward), dK,dV "
                                 "passed around the ring in FP32", "the gather: step 0's causal kernel; each "
                                 "dK,dV pass but the last: the next step's backward",
                                 "cp_algorithm torch-allgather: the gather is waited for at step 1 and the last "
                                 f"dK,dV pass after the loop; overlapped kernels {100 * slowdown:.1f} % slower",
                                 exposed)
    if options.cp_algorithm == ContextParallelAlgorithm.TORCH_ALLTOALL:
        return OverlapAssumption("cp", "PyTorch CP: K,V passed rank to rank (forward and backward), dK,dV in FP32",
                                 "each pass: the attention step it was issued beside (backward: K,V and dK,dV "
                                 "passes share it)", "cp_algorithm torch-alltoall: a pass is exposed where it "
                                 "outlasts its step; the last dK,dV pass in full; overlapped kernels "
                                 f"{100 * slowdown:.1f} % slower", exposed)
    if options.cp_algorithm == ContextParallelAlgorithm.ULYSSES:
        return OverlapAssumption("cp", "Ulysses AllToAll of q, k, v and the output", "nothing (critical path)",
                                 "cp_algorithm ulysses: the AllToAll feeds the attention kernel", exposed)
    return OverlapAssumption("cp", "ring attention K/V Send/Recv, one block per ring step",
                             "the attention of the block already received (forward), twice that in backward",
                             "cp_algorithm ring: a step is exposed only where its transfer outlasts the attention "
                             f"it overlaps; that attention {100 * slowdown:.1f} % slower meanwhile (the share of "
                             "the GPU the NCCL transfer takes; smaller when the ring waits on network hops)", exposed)


def _pp(options: AnalyzeOptions, exposed: float) -> OverlapAssumption:
    if options.pipeline_p2p_overlap:
        return OverlapAssumption("pp", "stage-boundary Send/Recv", "the neighbouring micro-batch's compute",
                                 "pipeline_p2p_overlap: NeMo / Megatron-Core overlap_p2p_comm", exposed)
    return OverlapAssumption("pp", "stage-boundary Send/Recv", "nothing (critical path)",
                             "pipeline_p2p_overlap off: blocking Send/Recv of the 1F1B schedule", exposed)


@dataclass(frozen=True)
class FsdpUnit:
    """One FSDP unit (transformer block) of one micro-batch, seconds: its AllGather, ReduceScatter and HSDP
    gradient-shard AllReduce, and the block's forward and backward (+ recompute) compute they hide behind."""

    gather_s: float
    reduce_s: float
    allreduce_s: float
    forward_s: float
    backward_s: float
    kept_blocks: float = 0.0  #: DeepSpeed ZeRO-3: blocks kept gathered from forward to backward

    def describe(self) -> str:
        """Per block: each overlap window against its collectives, and what it leaves exposed."""
        ms = lambda x: f"{1e3 * x:.3g} ms"  # noqa: E731
        busy = max(self.gather_s + self.reduce_s, self.allreduce_s)
        verdict = lambda comm, window: ("hidden" if comm <= window else f"{ms(comm - window)} exposed per block")  # noqa: E731
        ar = f" (beside it the HSDP AllReduce {ms(self.allreduce_s)})" if self.allreduce_s > 0 else ""
        return (f"per block: AllGather {ms(self.gather_s)} vs forward {ms(self.forward_s)} -> "
                f"{verdict(self.gather_s, self.forward_s)}; AllGather + ReduceScatter "
                f"{ms(self.gather_s + self.reduce_s)}{ar} vs backward {ms(self.backward_s)} -> "
                f"{verdict(busy, self.backward_s)}")


def _fsdp_copies(options: AnalyzeOptions) -> str:
    """The FSDP copy kernels that sit on the compute stream (counted in the exposed time)."""
    if options.fsdp_sharding is FsdpSharding.FLAT_PARAMETER:
        return "; FSDP1 flat parameter: each block's gradient concatenated into the flat gradient"
    if options.fsdp_sharding is not FsdpSharding.PER_PARAMETER:
        return ""
    return "; FSDP2 per-parameter sharding: each gather's copy-out and each reduce-scatter's copy-in run serially"


def _fsdp(options: AnalyzeOptions, exposed: float, slow: str, unit: FsdpUnit | None) -> OverlapAssumption:
    """ZeRO-3 / FSDP (and HSDP) as :mod:`distcalc.analyze.fsdp` prices it."""
    k = options.fsdp_shard_size
    hsdp = (f"; HSDP: gathers and reduce-scatters in shard groups of {k} ranks, each gradient shard then "
            "all-reduced over the replicas" if k else "")
    behind = ("forward: the next block's AllGather behind this block's forward (one unit prefetched: FSDP1 "
              "forward prefetch / limit_all_gathers, FSDP2 implicit prefetch); backward: the previous block's "
              "AllGather (BACKWARD_PRE) and the next block's ReduceScatter, one after the other on one "
              "communicator, behind this block's backward" + ("; the replicate AllReduce on its own communicator "
                                                              "beside them" if k else ""))
    reason = ("FSDP prefetch: the root's and first block's gather and the last ReduceScatters"
              + (" (and HSDP AllReduces)" if k else "") + " are exposed, and a block's excess where its collectives "
              f"outlast its compute; {slow}{_fsdp_copies(options)}" + (f"; {unit.describe()}" if unit else ""))
    return OverlapAssumption("dp", "ZeRO-3/FSDP per-block parameter AllGather (forward, again in backward after "
                             "reshard-after-forward) and gradient ReduceScatter" + hsdp, behind, reason, exposed)


def _deepspeed(options: AnalyzeOptions, exposed: float, slow: str, unit: FsdpUnit | None) -> OverlapAssumption:
    """ZeRO-3 as DeepSpeed runs it (:mod:`distcalc.analyze.deepspeed_zero3`): its policy and sizes."""
    ds = options.deepspeed_zero3
    assert ds is not None
    kept = f"{unit.kept_blocks:.3g} blocks" if unit else "the blocks"
    what = ("DeepSpeed ZeRO-3 per-submodule parameter AllGather (forward; again in backward for what "
            f"stage3_max_reuse_distance={ds.max_reuse_distance_elements:.3g} releases) and gradient ReduceScatter "
            f"in reduce_bucket_size={ds.reduce_bucket_elements:.3g}-element buckets")
    if ds.max_live_parameters == 0 or ds.prefetch_bucket_elements == 0:
        behind = ("nothing prefetched (stage3_max_live_parameters or stage3_prefetch_bucket_size 0): every gather "
                  "on the critical path; " + ("gradient buckets behind the backward (overlap_comm)" if ds.overlap_comm
                                              else "ReduceScatters on the compute stream (overlap_comm off)"))
        return OverlapAssumption("dp", what, behind, _deepspeed_reason(ds, kept, slow, unit), exposed)
    behind = (f"forward: prefetches of stage3_prefetch_bucket_size={ds.prefetch_bucket_elements:.3g} elements per "
              f"submodule, up to stage3_max_live_parameters={ds.max_live_parameters:.3g} in flight, behind the "
              "blocks' forward; backward: the regathers and the gradient buckets, one communicator, "
              + ("behind the blocks' backward (overlap_comm)" if ds.overlap_comm
                 else "gathers behind the backward, ReduceScatters on the compute stream (overlap_comm off)"))
    return OverlapAssumption("dp", what, behind, _deepspeed_reason(ds, kept, slow, unit), exposed)


def _deepspeed_reason(ds: DeepSpeedZero3, kept: str, slow: str, unit: FsdpUnit | None) -> str:
    """Why DeepSpeed ZeRO-3's collectives are or are not exposed: its release, persistence and copy policy."""
    return (f"{kept} and the output layer stay gathered from forward to backward (reuse within "
            f"stage3_max_reuse_distance); parameters of at most {ds.param_persistence_threshold_elements:.3g} elements "
            "are never gathered; the embedding's gather, the first prefetch and the last gradient bucket are "
            f"exposed, and a block's excess where its collectives outlast its compute; {slow}; gradients copied "
            + ("into the contiguous bucket and " if ds.contiguous_gradients else "")
            + "into the ReduceScatter's flat input" + (f"; {unit.describe()}" if unit else ""))


def _dp(config: ParallelConfig, options: AnalyzeOptions, exposed: float,
        unit: FsdpUnit | None = None, gather_passes: int = 1) -> OverlapAssumption:
    zero = max(config.zero_stage, 1 if options.distributed_optimizer else 0)
    slow = f"compute {100 * options.overlap_compute_slowdown:.1f} % slower while they overlap it"
    if zero == 3:
        if options.deepspeed_zero3 is not None:
            return _deepspeed(options, exposed, slow, unit)
        if not options.overlap_grad_reduce:
            return OverlapAssumption("dp", "ZeRO-3 parameter AllGather (forward, backward) and gradient "
                                     "ReduceScatter", "nothing (critical path)", "overlap_grad_reduce off", exposed)
        return _fsdp(options, exposed, slow, unit)
    what = "gradient AllReduce" if zero == 0 else "gradient ReduceScatter + updated-parameter AllGather"
    if zero >= 1 and gather_passes > 1:  # Megatron-Core's ChainedOptimizer (analyze.chained_optimizer)
        what += (f" (x{gather_passes}: the dense and the expert DistributedOptimizer each gather every "
                 "parameter bucket)")
    if not options.overlap_grad_reduce:
        return OverlapAssumption("dp", what, "nothing (after the backward pass)",
                                 "overlap_grad_reduce off (2022-era Megatron-LM train_step)", exposed)
    gather = ("; parameter AllGather behind the next forward (overlap_param_gather)" if zero >= 1
              and options.overlap_param_gather else "")
    return OverlapAssumption("dp", what, "the backward pass of the last micro-batch" + gather,
                             "overlap_grad_reduce: bucketed reduction as gradients become ready; the last gradient "
                             "bucket (and the first parameter bucket) and what outlasts one micro-batch's backward "
                             f"are exposed; {slow}", exposed)


def assumed_overlaps(config: ParallelConfig, options: AnalyzeOptions, breakdown: dict[str, float],
                     cp_slowdown: float | None = None, fsdp_unit: FsdpUnit | None = None,
                     gather_passes: int = 1) -> list[OverlapAssumption]:
    """The overlap assumed for every dimension of degree > 1 (module docstring); ``cp_slowdown``: κ of the
    ring's overlapped attention (:func:`distcalc.analyze.cp_ring.ring_slowdown`; default
    ``overlap_compute_slowdown``); ``fsdp_unit``: one FSDP unit's collectives and compute (ZeRO-3);
    ``gather_passes``: how many times the step's parameter AllGather runs
    (:func:`distcalc.analyze.chained_optimizer.step_param_gather_passes`)."""
    out: list[OverlapAssumption] = []
    if config.tp > 1:
        out.append(_tp(options, breakdown.get("tp_exposed_s", 0.0)))
    if config.cp > 1:
        slowdown = options.overlap_compute_slowdown if cp_slowdown is None else cp_slowdown
        out.append(_cp(options, breakdown.get("cp_exposed_s", 0.0), slowdown))
    if config.ep > 1:
        out.append(OverlapAssumption("ep", "MoE token dispatch and combine AllToAll", "nothing (critical path)",
                                     "the experts need the dispatched tokens; no overlap modelled",
                                     breakdown.get("ep_exposed_s", 0.0)))
    if config.pp > 1:
        out.append(_pp(options, breakdown.get("pp_p2p_s", 0.0)))
    if config.data_parallel * config.cp > 1:
        out.append(_dp(config, options, breakdown.get("dp_exposed_s", 0.0), fsdp_unit, gather_passes))
    return out
