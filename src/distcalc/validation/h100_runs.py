"""H100 step times published by NVIDIA for NeMo 24.09 (``nemo-llama31-70b-h100``), added after the model
was built and reported as they come out — they were never used to set anything.

Llama 3.1 70B has the sizes of the ``llama3-70b`` preset (80 layers, hidden 8192, FFN 28672, 64 heads, 8 KV
heads, vocab 128256; only RoPE scaling differs). The runs: TP 4, PP 4, CP 2, interleaved VP 5, micro-batch 1,
global batch 2 × GPUs (64 micro-batches per pipeline), sequence 8192, on 64–2048 DGX H100 GPUs with NVLS off.
Their NeMo settings (NeMo-Framework-Launcher ``conf/training/llama/llama3_1_70b.yaml``): sequence
parallelism, FlashAttention, distributed optimizer with overlapped gradient reduce-scatter and parameter
all-gather (``overlap_grad_sync``, ``overlap_param_sync``), TransformerEngine userbuffer TP overlap
(``ub_tp_comm_overlap``) and overlapped pipeline P2P (``overlap_p2p_comm``) — so the options are
``tp_overlap_efficiency`` 1 (every TP collective distcalc counts as overlappable hidden behind its GEMM)
and ``pipeline_p2p_overlap``. FP8 prices 1-byte operands in the GEMM tile model and TransformerEngine's
cast-transpose kernels (:mod:`distcalc.compute.layer`). The H100's GEMMs run at its measured sustained,
power-limited rate (``power_limited_flops_per_s``: 677 TFLOP/s BF16, 1218 FP8, one 8192³ GEMM on one H100
— not these runs); before that term the model was 12 % (BF16) and 18 % (FP8) fast. distcalc has no model of
the SMs that userbuffer overlap takes from the GEMMs; the tolerance is the Table 5 one (6 %).
"""

from __future__ import annotations

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.parallel import ParallelConfig
from distcalc.validation.base import CaseSet, ValidationCase, read_validation_csv

SOURCE = "NVIDIA dgxc-benchmarking llama3.1/README_70b.md (NeMo 24.09, DGX H100)"
NEMO_OPTIONS = AnalyzeOptions(distributed_optimizer=True, tp_overlap_efficiency=1.0, pipeline_p2p_overlap=True)


def nemo_results(options: AnalyzeOptions = NEMO_OPTIONS) -> list[dict[str, object]]:
    """Predicted vs measured step time of every row (dtype bf16 / fp8, 64–2048 GPUs)."""
    rows = []
    for row in read_validation_csv("nemo2024_llama31_70b_h100_step_time.csv"):
        gpus = int(row["num_gpus"])
        config = ParallelConfig(
            gpus=gpus, tp=int(row["tensor_parallel"]), pp=int(row["pipeline_parallel"]),
            cp=int(row["context_parallel"]), vpp=int(row["virtual_pipeline"]), micro_batch=int(row["micro_batch"]),
            global_batch=int(row["global_batch"]), seq_len=int(row["seq_len"]), dtype=row["dtype"],
            sequence_parallel=True, distributed_optimizer=True)
        report = analyze("llama3-70b", "dgx-h100", config, options)
        rows.append({"gpus": gpus, "dtype": row["dtype"], "predicted_s": report.step_time_s,
                     "measured_s": float(row["step_time_s"])})
    return rows


def _cases() -> list[ValidationCase]:
    return [ValidationCase(case=f"Llama 3.1 70B {r['dtype']} {r['gpus']} GPUs step time", predicted=r["predicted_s"],
                           published=r["measured_s"], unit="s", error_kind="relative", tolerance=0.06,
                           kind="measured", note="NeMo settings: TP userbuffer overlap, P2P overlap, dist-opt")
            for r in nemo_results()]


CASE_SETS = (
    CaseSet("nemo-llama31-70b-h100", "NeMo 24.09 Llama 3.1 70B step time on 64-2048 H100, BF16 and FP8 (added later)",
            SOURCE, _cases),
)
