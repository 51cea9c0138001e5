"""How the training software runs the model: the implementation choices the step time depends on.

One enum each, with the spellings users read and write (CLI, YAML, JSON, the web page). The physics of each
choice lives where it is priced (named in each docstring); this module holds only the names, so that the
command line and the request schemas can offer the choices without importing the cost model.
"""

from __future__ import annotations

from enum import Enum


class ContextParallelAlgorithm(str, Enum):
    """How context parallelism exchanges keys/values: ring attention (Send/Recv), Ulysses (AllToAll) or
    all-gather (Llama 3: AllGather of K,V, ReduceScatter of dK,dV; :func:`distcalc.traffic.cp_layer_messages`);
    or PyTorch's ring attention (``torch.distributed.tensor.experimental.context_parallel``, what torchtitan
    runs) with its K,V rotated by one AllGather up front (``torch-allgather``, PyTorch's and torchtitan's
    default rotate method) or passed rank to rank (``torch-alltoall``), eager per-step merges in float32
    (:mod:`distcalc.compute.torch_cp`, :mod:`distcalc.analyze.torch_cp`)."""

    RING = "ring"
    ULYSSES = "ulysses"
    ALL_GATHER = "all-gather"
    TORCH_ALLGATHER = "torch-allgather"
    TORCH_ALLTOALL = "torch-alltoall"


#: The context-parallel algorithms that are PyTorch's ring attention (its eager kernels, FP32 buffers and
#: flash-only dispatch): what the step model and the memory model both branch on.
TORCH_CP_ALGORITHMS = (ContextParallelAlgorithm.TORCH_ALLGATHER, ContextParallelAlgorithm.TORCH_ALLTOALL)


class ElementwiseKernels(str, Enum):
    """How a framework runs the layer's elementwise work: Megatron-LM / TransformerEngine fuse each norm,
    activation and rotary embedding into one kernel (``fused``); a PyTorch-eager model (torchtitan without
    ``fused_rmsnorm`` or ``torch.compile``, IBM fms-fsdp) runs them as the composite ops of its code
    (``eager``; :mod:`distcalc.compute.layer`). Megatron-LM's own (non-TransformerEngine) linear layers
    (``--transformer-impl local``, the legacy ``megatron/model`` GPT) fuse the same kernels but add the
    QKV projection's bias in a kernel of its own and reduce each biased linear's bias gradient in one
    (``megatron-local``; :mod:`distcalc.compute.layer`)."""

    FUSED = "fused"
    EAGER = "eager"
    MEGATRON_LOCAL = "megatron-local"


class FsdpSharding(str, Enum):
    """How ZeRO-3/FSDP lays out a unit's parameters: flat buffers that the parameters and their gradients
    live in (Megatron-FSDP: the weight-gradient GEMMs accumulate into the bucketed ``main_grad`` buffer;
    ``flat``, no copies); one flat parameter the parameters are views of, whose gradient autograd
    concatenates from the views' gradients (PyTorch FSDP1 ``FlatParameter``; DeepSpeed ZeRO-3 copies each
    gradient into its contiguous reduce bucket likewise; ``flat-parameter``,
    :func:`distcalc.analyze.fsdp.fsdp_flat_grad_copy_s`); or each parameter sharded on its own (FSDP2
    ``fully_shard``, DTensor; ``per-parameter``), which copies every gathered unit out of and every gradient
    into the collective's flat buffer (:func:`distcalc.analyze.fsdp.fsdp_copy_s`)."""

    FLAT = "flat"
    FLAT_PARAMETER = "flat-parameter"
    PER_PARAMETER = "per-parameter"


class AttentionKernel(str, Enum):
    """Which fused-attention implementation the framework runs: the GPU preset's fused attention (cuDNN /
    FlashAttention-3 class), the FlashAttention-2 package, or FlashAttention 1.x (rates and sources:
    :mod:`distcalc.compute.attention`)."""

    FUSED = "fused"
    FLASH2 = "flash2"
    FLASH1 = "flash1"


class CrossEntropyKernel(str, Enum):
    """Which cross-entropy implementation computes the loss: Megatron-Core's vocab-parallel cross-entropy
    (``unfused``), or ``--cross-entropy-loss-fusion`` with ``--cross-entropy-fusion-impl native`` / ``te``
    (bytes and kernels of each: :mod:`distcalc.compute.loss`)."""

    UNFUSED = "unfused"
    NATIVE_FUSED = "native-fused"
    TE_FUSED = "te-fused"


class MainGradDtype(str, Enum):
    """The dtype of the ``main_grad`` buffer that Megatron-LM's fused weight-gradient GEMM accumulates into
    (``gradient_accumulation_fusion``: ``fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32`` or ``_fp16``,
    picked by ``weight.main_grad.dtype``). The buffer is fp32 with ``--accumulate-allreduce-grads-in-fp32``,
    which bf16 training forces on; fp16 training without that flag keeps it in the parameters' fp16
    (``DistributedDataParallel``: ``dtype = torch.float if accumulate_allreduce_grads_in_fp32 else
    param.dtype``). The GEMM's epilogue reads and writes the buffer: 8 bytes per weight-gradient element in
    fp32, 4 in fp16 (:mod:`distcalc.compute.layer`)."""

    FP32 = "fp32"
    FP16 = "fp16"

    @property
    def bytes_per_element(self) -> float:
        """Bytes of one ``main_grad`` element."""
        return 4.0 if self is MainGradDtype.FP32 else 2.0


class DataParallelWrapper(str, Enum):
    """Which data-parallel wrapper holds the gradients, and so which passes over them a step runs
    (:mod:`distcalc.analyze.optimizer_passes`): Megatron-Core's DDP with the Megatron-Core optimizer
    (``megatron-core``, the step-time model's default pricing), or Megatron-LM's own mixed-precision optimizer
    (fp16: loss-scaler unscale, fp32 upcast of 16-bit gradients) with its local DDP and contiguous gradient
    buffers (``local-buffers``), its local DDP without them (``local-coalesced``: the 2021 code's fp16 default;
    gradients flattened, divided and copied back) or PyTorch DDP (``torch-ddp``, ``--DDP-impl torch``: bucket
    copies)."""

    MEGATRON_CORE = "megatron-core"
    LOCAL_BUFFERS = "local-buffers"
    LOCAL_COALESCED = "local-coalesced"
    TORCH_DDP = "torch-ddp"
