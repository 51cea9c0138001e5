"""``distcalc bench collectives|gemm|training``: options, runs and the progress bar.

The measurements live in :mod:`distcalc.bench`, the fits in :mod:`distcalc.calibration`, the tables in
:mod:`distcalc.render.tables.bench` and the figure in :mod:`distcalc.render.plots.bench`.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated, Any, Iterator, Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from distcalc.cli.checks import (
    MAX_LOCAL_RANKS, MAX_REPEATS, MAX_TIMEOUT_S, check_float, check_host_memory, check_ranges,
)
from distcalc.cli.common import JsonOption, console, emit_json, error_console, handle_errors
from distcalc.errors import BenchError
from distcalc.inputs import excerpt
from distcalc.outputs import PLOT_SUFFIXES, check_output_path
from distcalc.units import parse_size_range
from distcalc.render.tables.bench import print_bench_collectives, print_bench_gemm, print_bench_training

bench_app = typer.Typer(help="Measure real collectives, GEMMs and training steps with torch.distributed.",
                        no_args_is_help=True)

OutputOption = Annotated[Optional[str], typer.Option(help="result file (default bench-<theme>-<host>-<date>.json)")]
NprocOption = Annotated[Optional[int], typer.Option(help="spawn N local ranks (default: torchrun's, else 2)")]
TimeoutOption = Annotated[float, typer.Option(help="seconds without progress (start-up included) before a run is "
                                                    "declared hung")]
FfnOption = Annotated[Optional[int], typer.Option(help="MLP width (default 4h)")]
BackendOption = Annotated[str, typer.Option(help="auto (nccl with CUDA, else gloo), gloo or nccl")]


@contextlib.contextmanager
def _progress(enabled: bool, label: str) -> Iterator[Any]:
    """A rich progress bar on stderr (terminal only); yields a ``(done, total, what)`` callback."""
    if not enabled or not error_console.is_terminal:
        yield None
        return
    with Progress(TextColumn(label), BarColumn(), TextColumn("{task.completed}/{task.total} {task.description}"),
                  TimeElapsedColumn(), console=error_console, transient=True) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=what)

        yield update


def _run(job: dict[str, Any], nproc: Optional[int], timeout: float, label: str,
         show_progress: bool) -> Optional[list[Any]]:
    """Run ``job`` on local ranks or as part of a torchrun job; every rank's task results on the reporting
    process, None on the other torchrun ranks (they print nothing)."""
    from distcalc.bench.launcher import launch_local, run_in_this_process, torchrun_environment
    from distcalc.bench.worker import choose_backend

    environment = torchrun_environment()
    local_ranks = nproc or (environment["local_world_size"] if environment is not None else 2)
    job["backend"] = choose_backend(job.get("backend", "auto"), local_ranks)
    if environment is not None and nproc is None:
        with _progress(show_progress and environment["rank"] == 0, label) as progress:
            rank, results = run_in_this_process(job, progress)
        return results if rank == 0 else None
    with _progress(show_progress, label) as progress:
        return launch_local(job, nproc or 2, timeout_s=timeout, startup_timeout_s=timeout, progress=progress)


#: Largest width / layer count / tokens of the models the bench builds (2^16 is five times GPT-3 175B's
#: h = 12,288; larger shapes do not fit one host's memory anyway).
MAX_BENCH_WIDTH = 1 << 16
MAX_BENCH_LAYERS = 1 << 10
MAX_BENCH_TOKENS = 1 << 20


def _check_run(nproc: Optional[int], timeout: float, warmup: int = 0, trials: int = 1) -> None:
    """Ranges of the options every bench run shares, checked before any process starts."""
    check_ranges([("--nproc", nproc, 1, MAX_LOCAL_RANKS), ("--warmup", warmup, 0, MAX_REPEATS),
                  ("--trials", trials, 1, MAX_REPEATS)])
    check_float(timeout, "--timeout", 0.0, MAX_TIMEOUT_S, low_open=True)


def _result_path(theme: str, output: Optional[str]) -> str:
    from distcalc.bench.results import result_path

    return str(result_path(theme, output))


def _write(payload: dict[str, Any], output: Optional[str]) -> str:
    from distcalc.bench.results import write_result_file

    return str(write_result_file(payload, output))


@bench_app.command("collectives")
@handle_errors
def collectives_command(
    nproc: NprocOption = None,
    sizes: Annotated[str, typer.Option(help="size sweep LO..HI (powers of two), e.g. 1KiB..4MiB")] = "1KiB..4MiB",
    collectives: Annotated[Optional[str], typer.Option(help="comma-separated subset (default all seven)")] = None,
    warmup: Annotated[int, typer.Option(min=0, help="untimed calls per size (nccl-tests -w)")] = 5,
    trials: Annotated[int, typer.Option(min=1, help="timed calls per size (nccl-tests -n)")] = 20,
    backend: BackendOption = "auto",
    gpus_per_node: Annotated[Optional[int], typer.Option(help="ranks per node: adds the inter-node tier")] = None,
    timeout: TimeoutOption = 120.0,
    output: OutputOption = None,
    plot: Annotated[Optional[str], typer.Option(help="write busbw vs size to this PNG")] = None,
    json_output: JsonOption = False,
    nccl_tests_layout: Annotated[bool, typer.Option("--nccl-tests-layout", help="print the results in "
                                                    "nccl-tests' column layout (calibrate reads it back)")] = False,
) -> None:
    """Measure AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, All-to-All and Send/Recv (nccl-tests
    conventions: warm-up, trials, median and p99, algbw and busbw)."""
    from distcalc.bench.collectives import BenchCollective, CollectivesConfig
    from distcalc.bench.results import make_result_file

    try:
        chosen = [BenchCollective(c.strip()) for c in collectives.split(",")] if collectives else list(BenchCollective)
    except ValueError:
        valid = ", ".join(c.value for c in BenchCollective)
        raise BenchError(f"--collectives {excerpt(collectives)}: valid names are {valid}") from None
    _check_run(nproc, timeout, warmup, trials)
    if nproc is not None and nproc < 2:
        raise BenchError(f"--nproc {nproc}: collectives need at least 2 ranks")
    check_ranges([("--gpus-per-node", gpus_per_node, 1, nproc or 2)])
    output = _result_path("collectives", output)
    if plot:
        check_output_path(plot, "--plot", PLOT_SUFFIXES, BenchError)
    config = CollectivesConfig(sizes=parse_size_range(sizes), collectives=chosen, warmup=warmup, trials=trials,
                               gpus_per_node=gpus_per_node)
    # input + output buffers of the largest size (an All-Gather output, an All-to-All in and out) and a copy
    check_host_memory(3 * max(config.sizes), f"--sizes {excerpt(sizes)}", nproc or 2)
    job = {"backend": backend, "tasks": [{"kind": "collectives", "config": config.model_dump(mode="json")}]}
    results = _run(job, nproc, timeout, "collectives", not json_output)
    if results is None:
        return
    rows = results[0][0]
    device = "cuda" if job["backend"] == "nccl" else "cpu"
    payload = make_result_file("collectives", rows, dict(config.model_dump(mode="json"), sizes_option=sizes),
                               backend=job["backend"], world_size=len(results), device=device)
    payload["output_file"] = _write(payload, output)
    if plot:
        from distcalc.render.plots.bench import plot_busbw

        payload["plot_file"] = str(plot_busbw(rows, plot))
    if json_output:
        emit_json(payload)
        return
    if nccl_tests_layout:
        from distcalc.bench.nccl_tests_layout import nccl_tests_text

        print(nccl_tests_text(payload), end="")
        return
    print_bench_collectives(payload, rows)
    console.print(f"wrote {payload['output_file']}" + (f" and {payload['plot_file']}" if plot else ""))


@bench_app.command("training")
@handle_errors
def training_command(
    mode: Annotated[str, typer.Option(help="parallel dimension the ranks form: dp, tp or pp")],
    nproc: NprocOption = None,
    hidden: Annotated[int, typer.Option(help="h")] = 64,
    heads: Annotated[int, typer.Option(help="attention heads")] = 4,
    ffn: FfnOption = None,
    layers: Annotated[int, typer.Option(help="transformer layers (all stages)")] = 4,
    micro_batch: Annotated[int, typer.Option(help="sequences per micro-batch")] = 2,
    seq_len: Annotated[int, typer.Option(help="tokens per sequence")] = 32,
    micro_batches: Annotated[int, typer.Option(help="micro-batches per step")] = 2,
    steps: Annotated[int, typer.Option(min=1, help="timed steps (after one warm-up)")] = 3,
    sequence_parallel: Annotated[bool, typer.Option(help="tp: Megatron sequence parallelism")] = False,
    backend: BackendOption = "auto",
    calibration: Annotated[Optional[str], typer.Option(help="calibration file for the predicted times")] = None,
    timeout: TimeoutOption = 120.0,
    output: OutputOption = None,
    json_output: JsonOption = False,
) -> None:
    """Run a real DP / TP / PP training step, count every collective and compare with distcalc's model."""
    from distcalc.bench.prediction import compare_training, predict_step
    from distcalc.bench.results import make_result_file
    from distcalc.bench.training import TrainingConfig

    _check_run(nproc, timeout, 0, steps)
    check_ranges([("--hidden", hidden, 1, MAX_BENCH_WIDTH), ("--heads", heads, 1, MAX_BENCH_WIDTH),
                  ("--ffn", ffn, 1, MAX_BENCH_WIDTH), ("--layers", layers, 1, MAX_BENCH_LAYERS),
                  ("--micro-batch", micro_batch, 1, MAX_BENCH_TOKENS), ("--seq-len", seq_len, 1, MAX_BENCH_TOKENS),
                  ("--micro-batches", micro_batches, 1, MAX_BENCH_LAYERS)])
    if output:
        output = _result_path("training", output)
    if calibration:  # read now: a bad file must not cost the run
        from distcalc.calibration import load_calibration

        load_calibration(calibration)
    world = nproc or 2
    config = TrainingConfig(mode=mode, hidden=hidden, heads=heads, ffn=ffn, layers=layers, micro_batch=micro_batch,
                            seq_len=seq_len, micro_batches=micro_batches, steps=steps,
                            sequence_parallel=sequence_parallel, world_size=world)
    from distcalc.bench.prediction import predicted_memory_bytes

    check_host_memory(predicted_memory_bytes(config), f"bench training --mode {mode} (weights, gradients, "
                      "activations)", world)
    job = {"backend": backend, "tasks": [{"kind": "training", "config": config.model_dump(mode="json")}]}
    results = _run(job, nproc, timeout, f"training {mode}", not json_output)
    if results is None:
        return
    config = config.model_copy(update={"world_size": len(results)})
    comparison = compare_training(config, [rank[0] for rank in results])
    comparison.update(predict_step(config, comparison, job["backend"], calibration))
    device = "cuda" if job["backend"] == "nccl" else "cpu"
    payload = make_result_file("training", [comparison], config.model_dump(mode="json"), backend=job["backend"],
                               world_size=len(results), device=device, extra=comparison)
    payload["output_file"] = _write(payload, output) if output else None
    if json_output:
        emit_json(payload)
    else:
        print_bench_training(comparison, payload["output_file"])
    if not comparison["match"]:
        typer.echo("error: counted bytes differ from distcalc's prediction (see counts/predicted_messages)", err=True)
        raise typer.Exit(1)


@bench_app.command("gemm")
@handle_errors
def gemm_command(
    model: Annotated[Optional[str], typer.Option(help="model preset or config.json for the layer shapes")] = None,
    hidden: Annotated[int, typer.Option(help="h (without --model)")] = 1024,
    ffn: FfnOption = None,
    heads: Annotated[int, typer.Option(help="attention heads (without --model)")] = 16,
    vocab: Annotated[int, typer.Option(help="vocabulary for the logits GEMM (0 = skip)")] = 0,
    tp: Annotated[int, typer.Option(help="tensor-parallel degree dividing the split dimension")] = 1,
    tokens: Annotated[str, typer.Option(help="b·s rows to sweep, LO..HI powers of two")] = "128..1024",
    dtype: Annotated[str, typer.Option(help="float32, bfloat16 or float16")] = "float32",
    warmup: Annotated[int, typer.Option(min=0, help="untimed calls per shape")] = 10,
    trials: Annotated[int, typer.Option(min=1, help="timed calls per shape")] = 20,
    device: Annotated[Optional[str], typer.Option(help="cpu or cuda (default: cuda if available)")] = None,
    peak_flops: Annotated[Optional[str], typer.Option(help="device peak FLOP/s for the efficiency fit, e.g. 3e11")] = None,
    gpu: Annotated[Optional[str], typer.Option(help="GPU preset whose peak/SM/HBM constants the fit uses")] = None,
    output: OutputOption = None,
    json_output: JsonOption = False,
) -> None:
    """Measure matmul throughput over a transformer layer's GEMM shapes (QKV, out-proj, MLP up/down, logits)."""
    check_ranges([("--hidden", hidden, 1, MAX_BENCH_WIDTH), ("--ffn", ffn, 1, MAX_BENCH_WIDTH * 4),
                  ("--heads", heads, 1, MAX_BENCH_WIDTH), ("--vocab", vocab, 0, MAX_BENCH_TOKENS),
                  ("--tp", tp, 1, MAX_LOCAL_RANKS), ("--warmup", warmup, 0, MAX_REPEATS),
                  ("--trials", trials, 1, MAX_REPEATS)])
    if device is not None and not _valid_device(device):
        raise BenchError(f"--device {excerpt(device)} is not valid; valid: cpu, cuda or cuda:N")
    output = _result_path("gemm", output)
    import torch

    from distcalc.bench.gemm import GemmConfig, layer_shapes, measure_copy_bandwidth, run_gemm_sweep
    from distcalc.bench.results import make_result_file

    try:
        peak = float(peak_flops) if peak_flops else None
        check_float(peak, "--peak-flops", 0.0, 1e21, low_open=True)
    except ValueError:
        raise BenchError(f"--peak-flops {excerpt(peak_flops)} is not a positive number of FLOP/s such as "
                         "3e11") from None
    shape: dict[str, Any] = {"hidden": hidden, "ffn": ffn or 4 * hidden, "heads": heads, "vocab": vocab}
    if model:
        from distcalc.model import load_model

        spec = load_model(model)
        shape = {"hidden": spec.hidden_size, "ffn": spec.intermediate_size, "heads": spec.num_attention_heads,
                 "kv_heads": spec.kv_heads, "head_dim": spec.head_size, "vocab": vocab or spec.vocab_size,
                 "gated": spec.is_gated, "model": spec.name}
    if dtype not in ("float32", "bfloat16", "float16", "float64"):
        raise BenchError(f"--dtype {excerpt(dtype)} is not valid; valid: float32, bfloat16, float16, float64")
    config = GemmConfig(tokens=[int(t) for t in parse_size_range(tokens)], tp=tp, dtype=dtype, warmup=warmup,
                        trials=trials, **shape)
    element = {"float64": 8, "float32": 4}.get(dtype, 2)
    largest = max((m * k + k * n + m * n) * element for name, m, n, k in layer_shapes(config, max(config.tokens)))
    check_host_memory(largest, f"bench gemm --tokens {excerpt(tokens)} (largest GEMM operands)")
    with _progress(not json_output, "gemm") as progress:
        rows, used = run_gemm_sweep(config, device, progress)
    record = dict(config.model_dump(mode="json"), threads=torch.get_num_threads(), gpu_preset=gpu,
                  peak_flops_per_s=peak,
                  memory_bandwidth_bytes_per_s=measure_copy_bandwidth(used))
    payload = make_result_file("gemm", rows, record, backend=None, world_size=1, device=used)
    payload["output_file"] = _write(payload, output)
    if json_output:
        emit_json(payload)
        return
    print_bench_gemm(rows, used, dtype)
    console.print(f"wrote {payload['output_file']}")


def _valid_device(device: str) -> bool:
    """``cpu``, ``cuda`` or ``cuda:N`` (what the GEMM sweep can run on)."""
    name, _, index = device.partition(":")
    return (name == "cpu" and not index) or (name == "cuda" and (not _ or index.isdigit()))


def register(app: typer.Typer) -> None:
    """Add ``bench`` (collectives, gemm, training); ``calibrate`` lives in :mod:`distcalc.cli.calibrate_cmd`."""
    app.add_typer(bench_app, name="bench")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(bench_app())
