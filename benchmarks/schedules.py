"""Cost of the executed pipeline schedules (zb-h1, zb-h2, zb-v, dualpipe, dualpipev): building and compiling
a plan per (schedule, pp, micro-batches), executing it for many configurations at once, and searches whose
default weighs the executed schedules too (Llama 3 8B on 64 H100s; Llama 3 405B on 16,384 H100s, where the
search's 20,000-pass plan budget matters: 214 s without it). Best of 3 after one warm-up where caches matter.

    .venv/bin/python benchmarks/schedules.py
"""
import time

import numpy as np

from distcalc.cluster import load_cluster
from distcalc.model import load_model
from distcalc.schedules import PassTimes, compile_plan, execute, get_schedule
from distcalc.search.engine import search
from distcalc.search.space import SpaceChoices


def best_of(fn, repeat=3):
    best = 1e9
    for _ in range(repeat):
        t = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t)
    return best


if __name__ == "__main__":
    for name in ("zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev"):
        schedule = get_schedule(name)
        for p, m in ((8, 64), (32, 256)):
            build = best_of(lambda: compile_plan(schedule.plan(p, m)), 1)
            plan = schedule.plan(p, m)
            program = compile_plan(plan)
            times = PassTimes(np.full((plan.virtual_stages, 1000), 1.0), 1.0, 0.5)
            run = best_of(lambda: execute(plan, times, program=program))
            print(f"{name:9s} p={p:2d} m={m:3d}: {len(program.ops):6d} ops, plan+compile {build:.3f} s, "
                  f"execute 1000 configurations {run:.3f} s")
    spec, cluster = load_model("llama3-8b"), load_cluster("dgx-h100")
    every = SpaceChoices(schedule=("1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev"))
    closed = SpaceChoices(schedule=("gpipe", "1f1b", "interleaved", "zero-bubble"))
    for label, choices in (("default schedules", None), ("every schedule", every), ("closed forms only", closed)):
        t = time.perf_counter()
        result = search(spec, cluster, 64, global_batch=256, seq_len=4096, choices=choices)
        print(f"search llama3-8b, 64 GPUs, {label}: {result.evaluated:,} configurations in "
              f"{time.perf_counter() - t:.2f} s (first run: plans built)")
    spec = load_model("llama3-405b")
    for label, choices in (("closed forms only", closed), ("default schedules", None), ("default, warm", None)):
        t = time.perf_counter()
        result = search(spec, cluster, 16384, global_batch=2048, seq_len=8192, choices=choices)
        print(f"search llama3-405b, 16,384 GPUs, {label}: {result.evaluated:,} configurations in "
              f"{time.perf_counter() - t:.2f} s")
