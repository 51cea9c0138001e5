"""Speed of one ``analyze`` evaluation in-process, and of the CLI's start-up.

* ``analyze``: Llama-3-70B on 64 H100 (8 DGX H100), TP 8, PP 2, DP 4, the built-in example's shape;
  median of ``--repeat`` calls after a warm-up call (presets loaded, caches filled). Printed with the ratio
  against the 4 ms that issue "One schema, typed terms…" measured before any work on it, and with the
  fastest call and the mean CPU time per call (the steadier figures on a shared machine).
* start-up: ``distcalc --help``, ``distcalc analyze --help`` and ``distcalc analyze`` (the built-in example:
  imports, one evaluation, the tables) wall time and the child's CPU time (medians of ``--runs``
  subprocess runs; the CPU time is the steadier figure on a shared machine), against the import time of
  the runtime dependencies alone (numpy, pydantic, typer, rich, yaml) in a fresh interpreter — the issue's
  target is <= 1.3x. A second ratio is printed against those dependencies *as distcalc uses them*:
  ``import pydantic`` defers its model machinery until ``pydantic.BaseModel`` is first used, and ``import
  rich`` loads neither ``rich.console`` nor ``rich.table``; the command line pays for both whatever distcalc
  itself does, so the difference between the two ratios is dependency time, not distcalc's.

    .venv/bin/python benchmarks/analyze_speed.py [--repeat 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from distcalc.analyze import analyze
from distcalc.parallel import ParallelConfig

BEFORE_MS = 4.0  # the measurement of one analyze call before the restructuring
DISTCALC = str(Path(sys.executable).with_name("distcalc"))
DEPENDENCIES = "import numpy, pydantic, typer, rich, yaml"
DEPENDENCIES_AS_USED = (DEPENDENCIES + ", rich.console, rich.table, rich.panel\n"
                        "from pydantic import BaseModel\nclass First(BaseModel):\n    x: int = 1")


def analyze_ms(repeat: int) -> float:
    return analyze_times_ms(repeat)[0]


def analyze_times_ms(repeat: int) -> tuple[float, float, float]:
    """(median wall, fastest wall, mean CPU) milliseconds of one call. On a machine that other jobs share the
    median wall time counts the waits for a core; the fastest call and the CPU time do not."""
    config = ParallelConfig(gpus=64, tp=8, pp=2, micro_batch=1, global_batch=256, seq_len=8192,
                            sequence_parallel=True, distributed_optimizer=True)
    analyze("llama3-70b", "dgx-h100", config)
    samples = []
    cpu_start = time.process_time()
    for _ in range(repeat):
        start = time.perf_counter()
        analyze("llama3-70b", "dgx-h100", config)
        samples.append(time.perf_counter() - start)
    cpu = (time.process_time() - cpu_start) / repeat
    return 1e3 * statistics.median(samples), 1e3 * min(samples), 1e3 * cpu


def startup_s(argv: list[str], runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system, from the child's rusage) of ``runs`` runs. CPU
    time is the steadier figure on a machine that other jobs share; wall time is what a user waits."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5, help="subprocess runs per start-up figure")
    args = parser.parse_args()
    ms, fastest, cpu = analyze_times_ms(args.repeat)
    print(f"analyze (Llama-3-70B, 64 H100): {ms:.3f} ms per call (median of {args.repeat}); "
          f"{BEFORE_MS / ms:.2f}x vs {BEFORE_MS:.1f} ms before; target <= 0.5 ms")
    print(f"  fastest call {fastest:.3f} ms ({BEFORE_MS / fastest:.2f}x); CPU time {cpu:.3f} ms per call "
          f"({BEFORE_MS / cpu:.2f}x)")
    print(f"start-up, median of {args.runs} runs, wall s / CPU s:")
    base = startup_s([sys.executable, "-c", DEPENDENCIES], args.runs)
    used = startup_s([sys.executable, "-c", DEPENDENCIES_AS_USED], args.runs)
    print(f"  dependencies alone ({DEPENDENCIES}): {base[0]:.3f} / {base[1]:.3f}")
    print(f"  dependencies as used (+ pydantic.BaseModel's first model, rich.console/table/panel): "
          f"{used[0]:.3f} / {used[1]:.3f}")
    for argv in ([DISTCALC, "--help"], [DISTCALC, "analyze", "--help"], [DISTCALC, "analyze"]):
        wall, cpu = startup_s(argv, args.runs)
        print(f"  {' '.join(Path(argv[0]).name.split() + argv[1:])}: {wall:.3f} / {cpu:.3f}; ratio to the "
              f"dependencies {wall / base[0]:.2f} wall, {cpu / base[1]:.2f} CPU (target <= 1.30); to the "
              f"dependencies as used {wall / used[0]:.2f} wall, {cpu / used[1]:.2f} CPU")


if __name__ == "__main__":
    main()
