"""What a benchmark task knows about its rank: :class:`RankContext`, built by :mod:`distcalc.bench.worker`
and passed to the sweep (:mod:`distcalc.bench.collectives`) and training (:mod:`distcalc.bench.training`)
tasks, and the progress callback type they report through."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

#: ``progress(done, total, label)``: a task reports a finished step (negative ``done`` = a start-up phase).
ProgressFn = Callable[[int, int, str], None]


@dataclass
class RankContext:
    """What a task needs to know about its rank (passed to the sweep / training functions)."""

    rank: int
    world_size: int
    local_rank: int
    backend: str
    device: str
    dtype: str = "float32"
    comm: Any = None
    progress: ProgressFn = field(default=lambda done, total, label: None)

    def synchronize(self) -> None:
        """Wait for the device (CUDA) to finish queued work; a no-op on CPU, where gloo calls block."""
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
