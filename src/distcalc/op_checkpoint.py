"""Which linear projections of a transformer block an op-level selective activation checkpoint recomputes.

torchtitan's op-level selective activation checkpointing (``--activation_checkpoint.mode selective
--activation_checkpoint.selective_ac_option op``; ``torchtitan/parallelisms/parallelize_llama.py``,
``_apply_ac_to_transformer_block``, mid-2024, kept since in ``torchtitan/distributed/activation_checkpoint.py``)
wraps every transformer block in ``checkpoint_wrapper`` with a ``create_selective_checkpoint_contexts``
policy that *saves the output of every op in its save list* — ``aten.mm``, the flash / memory-efficient
SDPA kernels and the TP ``reduce_scatter`` — *except every second* ``aten.mm`` of the block (the policy
counts the block's mm calls, restarting for each block, and recomputes the even-numbered ones); every other
op (norms, activations, RoPE, residual adds, casts) is recomputed in the backward pass.

The block's projections in call order (torchtitan's Llama ``Attention.forward`` then
``FeedForward.forward``: ``w2(F.silu(w1(x)) * w3(x))``):

* attention: wq, wk, wv, wo;
* gated MLP: w1 (gate), w3 (up), w2 (down); a non-gated MLP: fc1, fc2.

So a Llama block recomputes wk, wo and w3 and saves wq, wv, w1 and w2; a GPT block recomputes wk, wo and
fc2. Each projection is described as ``(name, output width, input width, row_parallel)`` in units of
model dimensions; ``row_parallel`` marks the projections whose *input* is split by tensor parallelism
(wo, w2/fc2), the others split their output.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Projection:
    """One linear projection of a block: ``[tokens × in_width] · [in_width × out_width]``."""

    name: str
    out_width: int
    in_width: int
    row_parallel: bool  #: TP splits the input width (else the output width)


def block_projections(hidden: int, heads: int, kv_heads: int, qk_head: int, v_head: int, ffn: int,
                      gated: bool, with_mlp: bool = True) -> tuple[Projection, ...]:
    """The block's projections in the order the forward pass calls them (module docstring);
    ``with_mlp`` False leaves the MLP out (an MoE layer, whose experts are not ``aten.mm`` calls)."""
    attention = (Projection("wq", heads * qk_head, hidden, False), Projection("wk", kv_heads * qk_head, hidden, False),
                 Projection("wv", kv_heads * v_head, hidden, False), Projection("wo", hidden, heads * v_head, True))
    if not with_mlp:
        return attention
    if gated:
        mlp = (Projection("w1", ffn, hidden, False), Projection("w3", ffn, hidden, False),
               Projection("w2", hidden, ffn, True))
    else:
        mlp = (Projection("fc1", ffn, hidden, False), Projection("fc2", hidden, ffn, True))
    return attention + mlp


def op_sac_split(projections: tuple[Projection, ...]) -> tuple[tuple[Projection, ...], tuple[Projection, ...]]:
    """(saved, recomputed): the policy saves the 1st, 3rd, 5th… mm of the block and recomputes the 2nd,
    4th, 6th…"""
    saved = tuple(p for i, p in enumerate(projections) if i % 2 == 0)
    recomputed = tuple(p for i, p in enumerate(projections) if i % 2 == 1)
    return saved, recomputed


@dataclass(frozen=True)
class OpSacSplit:
    """One layer kind's projections under op-level selective checkpointing: those it saves, those it recomputes,
    and the recomputed weights ``Σ out·in`` (2 forward FLOPs per token each)."""

    saved: tuple[Projection, ...] = ()
    recomputed: tuple[Projection, ...] = ()
    recomputed_weights: int = 0


def op_sac_layer(hidden: int, heads: int, kv_heads: int, qk_head: int, v_head: int, ffn: int, gated: bool,
                 with_mlp: bool = True) -> OpSacSplit:
    """The :class:`OpSacSplit` of one block (:func:`block_projections`, :func:`op_sac_split`)."""
    saved, recomputed = op_sac_split(block_projections(hidden, heads, kv_heads, qk_head, v_head, ffn, gated, with_mlp))
    return OpSacSplit(saved, recomputed, sum(p.out_width * p.in_width for p in recomputed))
