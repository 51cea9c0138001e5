"""`distcalc serve`: seconds from process start to the first answer, and the server-side compute time of
/api/analyze and /api/memory (the Server-Timing header) for the page's layouts. Target: start < 2 s,
each recompute <= 50 ms.

    python benchmarks/web_serve.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = [
    {"model": "llama3-70b", "cluster": "dgx-h100", "gpus": 64, "tp": 8, "pp": 4, "vpp": 5, "global_batch": 128,
     "seq_len": 8192, "sequence_parallel": True, "distributed_optimizer": True},
    {"model": "llama3-405b", "cluster": "dgx-h100", "gpus": 2048, "tp": 8, "pp": 16, "global_batch": 1024,
     "seq_len": 8192, "sequence_parallel": True, "distributed_optimizer": True, "account_for_embedding_and_loss": True},
    {"model": "deepseek-v3", "cluster": "dgx-h100", "gpus": 1024, "tp": 1, "pp": 1, "ep": 64, "global_batch": 4096,
     "seq_len": 4096, "recompute": "full"},
    {"model": "gpt3-175b", "cluster": "dgx-a100", "gpus": 1024, "tp": 8, "pp": 16, "global_batch": 1536,
     "seq_len": 2048, "recompute": "selective", "sequence_parallel": True},
]
REPEATS = 20


def compute_ms(url: str, path: str, body: dict) -> float:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        response.read()
        return float(response.headers["Server-Timing"].split("dur=")[1])


def main() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "distcalc.cli", "serve", "--port", "0"],
                               stdout=subprocess.PIPE, text=True, env=env)
    url = process.stdout.readline().split()[2].rstrip("/")
    while True:
        try:
            urllib.request.urlopen(url + "/api/presets").read()
            break
        except OSError:
            time.sleep(0.02)
    print(f"start to first answer: {time.perf_counter() - start:.2f} s")
    try:
        for layout in LAYOUTS:
            memory = {k: v for k, v in layout.items() if k != "cluster"}
            for path, body in (("/api/analyze", layout), ("/api/memory", memory)):
                compute_ms(url, path, body)  # first call: caches warm
                times = [compute_ms(url, path, body) for _ in range(REPEATS)]
                print(f"{path:13s} {layout['model']:12s} gpus={layout['gpus']:5d}: median "
                      f"{statistics.median(times):6.1f} ms, max {max(times):6.1f} ms")
    finally:
        process.terminate()
        process.wait()


if __name__ == "__main__":
    main()
