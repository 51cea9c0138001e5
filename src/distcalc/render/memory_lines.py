"""The lines of a per-GPU memory breakdown: which :class:`distcalc.memory.StageMemory` fields each labelled line
sums. The ``memory`` table's rows and the ``memory --plot`` bar segments are these, in this order."""

from __future__ import annotations

from typing import Any, Sequence

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


def stage_lines(stages: Sequence[Any]) -> list[tuple[str, list[float]]]:
    """(label, bytes per stage) of every line of :data:`SEGMENTS` for ``stages`` (``StageMemory`` records), the
    optional lines left out where all are zero."""
    lines = []
    for label, fields in SEGMENTS:
        values = [sum(getattr(stage, field) for field in fields) for stage in stages]
        if label in OPTIONAL_LINES and not any(values):
            continue
        lines.append((label, values))
    return lines
