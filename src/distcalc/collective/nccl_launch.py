"""What nccl-tests times when one host thread drives several GPUs (``-g G``): the host's launch of G kernels.

nccl-tests (github.com/NVIDIA/nccl-tests ``src/common.cu``) times ``iters`` operations issued back to back with no
synchronisation in between and divides the elapsed time by ``iters``, so it measures the steady-state period of
one operation: the slower of the GPUs' time for it and the host's time to issue it. With ``-g G`` one thread owns
G communicators and issues each operation as a group over all of them; NCCL's group end
(``src/group.cc`` ``doLaunches``, tag v2.18.5-1) then prepares and launches each communicator's kernel one after
the other on that thread (``cudaSetDevice``, ``ncclLaunchPrepare``, ``ncclLaunchKernel``, ``ncclLaunchFinish``
per communicator). The host time of one operation therefore grows with G, and once it exceeds the GPUs' time the
printed time is the host's:

    period = max(GPU time, G · host launch time per GPU)

With one process per GPU (``mpirun -np N … -g 1``) each host thread issues one kernel and the floor is one launch.

The host launch time is a property of the host (CPU, driver), not of NCCL's tuning model, so it is a measurement:

* DGX A100 (2× AMD EPYC 7742): ``NCCL_ALGO=Ring NCCL_MAX_NCHANNELS=1 all_reduce_perf -b 8 -e 128 -g G`` took
  10.0, 13.76, 16.88, 20.8, 25.2, 29.5 and 33.7 µs for G = 2 … 8 (NVIDIA/nccl-tests issue #123, 2022-12-14) —
  linear in G, 4.16–4.22 µs per GPU from G = 4 up (33.7 / 8 = 4.21 µs), where NCCL's own estimate of those
  one-channel LL all-reduces is at most 6.6 + 14 × 0.6 = 15 µs; the published 8× A100 log shipped with distcalc
  runs such sizes in 18–24 µs with one process per GPU (``mpirun -np 8 -g 1``) and in 39 µs with ``-g 8``.

No measurement of another host class was found, so elsewhere no floor is applied (:func:`host_launch_s_per_gpu`
returns None). Not modelled: what ``-g G`` adds above the floor (on the shipped A100 log, 4–25 % from 4 to
256 MiB, where the GPU time is already longer than the host's).
"""

from __future__ import annotations

from distcalc.errors import AlgorithmError

#: Host launch time per GPU driven by one thread (s), by host CPU vendor as NCCL's topology reports it
#: (``NcclSystem.cpu_vendor``): measured on a DGX A100, 2× AMD EPYC 7742 (NVIDIA/nccl-tests issue #123).
HOST_LAUNCH_S_PER_GPU = {"amd": 33.7e-6 / 8}


def host_launch_s_per_gpu(cpu_vendor: str) -> float | None:
    """The measured host launch time per GPU for ``cpu_vendor`` hosts, or None where none was measured."""
    return HOST_LAUNCH_S_PER_GPU.get(cpu_vendor)


def nccl_tests_period_s(gpu_time_s: float, gpus_per_thread: int, cpu_vendor: str) -> float:
    """The time nccl-tests prints for one operation whose GPU time is ``gpu_time_s`` when each host thread drives
    ``gpus_per_thread`` GPUs (its ``-g``) on a ``cpu_vendor`` host (module docstring)."""
    if gpus_per_thread < 1:
        raise AlgorithmError(f"gpus per thread {gpus_per_thread} must be ≥ 1 (nccl-tests -g)")
    if gpu_time_s < 0:
        raise AlgorithmError(f"GPU time {gpu_time_s!r} s must be ≥ 0")
    per_gpu = host_launch_s_per_gpu(cpu_vendor)
    if per_gpu is None:
        return gpu_time_s
    return max(gpu_time_s, gpus_per_thread * per_gpu)


__all__ = ["HOST_LAUNCH_S_PER_GPU", "host_launch_s_per_gpu", "nccl_tests_period_s"]
