"""The labelled lines of a per-GPU memory breakdown: which :class:`distcalc.memory.StageMemory` fields each line
sums. Every byte field of a stage that ``total_bytes`` adds up is in exactly one line, so the lines of a stage sum
to its total. The ``memory`` table, ``memory --plot`` and the web page's memory bars (``GET /api/memory-lines``)
all draw these, in this order."""

from __future__ import annotations

#: (label, stage fields summed), bottom to top of the bar and top to bottom of the table
SEGMENTS = (
    ("weights", ("weights_bytes",)),
    ("gradients", ("gradients_bytes",)),
    ("optimizer", ("optimizer_bytes",)),
    ("layer activations", ("layer_activations_bytes",)),
    ("recompute workspace", ("recompute_workspace_bytes",)),
    ("embedding/output acts", ("embedding_activations_bytes", "output_activations_bytes")),
    ("loss workspace", ("loss_workspace_bytes",)),
    ("attention-score buffer", ("attention_buffer_bytes",)),  # shown when a stack has one
    ("TE dummy weight grads", ("weight_gradient_dummies_bytes",)),  # shown when a stack has them
    ("buffers + CUDA context", ("communication_buffers_bytes", "cuda_context_bytes")),
    ("allocator reserve", ("allocator_reserve_bytes",)),
    ("optimizer-step buffers", ("optimizer_step_buffers_bytes",)),  # shown when a stack has them
)
#: Lines left out when they are zero on every stage shown.
OPTIONAL_LINES = ("attention-score buffer", "TE dummy weight grads", "optimizer-step buffers")
