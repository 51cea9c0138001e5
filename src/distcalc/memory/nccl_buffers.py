"""GPU memory NCCL holds outside PyTorch's allocator: one footprint per communicator the training job uses.

Every process group that runs a collective owns its own NCCL communicator, and every communicator allocates
its own channel buffers (NCCL issue #986, S. Jeaugey: "More communicators = more memory used, except if
communicators are created with ncclCommSplit and the flag to share resources is set"; PyTorch's
``new_group`` does not set it). That memory is device memory (``cudaMalloc``/``cuMemCreate``), so it shows
in nvidia-smi but not in ``torch.cuda.memory_reserved()`` (fairscale PR #678: "the NCCL buffers are not
allocated through the PyTorch caching allocator") — it belongs to :attr:`~distcalc.memory.MemoryBasis.DEVICE`
only.

**Communicators of a job** (:func:`job_communicators`): the default (world) group, which every framework
uses for ``barrier`` (Megatron's timers, initialisation) once there is more than one rank, and one group per
parallel dimension with more than one rank (TP, CP, DP × CP — the group that reduces gradients —, PP for the
point-to-point sends, EP); with tied embeddings and pp > 1 the two-rank group of the first and last stage
that all-reduces the shared embedding's gradient (Megatron ``_EMBEDDING_GROUP``, DeepSpeed's tied-module
groups). Megatron-Core (``megatron_core``; ``megatron/core/parallel_state.py`` at core_v0.6.0) adds two
groups that run collectives of their own: the data-parallel group *without* CP, a separate ``new_group``
from the gradient-reducing one even at cp = 1, on which ``average_losses_across_data_parallel_group``
all-reduces the loss of every micro-batch; and under FP8 the TP × DP × CP amax-reduction group that
TransformerEngine's ``fp8_autocast(fp8_group=…)`` reduces amaxes over (``transformer_block.py``). Its
model-parallel group is not used under the distributed optimizer, whose gradient norm is reduced over the
whole world (``DistributedOptimizer.get_model_parallel_group``). The embedding group is counted on every
stage though only the first and the last hold it (those two are where the peak sits when pp > 1).

**Footprint of one communicator** (:func:`communicator_bytes`):

* channel buffers (ring/tree, send/recv): measured by ConnollyLeon on 4 A100 with NVLink (NVIDIA/nccl issue
  #964, PyTorch process groups, a 4 MB all-reduce on each, nvidia-smi): 544 MiB for a group of two GPUs,
  688 MiB for more (:data:`TWO_RANK_COMMUNICATOR_BYTES`, :data:`COMMUNICATOR_BYTES`);
* NVLink SHARP (NVLS) buffers where NCCL can use them: sm90+ GPUs on an NVSwitch with multicast
  (:data:`NVLS_FABRICS`) and more than two GPUs of the communicator in the node (``ncclNvlsInit``:
  ``gpuCount <= 2`` → no NVLS). ``ncclNvlsSetup`` (NCCL v2.19.4 ``src/transport/nvls.cc``) binds
  ``nChannels · 2 · (buffSize + memSize) · nHeads`` bytes of physical memory on every GPU with
  ``nChannels`` = ``NCCL_NVLS_NCHANNELS`` (16), ``buffSize`` = ``NCCL_BUFFSIZE`` (4 MiB),
  ``memSize`` = ``NVLS_MEM_ALIGN_SIZE`` (2 MiB) and one head per GPU of the node
  (``src/graph/search.cc``: "NVLS search must have ngpus heads at most"; a single node pulls from all):
  192 MiB per head, 1.5 GiB for a communicator spanning eight GPUs of a node (:func:`nvls_bytes`).
  NCCL 2.19 sets NVLS up when the communicator is created (``initTransportsRank`` calls ``ncclNvlsSetup``);
  from 2.22 (``NCCL_RUNTIME_CONNECT`` default 1) when an NVLS collective first runs, which an all-reduce of
  more than two GPUs on such a node does — so a communicator that never runs one holds less there.
"""

from __future__ import annotations

from dataclasses import dataclass

from distcalc.units import MIB

#: One communicator's channel buffers, measured on 4 A100 NVLink (NVIDIA/nccl issue #964): a group of two
#: GPUs, and a group of more than two.
TWO_RANK_COMMUNICATOR_BYTES = 544 * MIB
COMMUNICATOR_BYTES = 688 * MIB
#: NCCL v2.19.4 src/transport/nvls.cc: NCCL_NVLS_NCHANNELS default, NCCL_BUFFSIZE default, NVLS_MEM_ALIGN_SIZE.
NVLS_CHANNELS = 16
NCCL_BUFFSIZE_BYTES = 4 * MIB
NVLS_MEM_ALIGN_BYTES = 2 * MIB
#: Intra-node fabrics (links.yaml) whose NVSwitches do NVLink SHARP multicast for sm90+ GPUs: third-generation
#: NVSwitch of HGX/DGX H100, H200 and H800 (NVLink 4) and the NVLink 5 switch of B200/GB200/GB300 systems
#: (NVIDIA DGX H100 / DGX B200 datasheets, "NVLink SHARP"); NVLink 3 (A100, A800) and PCIe nodes have none.
NVLS_FABRICS = frozenset({"nvlink4", "nvlink4-h800", "nvlink5"})


@dataclass(frozen=True)
class Communicator:
    """One NCCL communicator a GPU belongs to: its name, its ranks and how many of them share the node."""

    name: str
    ranks: int
    local_ranks: int


def nvls_bytes(local_ranks: int) -> int:
    """NVLS buffers bound on each GPU of a communicator with ``local_ranks`` GPUs in the node (module
    docstring): ``16 · 2 · (4 MiB + 2 MiB) · local_ranks``; 0 for two GPUs or fewer."""
    if local_ranks <= 2:
        return 0
    return NVLS_CHANNELS * 2 * (NCCL_BUFFSIZE_BYTES + NVLS_MEM_ALIGN_BYTES) * local_ranks


def communicator_bytes(comm: Communicator, nvls: bool) -> int:
    """Device memory of one communicator on one of its GPUs: channel buffers (two ranks or more) plus NVLS
    buffers on an NVLS fabric (``nvls``); 0 for a communicator of one rank (NCCL connects no peers)."""
    if comm.ranks <= 1:
        return 0
    channels = TWO_RANK_COMMUNICATOR_BYTES if comm.ranks == 2 else COMMUNICATOR_BYTES
    return channels + (nvls_bytes(comm.local_ranks) if nvls else 0)


def _local(size: int, stride: int, gpus_per_node: int) -> int:
    """Members of a group of ``size`` ranks at ``stride`` that share one node of ``gpus_per_node`` GPUs
    (ranks fill nodes in order: :mod:`distcalc.placement`)."""
    if size <= 1:
        return 1
    return max(1, min(size, gpus_per_node // stride)) if stride < gpus_per_node else 1


def job_communicators(tp: int, pp: int, dp: int, cp: int = 1, ep: int = 1, gpus_per_node: int = 8, *,
                      tied_embeddings: bool = False, megatron_core: bool = False,
                      fp8: bool = False) -> list[Communicator]:
    """The communicators one GPU of a ``tp × cp × dp × pp`` job holds (module docstring), with Megatron's
    rank order (TP innermost, then CP, DP, PP: :mod:`distcalc.placement`); EP groups are ``ep`` consecutive
    ranks of the CP × DP space."""
    world = tp * pp * dp * cp
    pp_stride = tp * cp * dp
    groups = [("world", world, 1), ("tp", tp, 1), ("cp", cp, tp), ("dp", dp * cp, tp), ("pp", pp, pp_stride),
              ("ep", ep, tp)]
    if tied_embeddings and pp > 1:  # first and last stage: (pp - 1) * pp_stride apart
        groups.append(("embedding", 2, (pp - 1) * pp_stride))
    if megatron_core:
        groups.append(("dp-loss", dp, tp * cp))
        if fp8:
            groups.append(("fp8-amax", tp * dp * cp, 1))
    out: list[Communicator] = []
    for name, size, stride in groups:
        if size > 1:
            local = min(world, gpus_per_node) if name == "world" else _local(size, stride, gpus_per_node)
            out.append(Communicator(name, size, local))
    return out


def nccl_buffer_bytes(tp: int, pp: int, dp: int, cp: int = 1, ep: int = 1, gpus_per_node: int = 8,
                      intra_fabric: str = "", *, tied_embeddings: bool = False, megatron_core: bool = False,
                      fp8: bool = False) -> int:
    """NCCL device memory per GPU of a job: the sum of :func:`communicator_bytes` over
    :func:`job_communicators`, NVLS counted when ``intra_fabric`` (a links.yaml name) is in
    :data:`NVLS_FABRICS`."""
    nvls = intra_fabric in NVLS_FABRICS
    comms = job_communicators(tp, pp, dp, cp, ep, gpus_per_node, tied_embeddings=tied_embeddings,
                              megatron_core=megatron_core, fp8=fp8)
    return sum(communicator_bytes(c, nvls) for c in comms)
