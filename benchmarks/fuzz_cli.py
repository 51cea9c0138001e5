"""Fuzz the whole CLI with generated argument vectors and print what broke (issue 19): asserts nothing.

Draws ``--vectors`` command lines (default 2,000, seed 20250119: not the seed of the test suite's fuzz test)
from the space of ``tests/cli_fuzz.py`` — every command, every input file kind (model YAML/JSON, Hugging
Face config.json, calibration, bench results), valid values and known-invalid ones — runs each in-process
under a time bound and prints the counts: tracebacks, hangs, bad JSON values (NaN/inf, negative or null
quantities), silent accepts (a known-invalid value and exit 0), exit codes other than 0/2 or without a
one-line ``error:``. ``--bench-runs`` also lets a share of ``bench`` vectors run for real (local gloo ranks).

    .venv/bin/python benchmarks/fuzz_cli.py [--vectors 2000] [--seed 20250119] [--bench-runs 0.02]
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from cli_fuzz import COMMANDS, make_vector, run_vector  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20250119)
    parser.add_argument("--time-bound", type=float, default=60.0, help="seconds per vector before it is a hang")
    parser.add_argument("--bench-runs", type=float, default=0.02, help="share of vectors that run a real bench")
    parser.add_argument("--show", type=int, default=5, help="failing vectors printed per kind")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    commands = [name for name in COMMANDS if name != "bench-run"]
    counts: collections.Counter[str] = collections.Counter()
    per_command: collections.Counter[str] = collections.Counter()
    failures: dict[str, list[str]] = collections.defaultdict(list)
    slowest = (0.0, "")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="distcalc-fuzz-") as folder:
        os.chdir(folder)  # default output names (bench, calibrate) land here
        for index in range(args.vectors):
            pool = ["bench-run"] if rng.random() < args.bench_runs else commands
            vector = make_vector(rng.choice, Path(folder), index, pool)
            outcome = run_vector(vector, args.time_bound)
            per_command[" ".join(vector.args[:2]) if vector.args[0] == "bench" else vector.args[0]] += 1
            counts[f"exit {outcome.exit_code}" if outcome.exit_code in (0, 2, 3) else "exit other"] += 1
            counts["known-invalid vectors"] += vector.invalid
            if outcome.elapsed_s > slowest[0]:
                slowest = (outcome.elapsed_s, " ".join(vector.args))
            for kind, hit in (("tracebacks", outcome.traceback), ("hangs", outcome.hang),
                              ("bad JSON values", bool(outcome.bad_json)), ("silent accepts", outcome.silent_accept),
                              ("bad exits", outcome.bad_exit)):
                if hit:
                    counts[kind] += 1
                    if len(failures[kind]) < args.show:
                        detail = outcome.bad_json[:3] if kind == "bad JSON values" else outcome.output.strip()[-300:]
                        failures[kind].append(f"{' '.join(vector.args)}\n      why={vector.why} -> {detail}")
    print(f"vectors: {args.vectors}  seed: {args.seed}  wall: {time.monotonic() - start:.0f} s  "
          f"slowest: {slowest[0]:.1f} s ({slowest[1][:100]})")
    print("per command: " + ", ".join(f"{k} {v}" for k, v in sorted(per_command.items())))
    print("outcomes: " + ", ".join(f"{k} {counts[k]}" for k in ("exit 0", "exit 2", "exit other",
                                                                  "known-invalid vectors")))
    for kind in ("tracebacks", "hangs", "bad JSON values", "silent accepts", "bad exits"):
        print(f"{kind}: {counts[kind]}")
        for line in failures[kind]:
            print(f"   {line}")


if __name__ == "__main__":
    main()
