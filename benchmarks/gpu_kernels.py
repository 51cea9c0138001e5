"""Measure, on the GPU at hand, every kernel class that ``distcalc.compute`` prices, and write the raw
times to JSON (one file, with the device, driver, clocks and versions it ran on).

    PYTHONPATH=src python3 benchmarks/gpu_kernels.py --output kernels.json            # on a GPU
    PYTHONPATH=src python3 benchmarks/gpu_kernels.py --quick --output /tmp/k.json     # CPU smoke run

What is measured (all with random normal data, never zeros; ``warmup`` untimed calls, then ``trials``
timed samples of back-to-back calls between CUDA events, median reported with p10/p90 — nccl-tests /
triton ``do_bench`` conventions; ``--preheat-s`` first brings the GPU to its power-limited state):

* ``gemm``: the forward, input-gradient and weight-gradient GEMMs of one Llama-3-70B layer at TP 1, 2, 4, 8
  for T = 4096 and 8192 tokens (BF16; FP8 via ``torch._scaled_mm`` where the GPU has it), plus square
  shapes from 256 to 16384, skinny (m = 128..2048) and short-k (k = 256, 1024) shapes;
* ``attention``: forward and backward through ``scaled_dot_product_attention`` with each backend that runs
  (FlashAttention-2, cuDNN, memory-efficient), head dim 128, 8 and 16 heads: causal s = 2048..8192 and the
  non-causal 4096×2048 / 2048×4096 blocks of a context-parallel ring step;
* ``elementwise``: copy, residual add, RMSNorm forward/backward, SwiGLU forward — bytes moved / time;
* ``layer``: a whole Llama-3-70B layer at TP 4 and 8 shapes (one GPU, no communication, no sequence
  parallelism): forward and backward time and the bytes its forward saves for backward;
* ``burst`` / ``sustained`` / ``sustained_fp8``: an 8192³ GEMM once from the GPU's current state, and
  repeated for ``--sustain-s`` seconds (BF16, FP8), throughput per second, with nvidia-smi clocks, power
  and throttle reasons before, midway and after.

The comparison with the model is made elsewhere (``distcalc.validation.gpu_kernels``, via ``benchmarks/kernels_to_csv.py``); this script imports
nothing from distcalc so that it runs wherever torch does.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

LLAMA70B = dict(hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn=28672)


def nvidia_smi() -> dict:
    fields = "clocks.sm,clocks.mem,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        return dict(zip(fields.split(","), [x.strip() for x in out.split(",")]))
    except Exception as exc:  # noqa: BLE001 — a record, not a check
        return {"error": str(exc)}


class Timer:
    """Median time of one call. Each timed sample is ``reps`` back-to-back calls between two CUDA events,
    ``reps`` chosen so that a sample lasts at least ``min_sample_s``: the host runs ahead of the GPU, so
    the sample measures the kernels, not the Python dispatch in front of an idle GPU."""

    def __init__(self, device: str, warmup: int, trials: int, min_sample_s: float = 2e-3) -> None:
        self.cuda = device.startswith("cuda")
        self.warmup, self.trials, self.min_sample_s = warmup, trials, min_sample_s

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def _sample(self, fn, reps: int) -> float:
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3 / reps
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - t0) / reps

    def __call__(self, fn) -> dict:
        for _ in range(self.warmup):
            fn()
        self.sync()
        once = self._sample(fn, 3)
        reps = max(1, min(200, math.ceil(self.min_sample_s / max(once, 1e-7))))
        times = sorted(self._sample(fn, reps) for _ in range(self.trials))
        pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
        return {"time_s": times[len(times) // 2], "p10_time_s": pick(0.1), "p90_time_s": pick(0.9),
                "trials": len(times), "calls_per_trial": reps}


def rand(*shape, dtype, device):
    return torch.randn(*shape, dtype=torch.float32, device=device).to(dtype)


def layer_gemms(tp: int, tokens: int, m=LLAMA70B) -> list[tuple[str, int, int, int]]:
    """(name, M, N, K) of the forward GEMMs of a Llama layer on one TP rank."""
    h, d = m["hidden"], m["head_dim"]
    qkv = (m["heads"] + 2 * m["kv_heads"]) * d // tp
    return [("qkv", tokens, qkv, h), ("out-proj", tokens, h, m["heads"] * d // tp),
            ("mlp-up", tokens, 2 * m["ffn"] // tp, h), ("mlp-down", tokens, h, m["ffn"] // tp)]


def gemm_rows(timer: Timer, device: str, quick: bool, fp8: bool) -> list[dict]:
    shapes = []
    tps, tokens = ((4,), (256,)) if quick else ((1, 2, 4, 8), (4096, 8192))
    scale = 16 if quick else 1
    for tp in tps:
        for t in tokens:
            for name, mm, nn, kk in layer_gemms(tp * scale, t):
                for op, shape in (("fwd", (mm, nn, kk)), ("dgrad", (mm, kk, nn)), ("wgrad", (kk, nn, mm))):
                    shapes.append({"set": "llama3-70b", "tp": tp * scale, "tokens": t, "gemm": name, "op": op,
                                   "m": shape[0], "n": shape[1], "k": shape[2]})
    sizes = (64, 128, 256) if quick else (256, 512, 1024, 2048, 4096, 8192, 16384)
    for s in sizes:
        shapes.append({"set": "square", "m": s, "n": s, "k": s})
    if not quick:
        for mm in (128, 512, 2048):  # skinny: few tokens through a big weight
            shapes.append({"set": "skinny", "m": mm, "n": 8192, "k": 8192})
        for kk in (256, 1024):  # short-k: epilogue-heavy
            shapes.append({"set": "short-k", "m": 8192, "n": 8192, "k": kk})
    rows = []
    for spec in shapes:
        m, n, k = spec["m"], spec["n"], spec["k"]
        for dtype in (("bf16", "fp8") if fp8 else ("bf16",)):
            try:
                r = timer(gemm_call(device, m, n, k, dtype))
            except Exception as exc:  # noqa: BLE001
                rows.append({**spec, "dtype": dtype, "error": repr(exc)[:300]})
                continue
            flops = 2.0 * m * n * k
            rows.append({**spec, "dtype": dtype, **r, "flops_per_s": flops / r["time_s"]})
    return rows


def attention_rows(timer: Timer, device: str, quick: bool) -> list[dict]:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)] if device.startswith("cuda") \
        else [("math", SDPBackend.MATH)]
    seqs, heads_list = ((128,), (2,)) if quick else ((2048, 4096, 8192), (8, 16))
    # (query length, key length, causal): causal self-attention, plus the non-causal blocks of a
    # load-balanced context-parallel ring step (query half x key chunk)
    cases = [(s, s, True) for s in seqs] + ([] if quick else [(4096, 2048, False), (2048, 4096, False)])
    dt = torch.bfloat16 if device.startswith("cuda") else torch.float32
    d = 128 if not quick else 32
    for name, backend in backends:
        for sq, skv, causal in cases:
            for heads in heads_list:
                spec = {"backend": name, "batch": 1, "heads": heads, "seq": sq, "kv_seq": skv, "head_dim": d,
                        "causal": causal}
                try:
                    q = rand(1, heads, sq, d, dtype=dt, device=device).requires_grad_()
                    k = rand(1, heads, skv, d, dtype=dt, device=device).requires_grad_()
                    v = rand(1, heads, skv, d, dtype=dt, device=device).requires_grad_()
                    with sdpa_kernel([backend]):
                        fwd = timer(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        grad = torch.randn_like(out)
                        bwd = timer(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True))
                except Exception as exc:  # noqa: BLE001
                    rows.append({**spec, "error": repr(exc)[:300]})
                    continue
                # forward FLOPs: QK^T and PV, 2·2·sq·skv·d per head; causal skips half the blocks
                flops = 4.0 * heads * sq * skv * d * (0.5 if causal else 1.0)
                rows.append({**spec, "forward_time_s": fwd["time_s"], "backward_time_s": bwd["time_s"],
                             "forward_p90_s": fwd["p90_time_s"], "backward_p90_s": bwd["p90_time_s"],
                             "forward_flops": flops,
                             "forward_flops_per_s": flops / fwd["time_s"],
                             "backward_flops_per_s": 2.5 * flops / bwd["time_s"]})
    return rows


def elementwise_rows(timer: Timer, device: str, quick: bool) -> list[dict]:
    dt = torch.bfloat16 if device.startswith("cuda") else torch.float32
    e = 2 if dt == torch.bfloat16 else 4
    tokens, h, f = (256, 256, 512) if quick else (8192, 8192, 7168)
    x = rand(tokens, h, dtype=dt, device=device)
    y = rand(tokens, h, dtype=dt, device=device)
    w = rand(h, dtype=dt, device=device)
    gu = rand(tokens, 2 * f, dtype=dt, device=device)
    out = torch.empty_like(x)
    xr = x.detach().clone().requires_grad_()
    normed = F.rms_norm(xr, (h,), w)
    g_norm = torch.randn_like(normed)
    n = tokens * h
    cases = [
        ("copy", lambda: out.copy_(x), 2 * n * e),
        ("add", lambda: torch.add(x, y, out=out), 3 * n * e),
        ("rmsnorm-fwd", lambda: F.rms_norm(x, (h,), w), 2 * n * e),
        ("rmsnorm-bwd", lambda: torch.autograd.grad(normed, xr, g_norm, retain_graph=True), 3 * n * e),
        ("swiglu-fwd", lambda: F.silu(gu[:, :f]) * gu[:, f:], 3 * tokens * f * e),
    ]
    rows = []
    for name, fn, nbytes in cases:
        try:
            r = timer(fn)
            rows.append({"kernel": name, "bytes": nbytes, **r, "bytes_per_s": nbytes / r["time_s"]})
        except Exception as exc:  # noqa: BLE001
            rows.append({"kernel": name, "error": repr(exc)[:300]})
    return rows


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def layer_rows(timer: Timer, device: str, quick: bool) -> list[dict]:
    """A Llama layer (pre-norm, GQA, RoPE, SwiGLU, causal flash attention) on one TP rank's shapes."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    cuda = device.startswith("cuda")
    dt = torch.bfloat16 if cuda else torch.float32
    m = LLAMA70B
    configs = ((16, 128),) if quick else ((4, 4096), (4, 8192), (8, 8192))
    for tp, tokens in configs:
        h, d = m["hidden"] // (1 if not quick else 32), m["head_dim"] // (1 if not quick else 4)
        a, g = m["heads"] // tp if not quick else 2, max(1, m["kv_heads"] // tp) if not quick else 1
        f = m["ffn"] // tp if not quick else 64
        spec = {"model": "llama3-70b", "tp": tp, "tokens": tokens, "hidden": h, "heads": a, "kv_heads": g,
                "head_dim": d, "ffn": f}
        try:
            params = {
                "norm1": torch.ones(h, dtype=dt, device=device), "norm2": torch.ones(h, dtype=dt, device=device),
                "qkv": rand((a + 2 * g) * d, h, dtype=dt, device=device) / math.sqrt(h),
                "out": rand(h, a * d, dtype=dt, device=device) / math.sqrt(a * d),
                "up": rand(2 * f, h, dtype=dt, device=device) / math.sqrt(h),
                "down": rand(h, f, dtype=dt, device=device) / math.sqrt(f),
            }
            for p in params.values():
                p.requires_grad_()
            pos = torch.arange(tokens, device=device, dtype=torch.float32)[:, None]
            inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
            ang = torch.cat((pos * inv, pos * inv), dim=-1)
            cos, sin = ang.cos().to(dt)[None, :, None, :], ang.sin().to(dt)[None, :, None, :]
            x = rand(1, tokens, h, dtype=dt, device=device).requires_grad_()

            def forward():
                hn = F.rms_norm(x, (h,), params["norm1"])
                qkv = F.linear(hn, params["qkv"])
                q, k, v = qkv.split((a * d, g * d, g * d), dim=-1)
                q = rope(q.view(1, tokens, a, d), cos, sin).transpose(1, 2)
                k = rope(k.view(1, tokens, g, d), cos, sin).transpose(1, 2)
                v = v.view(1, tokens, g, d).transpose(1, 2)
                backend = [SDPBackend.FLASH_ATTENTION] if cuda else [SDPBackend.MATH]
                with sdpa_kernel(backend):
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                x1 = x + F.linear(o.transpose(1, 2).reshape(1, tokens, a * d), params["out"])
                hn2 = F.rms_norm(x1, (h,), params["norm2"])
                gate, up = F.linear(hn2, params["up"]).chunk(2, dim=-1)
                return x1 + F.linear(F.silu(gate) * up, params["down"])

            with torch.no_grad():
                fwd_nograd = timer(forward)
            fwd = timer(forward)
            if cuda:
                torch.cuda.synchronize()
                before = torch.cuda.memory_allocated()
            out = forward()
            saved = (torch.cuda.memory_allocated() - before) if cuda else None
            grad = torch.randn_like(out)
            inputs = (x, *params.values())
            bwd = timer(lambda: torch.autograd.grad(out, inputs, grad, retain_graph=True))
            rows.append({**spec, "forward_time_s": fwd["time_s"], "forward_no_grad_time_s": fwd_nograd["time_s"],
                         "backward_time_s": bwd["time_s"], "forward_p90_s": fwd["p90_time_s"],
                         "backward_p90_s": bwd["p90_time_s"], "forward_saved_bytes": saved})
            del out, grad
        except Exception as exc:  # noqa: BLE001
            rows.append({**spec, "error": repr(exc)[:300], "trace": traceback.format_exc()[-800:]})
    return rows


def gemm_call(device: str, m: int, n: int, k: int, dtype: str):
    """A closure running one ``[m×k]·[k×n]`` GEMM on fresh random operands: BF16 ``torch.matmul`` (float32
    on CPU), or FP8 e4m3 ``torch._scaled_mm`` with B column-major (the layout Hopper's FP8 cores take)."""
    if dtype == "fp8":
        a = rand(m, k, dtype=torch.bfloat16, device=device).to(torch.float8_e4m3fn)
        bt = rand(n, k, dtype=torch.bfloat16, device=device).to(torch.float8_e4m3fn)
        one = torch.ones((), dtype=torch.float32, device=device)
        return lambda: torch._scaled_mm(a, bt.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    dt = torch.bfloat16 if device.startswith("cuda") else torch.float32
    a, b = rand(m, k, dtype=dt, device=device), rand(k, n, dtype=dt, device=device)
    out = torch.empty(m, n, dtype=dt, device=device)
    return lambda: torch.matmul(a, b, out=out)


def sustained(device: str, seconds: float, quick: bool, dtype: str = "bf16") -> dict:
    """Throughput of one 8192^3 GEMM repeated back to back for ``seconds``: one figure per second."""
    n = 512 if quick else 8192
    fn = gemm_call(device, n, n, n, dtype)
    cuda = device.startswith("cuda")
    before = nvidia_smi() if cuda else {}
    per_second, mid = [], {}
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        calls = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 1.0:
            for _ in range(20):
                fn()
            if cuda:
                torch.cuda.synchronize()
            calls += 20
        per_second.append(2.0 * n ** 3 * calls / (time.perf_counter() - t0))
        if cuda and len(per_second) == max(1, int(seconds / 2)):
            mid = nvidia_smi()
    after = nvidia_smi() if cuda else {}
    return {"n": n, "dtype": dtype, "flops_per_s_each_second": per_second, "smi_before": before, "smi_mid": mid,
            "smi_after": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True)
    parser.add_argument("--quick", action="store_true", help="tiny shapes (CPU smoke run)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--sustain-s", type=float, default=20.0)
    parser.add_argument("--preheat-s", type=float, default=0.0,
                        help="run the BF16 8192^3 GEMM this long first, so every section sees the power-capped state")
    parser.add_argument("--only", default="burst,gemm,attention,elementwise,layer,sustained,sustained_fp8")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    timer = Timer(device, args.warmup, args.trials)
    fp8 = device == "cuda" and torch.cuda.get_device_capability() >= (8, 9)
    result: dict = {"device": device, "torch": torch.__version__, "cuda": torch.version.cuda,
                    "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
                    "warmup": args.warmup, "trials": args.trials}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        result.update(gpu=props.name, sm_count=props.multi_processor_count, memory_bytes=props.total_memory,
                      capability=list(torch.cuda.get_device_capability()), cudnn=torch.backends.cudnn.version(),
                      smi=nvidia_smi())
    sections = {"burst": lambda: {"bf16": timer(gemm_call(device, *(3 * (512 if args.quick else 8192,)), "bf16")),
                                  "smi": nvidia_smi() if device == "cuda" else {}},
                "gemm": lambda: gemm_rows(timer, device, args.quick, fp8),
                "attention": lambda: attention_rows(timer, device, args.quick),
                "elementwise": lambda: elementwise_rows(timer, device, args.quick),
                "layer": lambda: layer_rows(timer, device, args.quick),
                "sustained": lambda: sustained(device, args.sustain_s, args.quick),
                "sustained_fp8": lambda: sustained(device, args.sustain_s, args.quick, "fp8") if fp8 else {}}
    for name in args.only.split(","):
        if name == "gemm" and args.preheat_s > 0:
            result["preheat"] = sustained(device, args.preheat_s, args.quick)
        t0 = time.perf_counter()
        try:
            result[name] = sections[name]()
        except Exception:  # noqa: BLE001 — keep what the other sections measured
            result[name] = {"error": traceback.format_exc()[-1500:]}
        print(f"{name}: {time.perf_counter() - t0:.1f} s {nvidia_smi() if device == 'cuda' else ''}",
              file=sys.stderr, flush=True)
        with open(args.output, "w") as fh:
            json.dump(result, fh, indent=1)
    summary(result)


def summary(result: dict) -> None:
    print(f"{result.get('gpu', result['device'])} torch {result['torch']} cuda {result['cuda']}")
    for row in result.get("gemm", []) if isinstance(result.get("gemm"), list) else []:
        if "error" in row:
            print("gemm error", row)
        elif row["set"] != "llama3-70b" or (row["tokens"] == 8192 and row["op"] == "fwd"):
            print(f"gemm {row['set']:10s} {row.get('tp', '')!s:>2} {row.get('gemm', ''):9s} {row.get('op', ''):5s} "
                  f"{row['m']}x{row['n']}x{row['k']} {row['dtype']} {row['flops_per_s'] / 1e12:7.1f} TF/s")
    for row in result.get("attention", []) if isinstance(result.get("attention"), list) else []:
        if "error" in row:
            print("attn error", row["backend"], row["seq"], row["error"][:120])
        else:
            print(f"attn {row['backend']:9s} s={row['seq']}x{row['kv_seq']} c={row['causal']:d} heads={row['heads']} fwd "
                  f"{row['forward_flops_per_s'] / 1e12:6.1f} TF/s bwd {row['backward_flops_per_s'] / 1e12:6.1f} TF/s")
    for row in result.get("elementwise", []) if isinstance(result.get("elementwise"), list) else []:
        print("elementwise", row.get("kernel"), f"{row.get('bytes_per_s', 0) / 1e9:.0f} GB/s", row.get("error", ""))
    for row in result.get("layer", []) if isinstance(result.get("layer"), list) else []:
        print("layer", {k: v for k, v in row.items() if k != "trace"})
    print("burst", result.get("burst"))
    for key in ("preheat", "sustained", "sustained_fp8"):
        s = result.get(key)
        if isinstance(s, dict) and "flops_per_s_each_second" in s:
            print(key, "TF/s", [round(x / 1e12) for x in s["flops_per_s_each_second"]])
            print("smi", s.get("smi_before"), s.get("smi_mid"), s.get("smi_after"))


if __name__ == "__main__":
    main()
