"""MegaScale's Table 2 runs (Jiang et al. 2024, arXiv:2402.15627) on the fabric its Sec. 3.6 describes: eight
200G RoCE NICs per 8-GPU server, multi-rail, 1:1 downlink:uplink switches (no oversubscription to price)."""

import pytest

from distcalc.analyze import analyze
from distcalc.cluster import load_cluster, load_link
from distcalc.validation.published.mapping import run_inputs
from distcalc.validation.published.rows import published_runs

SOURCE = "MegaScale2024_Table2_MegatronLM_baseline"
RUNS = [run for run in published_runs() if run.source == SOURCE]


def test_eth_200g_preset_is_200_gbe():
    link = load_link("eth-200g")
    assert link.bandwidth_bytes_per_s == 25e9  # 200 Gb/s per direction
    # the RoCE presets' stated efficiency and step latency (eth-100g, eth-400g)
    assert link.efficiency == load_link("eth-400g").efficiency == load_link("eth-100g").efficiency
    assert link.latency_s == load_link("eth-400g").latency_s


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.case_id)
def test_megascale_rows_run_on_eight_200g_roce_nics(run):
    cluster = run_inputs(run).cluster
    assert cluster.inter.name == "eth-200g" and cluster.nics_per_node == 8 and cluster.gpus_per_node == 8


def test_roce_prices_the_unoverlapped_dp_collectives_above_hdr_infiniband():
    """The baseline's distributed-optimizer ReduceScatter (fp32) and AllGather (bf16) run after the pipeline
    drains (no DP overlap at Megatron-LM 285068c8): on 200G RoCE (η 0.85) they take 0.90/0.85 of their time
    on HDR InfiniBand (η 0.90) plus the higher per-step latency; nothing else in the step moves but the P2P."""
    assert len(RUNS) == 8
    i = run_inputs(RUNS[-1])  # 12,288 GPUs, DP 192
    roce = analyze(i.spec, i.cluster, i.config, i.options).time_breakdown
    hdr = analyze(i.spec, load_cluster("dgx-a100"), i.config, i.options).time_breakdown
    assert roce["dp_exposed_s"] / hdr["dp_exposed_s"] == pytest.approx(0.90 / 0.85, rel=0.03)
    assert roce["dp_exposed_s"] > hdr["dp_exposed_s"] and roce["pp_p2p_s"] > hdr["pp_p2p_s"]
    assert roce["compute_s"] == hdr["compute_s"] and roce["tp_exposed_s"] == hdr["tp_exposed_s"]
