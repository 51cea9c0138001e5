"""How many times Megatron-Core's distributed optimizer gathers the updated parameters at the end of a step.

An MoE model in Megatron-Core (``core_r0.9.0`` onward; checked at ``core_r0.9.0``, ``core_v0.10.0``,
``core_v0.12.0`` … ``core_v0.14.0`` and ``23e00ed``) is optimised by a ``ChainedOptimizer`` of two
``DistributedOptimizer`` instances: one for the dense parameters (sharded over the DP×CP group) and one for
the expert parameters (sharded over the expert-DP group) (``megatron/core/optimizer/__init__.py``,
``get_megatron_optimizer``: "We use separate optimizers for expert parameters and non-expert parameters").
``ChainedOptimizer.step_with_ready_grads`` steps each of them, and each one's
``DistributedOptimizer.step_with_ready_grads`` then, when ``overlap_param_gather`` is off, calls
``model_chunk.start_param_sync()`` on its model chunks (``optimizer/distrib_optimizer.py``). That method
gathers *every* bucket group of the chunk, ``self.bucket_groups + self.expert_parallel_bucket_groups``
(``distributed/distributed_data_parallel.py``), without checking whether they were gathered already
(``param_and_grad_buffer.py``, ``_ParamAndGradBucketGroup.start_param_sync``). The dense and expert
parameter AllGathers therefore run once per optimizer in the chain: twice per step for an MoE model, once
for a dense one.

With ``overlap_param_gather`` on, ``step_with_ready_grads`` dispatches nothing: the gathers are issued
bucket by bucket from the next forward pass's pre-hooks, once each. SimuMax prices the same doubling for
Megatron MoE runs (MooreThreads/SimuMax@4dcaae5 ``simumax/core/perf_llm.py`` ``_compute_dp_time``:
``num_gather_bucket *= 2`` for ``model_type == "moe"``).
"""

from __future__ import annotations

#: DistributedOptimizer instances in Megatron-Core's ChainedOptimizer of an MoE model: dense + expert
MOE_CHAINED_OPTIMIZERS = 2


def step_param_gather_passes(distributed_optimizer: bool, overlap_param_gather: bool, moe: bool) -> int:
    """How many times the step's updated-parameter AllGather runs (module docstring): 2 for an MoE model under
    Megatron-Core's distributed optimizer with ``overlap_param_gather`` off, else 1."""
    if distributed_optimizer and moe and not overlap_param_gather:
        return MOE_CHAINED_OPTIMIZERS
    return 1
