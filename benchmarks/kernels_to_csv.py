"""Turn ``gpu_kernels.py`` result files into the CSV that ``distcalc validate --set gpu-kernels`` reads.

    python benchmarks/kernels_to_csv.py h100.json h200.json > src/distcalc/data/validation/distcalc2026_gpu_kernels.csv

One row per measured kernel: GEMMs (BF16, FP8) at m x n x k, fused attention (forward / backward) per backend,
elementwise kernels, and the sustained 8192^3 throughput (median of its one-second windows).
"""
import csv
import json
import statistics
import sys

COLUMNS = ["gpu", "kind", "dtype", "set", "name", "op", "tp", "tokens", "m", "n", "k", "backend", "heads", "seq",
           "kv_seq", "causal", "head_dim", "bytes", "time_s", "flops_per_s", "source"]


def rows(path):
    d = json.load(open(path))
    gpu = {"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H200": "h200"}.get(d.get("gpu"), d.get("gpu"))
    source = (f"measured by distcalc benchmarks/gpu_kernels.py on {d['date']}: {d.get('gpu')}, torch {d['torch']}, "
              f"CUDA {d['cuda']}, cuDNN {d.get('cudnn')}; {d['trials']} trials, median; after a "
              f"{len(d.get('preheat', {}).get('flops_per_s_each_second', []))} s power-limit preheat")
    base = {"gpu": gpu, "source": source}
    for r in d.get("gemm", []):
        if "error" in r:
            continue
        yield {**base, "kind": "gemm", "dtype": r["dtype"], "set": r["set"], "name": r.get("gemm", ""),
               "op": r.get("op", ""), "tp": r.get("tp", ""), "tokens": r.get("tokens", ""), "m": r["m"], "n": r["n"],
               "k": r["k"], "time_s": f"{r['time_s']:.6g}", "flops_per_s": f"{r['flops_per_s']:.6g}"}
    for r in d.get("attention", []):
        if "error" in r:
            continue
        for op in ("forward", "backward"):
            yield {**base, "kind": "attention", "dtype": "bf16", "set": "sdpa", "op": op, "backend": r["backend"],
                   "heads": r["heads"], "seq": r["seq"], "kv_seq": r["kv_seq"], "causal": int(r["causal"]),
                   "head_dim": r["head_dim"], "time_s": f"{r[op + '_time_s']:.6g}",
                   "flops_per_s": f"{r[op + '_flops_per_s']:.6g}"}
    for r in d.get("elementwise", []):
        if "error" in r:
            continue
        yield {**base, "kind": "elementwise", "dtype": "bf16", "name": r["kernel"], "bytes": r["bytes"],
               "time_s": f"{r['time_s']:.6g}"}
    for key, dtype in (("sustained", "bf16"), ("sustained_fp8", "fp8")):
        s = d.get(key) or {}
        if "flops_per_s_each_second" in s:
            n = s["n"]
            flops = statistics.median(s["flops_per_s_each_second"])
            yield {**base, "kind": "sustained", "dtype": dtype, "set": "square", "m": n, "n": n, "k": n,
                   "time_s": f"{2.0 * n ** 3 / flops:.6g}", "flops_per_s": f"{flops:.6g}"}


writer = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
writer.writeheader()
for path in sys.argv[1:]:
    writer.writerows(rows(path))
