"""How the PyTorch-native training stacks of the published runs (torchtitan, IBM fms-fsdp) shard and step:
FSDP layout, HSDP and the optimizer loop (rules used by :mod:`distcalc.validation.published.mapping`)."""

from __future__ import annotations

import re

from distcalc.analyze.options import FsdpSharding
from distcalc.software import ContextParallelAlgorithm
from distcalc.validation.published.rows import PublishedRun

#: fms-fsdp's sharding strategy per model variant in its README's benchmark table at the 2024 blog's date
#: (foundation-model-stack/fms-fsdp@5e522b4, 2024-03-13: "7b HSDP", "13b/34b/70b FSDP"; scripts/train.sh
#: ``--sharding_strategy=hsdp``). HSDP is FSDP1 ``HYBRID_SHARD``: shard within a node, replicate across nodes.
FMS_FSDP_HSDP_VARIANTS = ("7B",)


def pytorch_native(run: PublishedRun) -> bool:
    """Whether the row's training loop is PyTorch's own: ``torch.optim.AdamW`` (foreach) and
    ``clip_grad_norm_`` on FSDP shards (torchtitan, IBM fms-fsdp)."""
    return "torchtitan" in run.framework or "fms-fsdp" in run.framework


def fsdp_shard_size(run: PublishedRun) -> int:
    """HSDP shard group of the row (0: FULL_SHARD): fms-fsdp's 7B runs shard within the node
    (:data:`FMS_FSDP_HSDP_VARIANTS`; FSDP1's default intra-node group is the node's GPUs)."""
    variant = re.search(r"(\d+)B\b", run.model)
    if run.fsdp and "fms-fsdp" in run.framework and variant and f"{variant[1]}B" in FMS_FSDP_HSDP_VARIANTS:
        if run.gpus_per_node is None:  # run_inputs reports it as not expressible
            raise ValueError("HSDP within the node, but gpus_per_node is not stated")
        return run.gpus_per_node
    return 0


def fsdp_sharding(run: PublishedRun) -> FsdpSharding:
    """The row's ZeRO-3 layout: FSDP2 per parameter, PyTorch FSDP1 a flat parameter, else flat buffers."""
    if "FSDP2" in run.framework:
        return FsdpSharding.PER_PARAMETER
    return FsdpSharding.FLAT_PARAMETER if "FSDP1" in run.config_details else FsdpSharding.FLAT


def cp_algorithm(run: PublishedRun) -> ContextParallelAlgorithm:
    """How the row's context parallelism exchanges K,V: Megatron's ``--cp-comm-type a2a`` (config_details "CP
    comm type a2a") is Ulysses; torchtitan runs PyTorch's ring attention
    (``torch.distributed.tensor.experimental.context_parallel``) with K,V rotated by one AllGather — torchtitan's
    ``experimental.context_parallel_rotate_method`` defaults to "allgather" — or rank to rank where the row names
    the "alltoall" rotate method; every other stack (TransformerEngine's CP) runs the Send/Recv ring."""
    if "CP comm type a2a" in run.config_details:
        return ContextParallelAlgorithm.ULYSSES
    if "torchtitan" in run.framework:
        if re.search(r"rotate[ _-]method\W*alltoall", run.config_details, re.I):
            return ContextParallelAlgorithm.TORCH_ALLTOALL
        return ContextParallelAlgorithm.TORCH_ALLGATHER
    return ContextParallelAlgorithm.RING
