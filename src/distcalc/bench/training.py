"""A real data-, tensor- or pipeline-parallel training step, counted and timed (``bench training``).

The model is ``layers`` copies of :class:`distcalc.bench.layers.TransformerLayer` fed a random activation
``[b, s, h]`` that requires a gradient (it stands in for the embedding output, so every layer's backward runs
as in a real model). One step = ``micro_batches`` forward+backward passes with gradient accumulation, then an
SGD update. The parallel dimension takes all ``N`` ranks:

* ``dp``: every rank holds the whole model; after the last micro-batch the gradients of all parameters are
  flattened into ONE bucket and all-reduced once (``dp_gradient_messages`` with ZeRO 0: one AllReduce of
  ``P·4`` bytes per step), then divided by N;
* ``tp``: Megatron column/row split over the N ranks (2 AllReduce forward + 2 backward per layer per
  micro-batch, or the sequence-parallel AllGather/ReduceScatter set with ``sequence_parallel``);
* ``pp``: the layers are split into N consecutive stages; GPipe schedule (all forwards, then all backwards,
  Huang et al. 2019): each stage boundary carries one activation forward and one gradient backward of
  ``b·s·h`` elements per micro-batch (blocking Send/Recv).

Every collective goes through :class:`~distcalc.bench.counting.CountingComm`; the counts of the last timed
step are compared with the analytic prediction of :mod:`distcalc.bench.prediction`.
"""

from __future__ import annotations

import enum
import resource
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from distcalc.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from distcalc.bench.rank import RankContext


class TrainingMode(str, enum.Enum):
    """Which parallel dimension the N ranks form."""

    DP = "dp"
    TP = "tp"
    PP = "pp"


class TrainingConfig(BaseModel):
    """The bench model and step (sizes in elements; float32 training)."""

    mode: TrainingMode = Field(description="parallel dimension formed by all ranks")
    hidden: int = Field(64, gt=0, description="h, model width")
    heads: int = Field(4, gt=0, description="a, attention heads")
    ffn: int | None = Field(None, gt=0, description="MLP width f (default 4h)")
    layers: int = Field(4, gt=0, description="L, transformer layers (all stages together)")
    micro_batch: int = Field(2, gt=0, description="b, sequences per micro-batch")
    seq_len: int = Field(32, gt=0, description="s, tokens per sequence")
    micro_batches: int = Field(2, gt=0, description="m, micro-batches per step (gradient accumulation)")
    steps: int = Field(3, gt=0, description="timed steps (after one warm-up step)")
    sequence_parallel: bool = Field(False, description="tp only: Megatron sequence parallelism")
    world_size: int = Field(2, gt=0, description="N, ranks (the degree of the chosen dimension)")

    @property
    def ffn_size(self) -> int:
        return self.ffn or 4 * self.hidden

    @model_validator(mode="after")
    def _check(self) -> "TrainingConfig":
        n, problems = self.world_size, []
        if self.hidden % self.heads:
            problems.append(f"hidden {self.hidden} is not divisible by heads {self.heads}")
        if self.mode is TrainingMode.TP:
            for name, value in (("heads", self.heads), ("ffn", self.ffn_size), ("hidden", self.hidden)):
                if value % n:
                    problems.append(f"{name} {value} is not divisible by the TP degree {n}")
            if self.sequence_parallel and self.seq_len % n:
                problems.append(f"seq-len {self.seq_len} is not divisible by the TP degree {n}")
        elif self.sequence_parallel:
            problems.append("--sequence-parallel needs --mode tp")
        if self.mode is TrainingMode.PP and self.layers % n:
            problems.append(f"layers {self.layers} is not divisible by the {n} pipeline stages")
        if problems:
            raise ConfigError("bench training: " + "; ".join(problems))
        return self


class _PeakRss:
    """Peak resident set size during a block, minus the RSS at construction (CPU runs).

    Samples ``/proc/self/statm`` every ~0.5 ms on a thread (``ru_maxrss`` alone is a lifetime high-water
    mark and misses peaks below an earlier one)."""

    def __init__(self) -> None:
        self._page = resource.getpagesize()
        self.baseline = self._rss()
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _rss(self) -> int:
        try:
            return int(Path("/proc/self/statm").read_text().split()[1]) * self._page
        except OSError:  # not Linux: kilobytes on Linux/BSD, bytes on macOS; good enough as a fallback
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def _sample(self) -> None:
        while not self._stop.wait(0.0005):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> "_PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def delta_bytes(self) -> int:
        return max(0, self.peak - self.baseline)


def _build(config: TrainingConfig, ctx: RankContext) -> tuple[Any, list[Any]]:
    import torch

    from distcalc.bench.layers import TensorParallel, TransformerLayer

    tp_size = config.world_size if config.mode is TrainingMode.TP else 1
    tp = TensorParallel(ctx.comm, None, tp_size, config.sequence_parallel)
    count = config.layers // config.world_size if config.mode is TrainingMode.PP else config.layers
    torch.manual_seed(1234 + (ctx.rank if config.mode is not TrainingMode.DP else 0))
    model = torch.nn.Sequential(*[TransformerLayer(config.hidden, config.heads, config.ffn_size, tp)
                                  for _ in range(count)]).to(ctx.device)
    return model, list(model.parameters())


def _input(config: TrainingConfig, ctx: RankContext) -> Any:
    import torch

    s = config.seq_len
    if config.mode is TrainingMode.TP and config.sequence_parallel:
        s //= config.world_size
    return torch.randn(config.micro_batch, s, config.hidden, device=ctx.device, requires_grad=True)


def _dp_all_reduce(params: list[Any], ctx: RankContext) -> None:
    import torch

    flat = torch.cat([p.grad.reshape(-1) for p in params])
    ctx.comm.all_reduce(flat, tag="dp")
    flat /= ctx.world_size
    offset = 0
    for p in params:
        p.grad.copy_(flat[offset:offset + p.numel()].view_as(p.grad))
        offset += p.numel()


def _pipeline_step(model: Any, config: TrainingConfig, ctx: RankContext) -> None:
    """GPipe: forward all micro-batches (recv from the previous stage, send to the next), then backward all
    of them in reverse order (recv the output gradient, send the input gradient)."""
    import torch

    first, last = ctx.rank == 0, ctx.rank == ctx.world_size - 1
    shape = (config.micro_batch, config.seq_len, config.hidden)
    inputs, outputs = [], []
    for _ in range(config.micro_batches):
        if first:
            x = _input(config, ctx)
        else:
            x = torch.empty(shape, device=ctx.device)
            ctx.comm.recv(x, ctx.rank - 1, tag="pp")
            x.requires_grad_(True)
        y = model(x)
        if not last:
            ctx.comm.send(y.detach().contiguous(), ctx.rank + 1, tag="pp")
        inputs.append(x)
        outputs.append(y)
    for x, y in zip(reversed(inputs), reversed(outputs)):
        if last:
            y.float().pow(2).mean().backward()
        else:
            grad = torch.empty(shape, device=ctx.device)
            ctx.comm.recv(grad, ctx.rank + 1, tag="pp")
            y.backward(grad)
        if not first:
            ctx.comm.send(x.grad.contiguous(), ctx.rank - 1, tag="pp")


def _step(model: Any, params: list[Any], optimizer: Any, config: TrainingConfig, ctx: RankContext) -> None:
    if config.mode is TrainingMode.PP:
        _pipeline_step(model, config, ctx)
    else:
        for _ in range(config.micro_batches):
            model(_input(config, ctx)).pow(2).mean().backward()
        if config.mode is TrainingMode.DP:
            _dp_all_reduce(params, ctx)
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)


def _prime(config: TrainingConfig, ctx: RankContext) -> None:
    """Run one small forward/backward of an unsharded layer before the memory baseline, so that the
    one-time costs (kernel code pages, thread pools, allocator arenas) are not counted as the step's memory."""
    import gc

    import torch

    from distcalc.bench.layers import TensorParallel, TransformerLayer

    layer = TransformerLayer(config.hidden, config.heads, config.ffn_size, TensorParallel(ctx.comm, None, 1)).to(ctx.device)
    x = torch.randn(config.micro_batch, config.seq_len, config.hidden, device=ctx.device, requires_grad=True)
    optimizer = torch.optim.SGD(layer.parameters(), lr=1e-3)  # first use imports optimizer machinery
    layer(x).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    import torch.distributed as dist

    warm = torch.ones(1 << 16, device=ctx.device)  # first collectives set up the backend's buffers
    dist.all_reduce(warm)
    dist.barrier()
    del layer, x, warm, optimizer
    gc.collect()


def run_training_task(config_data: dict[str, Any], ctx: RankContext) -> dict[str, Any]:
    """Run one warm-up and ``steps`` timed steps on this rank; return its counts, times and peak memory."""
    import torch
    import torch.distributed as dist

    config = TrainingConfig.model_validate(dict(config_data, world_size=ctx.world_size))
    cuda = ctx.device.startswith("cuda")
    _prime(config, ctx)
    memory = _PeakRss()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        base_cuda = torch.cuda.memory_allocated()
    with memory:
        model, params = _build(config, ctx)
        optimizer = torch.optim.SGD(params, lr=1e-3)
        times = []
        for step in range(config.steps + 1):
            ctx.progress(step, config.steps + 1, f"{config.mode.value} step {step}")
            ctx.comm.reset()
            dist.barrier()
            start = time.perf_counter()
            _step(model, params, optimizer, config, ctx)
            ctx.synchronize()
            if step:
                times.append(time.perf_counter() - start)
    slowest = torch.tensor(times, dtype=torch.float64, device=ctx.device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)  # a step ends when its slowest rank ends
    peak = int(torch.cuda.max_memory_allocated() - base_cuda) if cuda else memory.delta_bytes
    return {
        "rank": ctx.rank,
        "config": config.model_dump(mode="json"),
        "counts": ctx.comm.as_rows(),
        "parameters": int(sum(p.numel() for p in params)),
        "step_times_s": [float(t) for t in slowest.cpu()],
        "peak_memory_bytes": peak,
        "memory_method": "cuda max_memory_allocated" if cuda else "peak RSS minus RSS before the model",
    }
