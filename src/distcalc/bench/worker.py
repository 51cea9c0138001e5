"""Per-rank entry point: ``python -m distcalc.bench.worker RUN_DIR`` (started by the launcher).

The rank reads ``RUN_DIR/job.json``, joins the process group from the ``torchrun``-style environment
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``), runs the job's tasks in order
(one process group serves several tasks, so the costly start-up is paid once) and writes
``RUN_DIR/result-<rank>.json``; on an error it writes ``RUN_DIR/error-<rank>.json`` and exits 1. While it runs it
keeps ``RUN_DIR/heartbeat-<rank>`` up to date (``step total label``) so the launcher can draw progress and tell
which rank stopped making progress; on ``SIGUSR1`` it writes its Python stack to ``RUN_DIR/stack-<rank>.txt``
(``faulthandler``), which tells a rank stuck in its own code from peers blocked in a collective waiting for it.

Start-up phases are heartbeats too (``-3 starting``, ``-2 torch imported``, ``-1 joining the process group``),
and a local run (``DISTCALC_LOCAL_STORE``) joins through a store that rank 0 serves on the launcher's
loopback socket (``DISTCALC_STORE_FD``).

``DISTCALC_BENCH_FAULT=hang:RANK:STEP`` (or ``crash:RANK:STEP``) makes rank RANK hang (or raise) when it
reaches progress step STEP: a fault-injection hook for testing the launcher's failure handling.
"""

from __future__ import annotations

import datetime as _dt
import faulthandler
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from distcalc.bench.rank import ProgressFn, RankContext
from distcalc.errors import BenchError


def _write_atomic(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _fault_hook(rank: int) -> ProgressFn:
    spec = os.environ.get("DISTCALC_BENCH_FAULT", "")
    if not spec:
        return lambda done, total, label: None
    action, fault_rank, fault_step = spec.split(":")

    def hook(done: int, total: int, label: str) -> None:
        if rank == int(fault_rank) and done >= int(fault_step):
            if action == "hang":
                while True:
                    time.sleep(3600)
            raise RuntimeError(f"injected fault at step {done} ({label})")

    return hook


def choose_backend(requested: str = "auto", local_ranks: int = 1) -> str:
    """``nccl`` when CUDA is available with one GPU for each of the ``local_ranks`` ranks on this node, else
    ``gloo`` (``auto``); an explicit choice is checked (NCCL refuses two ranks on one GPU)."""
    import torch
    import torch.distributed as dist

    if requested not in ("auto", "gloo", "nccl"):
        raise BenchError(f"backend {requested!r} is not valid; valid: auto, gloo, nccl")
    cuda = torch.cuda.is_available() and dist.is_nccl_available()
    gpus = torch.cuda.device_count() if cuda else 0
    if requested == "auto":
        return "nccl" if cuda and gpus >= local_ranks else "gloo"
    if requested == "nccl" and not cuda:
        raise BenchError("backend 'nccl' needs CUDA and an NCCL build of torch; use --backend gloo on this machine")
    if requested == "nccl" and gpus < local_ranks:
        raise BenchError(f"backend 'nccl' needs one GPU per rank: {local_ranks} ranks on this node but {gpus} "
                         f"GPU(s); use --nproc {gpus} or --backend gloo")
    return requested


#: Set by the local launcher: rank 0 hosts the rendezvous store on the listening socket with this file
#: descriptor (bound to 127.0.0.1 by the launcher), the other ranks connect to MASTER_ADDR:MASTER_PORT.
STORE_FD_VARIABLE = "DISTCALC_STORE_FD"
LOCAL_STORE_VARIABLE = "DISTCALC_LOCAL_STORE"


def _local_store(rank: int, world: int, timeout: _dt.timedelta) -> Any:
    """The rendezvous store of a local run: rank 0 serves it on the launcher's loopback socket (no port is
    ever released and re-bound, so no other process can take it), the others are its clients."""
    import torch.distributed as dist

    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    if rank == 0:
        return dist.TCPStore(host, port, world, True, timeout=timeout, wait_for_workers=False,
                             master_listen_fd=int(os.environ[STORE_FD_VARIABLE]))
    return dist.TCPStore(host, port, world, False, timeout=timeout)


def init_rank(job: dict[str, Any], progress: ProgressFn, startup: ProgressFn | None = None) -> RankContext:
    """Join the process group described by the environment and build this rank's context (``startup`` is
    told each start-up phase: torch imported, joining the group)."""
    startup = startup or (lambda done, total, label: None)
    import torch
    import torch.distributed as dist

    from distcalc.bench.counting import CountingComm

    startup(-2, 0, "torch imported")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    backend = job.get("backend", "gloo")
    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    timeout = _dt.timedelta(seconds=float(job.get("collective_timeout_s", 300)))
    startup(-1, 0, "joining the process group")
    if os.environ.get(LOCAL_STORE_VARIABLE):
        dist.init_process_group(backend, store=_local_store(rank, world, timeout), rank=rank, world_size=world,
                                timeout=timeout)
    else:
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=timeout)
    return RankContext(rank, world, local_rank, backend, device, job.get("dtype", "float32"), CountingComm(), progress)


def run_tasks(job: dict[str, Any], ctx: RankContext) -> list[Any]:
    """Run every task of the job on this rank; each returns a JSON-able result."""
    results = []
    for task in job["tasks"]:
        if task["kind"] == "collectives":
            from distcalc.bench import collectives

            config = collectives.CollectivesConfig.model_validate(task["config"])
            ctx.dtype = config.dtype
            results.append(collectives.run_sweep(config, ctx))
        elif task["kind"] == "training":
            from distcalc.bench import training

            results.append(training.run_training_task(task["config"], ctx))
        else:  # pragma: no cover - the launcher builds jobs
            raise BenchError(f"unknown bench task {task['kind']!r}")
    return results


def main(argv: list[str]) -> int:
    run_dir = Path(argv[1])
    rank = int(os.environ["RANK"])
    heartbeat = run_dir / f"heartbeat-{rank}"
    fault = _fault_hook(rank)

    def progress(done: int, total: int, label: str) -> None:
        _write_atomic(heartbeat, f"{done} {total} {label}")
        fault(done, total, label)

    def startup(done: int, total: int, label: str) -> None:
        _write_atomic(heartbeat, f"{done} {total} {label}")

    startup(-3, 0, "starting")
    # On SIGUSR1 dump this rank's Python stack, so the launcher can tell a hung rank from its waiting peers.
    stack_file = (run_dir / f"stack-{rank}.txt").open("w")
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=False)
    try:
        job = json.loads((run_dir / "job.json").read_text())
        ctx = init_rank(job, progress, startup)
        progress(0, 0, "initialised")
        results = run_tasks(job, ctx)
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()
    except BaseException as error:  # noqa: BLE001 - report every failure to the launcher
        _write_atomic(
            run_dir / f"error-{rank}.json",
            json.dumps({"type": type(error).__name__, "message": str(error)[:2000],
                        "traceback": traceback.format_exc()[-4000:]}),
        )
        return 1
    _write_atomic(run_dir / f"result-{rank}.json", json.dumps(results))
    return 0


if __name__ == "__main__":  # pragma: no cover - runs in a child process
    sys.exit(main(sys.argv))
