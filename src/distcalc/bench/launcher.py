"""Start the ranks of a bench run and watch them.

Two ways to run:

- **local spawn** (``--nproc N``): :func:`launch_local` starts N ``python -m distcalc.bench.worker`` processes
  on this host with the ``torchrun`` environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
  ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR=127.0.0.1``, ``MASTER_PORT``), like ``torchrun --standalone`` does.
  Everything listens on loopback only: the launcher binds the rendezvous socket to ``127.0.0.1`` on a port
  the OS picks and hands the *bound, listening socket* to rank 0, which serves the store on it (no port is
  released and re-bound, so no other process can race for it); gloo/NCCL use the ``lo`` interface
  (``GLOO_SOCKET_IFNAME``/``NCCL_SOCKET_IFNAME``, unless set);
- **under torchrun** (any number of nodes): :func:`torchrun_environment` detects the variables and
  :func:`run_in_this_process` runs the job in the current process as one rank.

Failure handling (local spawn): the launcher polls the ranks. A rank that exits non-zero, or a run in which
no rank makes progress for ``timeout_s`` seconds (``startup_timeout_s`` before every rank has joined; the
start-up reports its phases — python up, torch imported, joining the group — and a starting rank's CPU time
counts as progress, so a slow ``import torch`` is not a hang but a stopped or blocked rank is), ends the
whole run: the remaining ranks are terminated (SIGTERM and SIGCONT, then SIGKILL after a grace period), the
run directory is removed, and :class:`~distcalc.errors.BenchError` names the failed rank (the one killed by
a signal or failing on its own rather than because a peer vanished; for a hang, a rank the kernel reports
*stopped* (SIGSTOP, state ``T``), else the rank(s) furthest behind that are not waiting in a collective).
SIGTERM or SIGINT to the launcher stops the ranks and removes the run directory the same way. Each child
also asks the kernel to kill it if the launcher itself dies (Linux ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from distcalc.bench.rank import ProgressFn
from distcalc.bench.worker import LOCAL_STORE_VARIABLE, STORE_FD_VARIABLE
from distcalc.errors import BenchError

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_PEER_FAILURE_HINTS = ("connection closed", "connection reset", "broken pipe", "peer", "timed out", "timeout",
                       "socket", "gloo", "nccl", "terminated")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (the OS picks it; racy if it is bound later: local
    runs use :func:`loopback_listener` instead)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def loopback_listener() -> socket.socket:
    """A TCP socket bound to 127.0.0.1 on a port the OS picks, already listening: the rendezvous store's."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    return sock


def torchrun_environment() -> dict[str, int] | None:
    """``{rank, world_size, local_rank, local_world_size}`` when launched by torchrun, else None."""
    if not all(name in os.environ for name in TORCHRUN_VARIABLES):
        return None
    world = int(os.environ["WORLD_SIZE"])
    return {
        "rank": int(os.environ["RANK"]),
        "world_size": world,
        "local_rank": int(os.environ.get("LOCAL_RANK", os.environ["RANK"])),
        "local_world_size": int(os.environ.get("LOCAL_WORLD_SIZE", world)),
    }


def run_in_this_process(job: dict[str, Any], progress: ProgressFn | None = None) -> tuple[int, list[Any]]:
    """Run ``job`` as one rank of a torchrun job (torchrun itself handles failed ranks).

    Returns ``(rank, results)`` where ``results`` holds every rank's task results (index = rank), gathered
    with ``all_gather_object`` so that rank 0 can report them."""
    import torch.distributed as dist

    from distcalc.bench.worker import init_rank, run_tasks

    ctx = init_rank(job, progress or (lambda done, total, label: None))
    try:
        mine = run_tasks(job, ctx)
        everyone: list[Any] = [None] * ctx.world_size
        dist.all_gather_object(everyone, mine)
    finally:
        dist.destroy_process_group()
    return ctx.rank, everyone


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


@dataclass
class _Rank:
    rank: int
    process: subprocess.Popen
    log_path: Path

    def heartbeat(self, run_dir: Path) -> tuple[int, int, str]:
        try:
            step, total, label = (run_dir / f"heartbeat-{self.rank}").read_text().split(" ", 2)
            return int(step), int(total), label
        except (OSError, ValueError):
            return -4, 0, "not started"


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _error_of(run_dir: Path, rank: int) -> dict[str, str] | None:
    try:
        return json.loads((run_dir / f"error-{rank}.json").read_text())
    except (OSError, ValueError):
        return None


def _failure_message(ranks: list[_Rank], run_dir: Path) -> str:
    """Name the rank that failed first on its own (see the module docstring) and what it was doing."""
    exited = [(r, r.process.returncode) for r in ranks if r.process.returncode not in (None, 0)]
    errors = {r.rank: _error_of(run_dir, r.rank) for r, _ in exited}

    def own_failure(item: tuple[_Rank, int]) -> int:
        rank, code = item
        error = errors[rank.rank]
        if code < 0 or error is None:
            return 0  # killed, or died without a Python error: the primary failure
        text = (error["type"] + " " + error["message"]).lower()
        return 2 if any(hint in text for hint in _PEER_FAILURE_HINTS) else 1

    culprit, code = sorted(exited, key=own_failure)[0]
    step, total, label = culprit.heartbeat(run_dir)
    where = f" at step {step}/{total} ({label})" if step >= 0 else " during start-up"
    message = f"rank {culprit.rank} (pid {culprit.process.pid}) {_describe_exit(code)}{where}"
    error = errors[culprit.rank]
    if error:
        message += f": {error['type']}: {error['message'].splitlines()[0] if error['message'] else ''}"
    others = [r.rank for r in ranks if r is not culprit]
    return f"bench run failed: {message}; stopped the other ranks {others}"


def _waiting_in_collective(stack: str) -> bool:
    """A dumped stack whose innermost frames are in torch.distributed is blocked waiting for its peers."""
    return "torch/distributed" in stack.replace("\\", "/")


def _stacks(ranks: list[_Rank], run_dir: Path) -> dict[int, str]:
    """Ask every live rank for its Python stack (SIGUSR1 → faulthandler, see the worker) and read them."""
    for rank in ranks:
        if rank.process.poll() is None:
            rank.process.send_signal(signal.SIGUSR1)
    time.sleep(0.5)
    out = {}
    for rank in ranks:
        try:
            out[rank.rank] = (run_dir / f"stack-{rank.rank}.txt").read_text()
        except OSError:
            out[rank.rank] = ""
    return out


def process_state(pid: int) -> str:
    """The kernel's one-letter state of ``pid`` (``R``, ``S``, ``T`` stopped, ``Z`` …; ``?`` if unknown)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return text[text.rindex(")") + 2]
    except (OSError, ValueError, IndexError):
        return "?"


def cpu_ticks(pid: int) -> int:
    """User + system CPU time of ``pid`` in clock ticks (``/proc/<pid>/stat``; -1 if unknown)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return -1


def _stopped_message(ranks: list[_Rank], run_dir: Path, stopped: list[_Rank], waited_s: float) -> str:
    step, total, label = stopped[0].heartbeat(run_dir)
    names = ", ".join(f"{r.rank} (pid {r.process.pid})" for r in stopped)
    noun = "rank" if len(stopped) == 1 else "ranks"
    where = f"at step {step}/{total}: {label}" if step >= 0 else f"during start-up: {label}"
    waiting = [r.rank for r in ranks if r not in stopped]
    others = f"; ranks {waiting} were waiting for it" if waiting else ""
    return (f"bench run failed: {noun} {names} {'is' if len(stopped) == 1 else 'are'} stopped (SIGSTOP, state T) "
            f"and made no progress for {waited_s:.0f} s ({where}){others}; stopped all {len(ranks)} ranks (timeout)")


def _hang_message(ranks: list[_Rank], run_dir: Path, waited_s: float) -> str:
    """Name the hung rank(s): a rank the kernel reports stopped (SIGSTOP); else, among the ranks furthest
    behind, those NOT blocked inside a collective (their peers are, waiting for them); if every rank is
    inside a collective, all of the furthest behind."""
    stopped = [r for r in ranks if process_state(r.process.pid) in ("T", "t")]
    if stopped:
        return _stopped_message(ranks, run_dir, stopped, waited_s)
    beats = {r.rank: r.heartbeat(run_dir) for r in ranks}
    behind = min(step for step, _, _ in beats.values())
    stacks = _stacks(ranks, run_dir)
    candidates = [rank for rank, (step, _, _) in beats.items() if step == behind]
    outside = [rank for rank in candidates if stacks.get(rank) and not _waiting_in_collective(stacks[rank])]
    stuck = outside or candidates
    waiting = [rank for rank in beats if rank not in stuck]
    step, total, label = beats[stuck[0]]
    names = ", ".join(str(rank) for rank in stuck)
    noun = "rank" if len(stuck) == 1 else "ranks"
    where = "outside any collective" if outside else "inside a collective"
    others = f"; ranks {waiting} were waiting for it in a collective" if outside and waiting else ""
    at = f"step {step}/{total}" if step >= 0 else "start-up"
    return (f"bench run failed: {noun} {names} made no progress for {waited_s:.0f} s "
            f"(stuck at {at}: {label}, {where}){others}; stopped all {len(ranks)} ranks (timeout)")


def _stop(ranks: list[_Rank], grace_s: float = 3.0) -> None:
    for rank in ranks:
        if rank.process.poll() is None:
            rank.process.terminate()
            rank.process.send_signal(signal.SIGCONT)  # a stopped rank acts on SIGTERM only once continued
    deadline = time.monotonic() + grace_s
    for rank in ranks:
        try:
            rank.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            rank.process.kill()
            rank.process.wait()


def launch_local(
    job: dict[str, Any],
    nproc: int,
    *,
    timeout_s: float = 120.0,
    startup_timeout_s: float | None = None,
    progress: ProgressFn | None = None,
    poll_s: float = 0.05,
) -> list[Any]:
    """Run ``job`` on ``nproc`` local ranks; return each rank's list of task results (index = rank).

    Raises :class:`BenchError` naming the failed rank when a rank dies or the run hangs (module docstring).
    """
    if nproc < 1:
        raise BenchError(f"--nproc {nproc} is not valid: need at least 1 process")
    startup_timeout_s = max(timeout_s, 60.0) if startup_timeout_s is None else startup_timeout_s
    job = dict(job, collective_timeout_s=job.get("collective_timeout_s", timeout_s + startup_timeout_s))
    ranks: list[_Rank] = []
    run_dir: Path | None = None
    listener = loopback_listener()
    with _interruptible():
        try:
            run_dir = Path(tempfile.mkdtemp(prefix="distcalc-bench-"))
            (run_dir / "job.json").write_text(json.dumps(job))
            base_env = _rank_environment(nproc, listener)
            for rank in range(nproc):
                ranks.append(_start_rank(rank, run_dir, base_env, listener))
            _watch(ranks, run_dir, timeout_s, startup_timeout_s, progress, poll_s)
            return [json.loads((run_dir / f"result-{r.rank}.json").read_text()) for r in ranks]
        finally:
            _stop(ranks)
            listener.close()
            if run_dir is not None:
                shutil.rmtree(run_dir, ignore_errors=True)


def _rank_environment(nproc: int, listener: socket.socket) -> dict[str, str]:
    """The torchrun-style environment shared by the local ranks (loopback only, module docstring)."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(listener.getsockname()[1]),
               WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc), **{LOCAL_STORE_VARIABLE: "1"})
    env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun does for nproc > 1
    if Path("/sys/class/net/lo").exists():
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        env.setdefault("NCCL_SOCKET_IFNAME", "lo")
    return env


def _start_rank(rank: int, run_dir: Path, base_env: dict[str, str], listener: socket.socket) -> _Rank:
    log_path = run_dir / f"log-{rank}.txt"
    env = dict(base_env, RANK=str(rank), LOCAL_RANK=str(rank))
    fds: tuple[int, ...] = ()
    if rank == 0:  # rank 0 serves the rendezvous store on the launcher's bound socket
        env[STORE_FD_VARIABLE], fds = str(listener.fileno()), (listener.fileno(),)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "distcalc.bench.worker", str(run_dir)], env=env, pass_fds=fds,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    return _Rank(rank, process, log_path)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """While a local run is under way, SIGTERM (like SIGINT) unwinds the launcher through its clean-up:
    the ranks are stopped and the run directory removed; the run ends with :class:`BenchError`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the clean-up itself must not be interrupted
        raise BenchError(f"bench run interrupted by {signal.Signals(signum).name}: stopped the ranks and removed "
                         "the run directory")

    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _watch(ranks: list[_Rank], run_dir: Path, timeout_s: float, startup_timeout_s: float,
           progress: ProgressFn | None, poll_s: float) -> None:
    last_state: tuple[int, ...] = ()
    last_change = time.monotonic()
    while True:
        codes = [r.process.poll() for r in ranks]
        if all(code == 0 for code in codes):
            return
        if any(code not in (None, 0) for code in codes):
            time.sleep(0.5)  # let the other ranks notice and report, then name the first real failure
            for r in ranks:
                r.process.poll()
            raise BenchError(_failure_message(ranks, run_dir))
        beats = [r.heartbeat(run_dir) for r in ranks]
        if progress is not None and beats[0][0] >= 0 and beats[0][1] > 0:
            progress(*beats[0])
        state = tuple(step for step, _, _ in beats)
        # During start-up (importing torch takes seconds without a heartbeat) CPU time spent is progress too.
        state += tuple(cpu_ticks(r.process.pid) for r, (step, _, _) in zip(ranks, beats) if step < 0)
        now = time.monotonic()
        if state != last_state:
            last_state, last_change = state, now
        limit = timeout_s if min(step for step, _, _ in beats) >= 0 else startup_timeout_s
        if now - last_change > limit:
            raise BenchError(_hang_message(ranks, run_dir, now - last_change))
        time.sleep(poll_s)
