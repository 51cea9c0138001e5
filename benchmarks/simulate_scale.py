"""Scale benchmark of the collective simulator (issue 3): prints wall-clock figures, asserts nothing.

Cases: ring AllReduce on 1024 ranks (physical ring and ideal switch) and dimension-sequential AllReduce on a
32×32 torus, 1 GiB buffer, B = 100 GB/s, α = 5 µs. Each run generates the schedule, executes it on NumPy
buffers (1 element per chunk), verifies the result, routes every transfer and times it — the whole
``distcalc.simulate.simulate`` call. Target: ≤ 2 s each on a 2-core machine. Issue 18's scale cases, direct
All-to-All on 1,024 ranks (1 M transfers, checked by provenance) and ring AllReduce on 2,048 ranks of a
switch (8.4 M transfers), target < 10 s and < 2 GiB each, in both timing modes (``--mode step``, the
synchronous steps, and ``--mode event``, chunk transfers as events per link); ``peak_MB`` is the process's
peak resident set so far (cases run smallest first; run one mode per process for its own peak).

    .venv/bin/python benchmarks/simulate_scale.py [--repeat 3] [--mode step|event]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from distcalc.simulate import simulate
from distcalc.topology import make_topology

CASES = [
    ("ring AllReduce, 1024-GPU ring", "all-reduce", "ring", 1024, None, "ring"),
    ("ring AllReduce, 1024-GPU switch", "all-reduce", "switch", 1024, None, "ring"),
    ("dim-sequential AllReduce, 32x32 torus", "all-reduce", "torus", 1024, (32, 32), "dim-sequential"),
    ("direct All-to-All, 1024-GPU switch", "all-to-all", "switch", 1024, None, "direct"),
    ("ring AllReduce, 2048-GPU switch", "all-reduce", "switch", 2048, None, "ring"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported")
    parser.add_argument("--mode", choices=["step", "event"], default="step", help="timing mode")
    args = parser.parse_args()
    print(f"mode: {args.mode}")
    print(f"cpus: {os.cpu_count()}, load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'case':40s} {'best_s':>8s} {'steps':>6s} {'transfers':>10s} {'verified':>8s} {'sim_time_ms':>12s} "
          f"{'analytic_ms':>12s} {'peak_MB':>8s}")
    for label, kind, topology, gpus, shape, algorithm in CASES:
        topo = make_topology(topology, gpus, bandwidth_bytes_per_s=100e9, latency_s=5e-6, shape=shape)
        best, result = float("inf"), None
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = simulate(kind, 1 << 30, topo, algorithm, mode=args.mode)
            best = min(best, time.perf_counter() - start)
        print(f"{label:40s} {best:8.3f} {result.steps:6d} {result.schedule.src.size:10d} {str(result.verified):>8s} "
              f"{result.time_s * 1e3:12.4f} {result.analytic.time_s * 1e3:12.4f} "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:8.0f}")


if __name__ == "__main__":
    main()
