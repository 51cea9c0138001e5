"""Benchmark the cold default ``distcalc search`` (issue 17 speed): wall time of a fresh CLI process, where
every executed schedule's plan is built, compiled and executed for the first time.

Case: Llama-3-8B on 64 H100 (DGX H100), global batch 512, sequence 8192 — the default search, which weighs
the executed schedules (zb-h2, zb-v, dualpipe, dualpipev). Each run is a new interpreter (caches cold);
prints every wall time, the best and the median, and the machine's load average (the 2-core development
machine is shared, so compare figures taken under similar load).

    PYTHONPATH=src .venv/bin/python benchmarks/cold_search.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

COMMAND = ["search", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "64",
           "--global-batch", "512", "--seq-len", "8192"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    walls_s = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "distcalc.cli", *COMMAND], check=True, stdout=subprocess.DEVNULL)
        walls_s.append(time.perf_counter() - start)
    print("cold CLI search wall s:", " ".join(f"{w:.2f}" for w in walls_s))
    print(f"best {min(walls_s):.2f} s, median {statistics.median(walls_s):.2f} s, "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
