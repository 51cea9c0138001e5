"""Throughput of ``distcalc.analyze.evaluate_batch``: GPT-3 175B on DGX A100, 64 GPUs, ~1e6 configurations drawn
at random (with repetition) from the valid (tp, pp, dp, micro-batch, global batch, schedule, vpp, ZeRO, recompute,
SP) space; best of 3, with and without the memory model.

    .venv/bin/python benchmarks/analyze_batch.py [N]
"""
import sys, time
import numpy as np
from distcalc.analyze import evaluate_batch
from distcalc.model import load_model
from distcalc.cluster import load_cluster

def make_batch(n, seed=0):
    rng = np.random.default_rng(seed)
    combos = []
    L = 96
    for tp in (1, 2, 4, 8):
        for pp in (1, 2, 4, 8, 16, 32):
            if 64 % (tp * pp) or L % pp: continue
            dp = 64 // (tp * pp)
            for mb in (1, 2, 4, 8):
                for gb in (64, 128, 256, 512):
                    if gb % (mb * dp): continue
                    m = gb // (mb * dp)
                    for sch in (0, 1, 2, 3):
                        for v in ((1,) if sch != 2 else (2, 3, 4, 6)):
                            if sch == 2 and (pp == 1 or L % (pp * v) or m % pp): continue
                            if sch != 1 and pp == 1: continue
                            for zero in (0, 1, 2, 3):
                                for rc in (0, 1, 2):
                                    for sp in ((0, 1) if tp > 1 else (0,)):
                                        combos.append((tp, pp, dp, mb, gb, sch, v, zero, rc, sp))
    combos = np.array(combos, dtype=np.int64)
    pick = combos[rng.integers(0, len(combos), n)]
    names = ("tp", "pp", "dp", "micro_batch", "global_batch", "schedule", "vpp", "zero", "recompute", "sequence_parallel")
    return {k: pick[:, i].copy() for i, k in enumerate(names)}, len(combos)

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    spec, cl = load_model("gpt3-175b"), load_cluster("dgx-a100")
    batch, distinct = make_batch(n)
    evaluate_batch(spec, cl, {k: v[:1000] for k, v in batch.items()}, memory=False)  # warm caches
    for mem in (False, True):
        best = 1e9
        for _ in range(3):
            t = time.perf_counter(); out = evaluate_batch(spec, cl, batch, memory=mem); best = min(best, time.perf_counter() - t)
        print(f"memory={mem}: {n:,} configs ({distinct} distinct) best of 3 {best:.3f} s -> {n / best / 1e6:.3f} M configs/s")
    if len(sys.argv) > 2:
        np.savez(sys.argv[2], **{k: np.asarray(v) for k, v in out.items()})
