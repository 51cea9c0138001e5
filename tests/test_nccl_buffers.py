"""NCCL communicator memory (distcalc.memory.nccl_buffers): per-communicator footprint and the groups of a job."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from distcalc.memory import MemoryBasis, MemoryOptions, memory_report
from distcalc.memory.nccl_buffers import (
    COMMUNICATOR_BYTES,
    TWO_RANK_COMMUNICATOR_BYTES,
    Communicator,
    communicator_bytes,
    job_communicators,
    nccl_buffer_bytes,
    nvls_bytes,
)
from distcalc.parallel import ParallelConfig
from distcalc.units import MIB


def test_footprints_are_the_measured_and_the_source_code_numbers():
    # NVIDIA/nccl#964 (4 A100, NVLink): 544 MiB for two ranks, 688 MiB for more
    assert TWO_RANK_COMMUNICATOR_BYTES == 544 * MIB and COMMUNICATOR_BYTES == 688 * MIB
    # nvls.cc v2.19.4: 16 channels x 2 x (4 MiB buffer + 2 MiB alignment) per head, one head per GPU of the node
    assert nvls_bytes(8) == 1536 * MIB and nvls_bytes(4) == 768 * MIB
    assert nvls_bytes(2) == 0 == nvls_bytes(1)  # ncclNvlsInit: gpuCount <= 2 -> no NVLS


def test_one_rank_holds_nothing_and_nvls_only_on_its_fabric():
    assert communicator_bytes(Communicator("tp", 1, 1), nvls=True) == 0
    eight = Communicator("dp", 8, 8)
    assert communicator_bytes(eight, nvls=False) == 688 * MIB
    assert communicator_bytes(eight, nvls=True) == (688 + 1536) * MIB
    across = Communicator("dp", 64, 1)  # one GPU per node: no NVLS heads in the node
    assert communicator_bytes(across, nvls=True) == 688 * MIB


def test_groups_of_a_job_follow_megatrons_rank_order():
    comms = {c.name: c for c in job_communicators(tp=2, pp=1, dp=4, gpus_per_node=8)}
    assert set(comms) == {"world", "tp", "dp"}
    assert (comms["tp"].local_ranks, comms["dp"].local_ranks, comms["world"].local_ranks) == (2, 4, 8)
    deep = {c.name: c for c in job_communicators(tp=8, pp=4, dp=2, gpus_per_node=8, tied_embeddings=True)}
    assert deep["pp"].local_ranks == 1 and deep["dp"].local_ranks == 1 and deep["tp"].local_ranks == 8
    assert deep["embedding"].ranks == 2 and deep["embedding"].local_ranks == 1
    core = {c.name for c in job_communicators(tp=2, pp=1, dp=4, megatron_core=True, fp8=True)}
    assert core == {"world", "tp", "dp", "dp-loss", "fp8-amax"}
    assert job_communicators(tp=1, pp=1, dp=1) == []


def test_a800_and_h100_jobs_sum_their_communicators():
    # DGX A800 (NVLink 3, no NVLS), PP 2 x DP 4, tied embeddings: world 688, DP 688, PP 544, embedding 544
    assert nccl_buffer_bytes(1, 2, 4, intra_fabric="nvlink3-a800", tied_embeddings=True) == (688 * 2 + 544 * 2) * MIB
    # the same job on DGX H100: the 8-GPU world and 4-GPU DP groups add NVLS buffers
    h100 = nccl_buffer_bytes(1, 2, 4, intra_fabric="nvlink4", tied_embeddings=True)
    assert h100 == (688 * 2 + 544 * 2 + 1536 + 768) * MIB


@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8, 64]),
       st.booleans())
def test_every_group_holds_its_channel_buffers_and_nvls_never_less(tp, pp, dp, nvls):
    fabric = "nvlink4" if nvls else "nvlink3"
    comms = job_communicators(tp, pp, dp)
    floor = sum(TWO_RANK_COMMUNICATOR_BYTES if c.ranks == 2 else COMMUNICATOR_BYTES for c in comms)
    assert nccl_buffer_bytes(tp, pp, dp, intra_fabric=fabric) >= floor
    assert len(job_communicators(tp, pp, 2 * dp)) >= len(comms)  # a wider job holds no fewer groups
    assert nccl_buffer_bytes(tp, pp, dp, intra_fabric="nvlink4") >= nccl_buffer_bytes(tp, pp, dp, intra_fabric="nvlink3")


def test_buffers_count_on_the_device_basis_only():
    config = ParallelConfig(gpus=8, tp=2, pp=1, dp=4, micro_batch=1, global_batch=64, seq_len=4096)
    nccl = nccl_buffer_bytes(2, 1, 4, intra_fabric="nvlink4")
    plain = memory_report("llama3-8b", config, "h100-sxm").worst
    counted = memory_report("llama3-8b", config, "h100-sxm", MemoryOptions(comm_buffer_bytes=nccl)).worst
    assert counted.peak_bytes(MemoryBasis.ALLOCATED) == plain.peak_bytes(MemoryBasis.ALLOCATED)
    extra = counted.peak_bytes(MemoryBasis.DEVICE) - plain.peak_bytes(MemoryBasis.DEVICE)
    # the buffers beyond the 512 MiB default, plus the allocator reserve the model charges on them (5 %)
    assert abs(extra - 1.05 * (nccl - MemoryOptions().comm_buffer_bytes)) < 1e-6 * nccl


def test_cli_auto_counts_the_jobs_communicators_and_refuses_nonsense():
    import json

    from typer.testing import CliRunner

    from distcalc.cli import app

    args = ["memory", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "2", "--dp", "4",
            "--micro-batch", "1", "--global-batch", "512", "--seq-len", "8192", "--sequence-parallel",
            "--distributed-optimizer", "--json"]
    runner = CliRunner()
    auto = runner.invoke(app, args + ["--comm-buffer", "auto"])
    assert auto.exit_code == 0, auto.output
    worst = json.loads(auto.output)["memory"]
    # world (8 GPUs) + TP 2 + DP 4 on DGX H100 with NVLS; Llama 3 8B unties its embeddings
    assert worst["communication_buffers_bytes"] == (688 + 1536 + 544 + 688 + 768) * MIB
    bad = runner.invoke(app, args + ["--comm-buffer", "lots"])
    assert bad.exit_code == 2 and "auto" in bad.output and "lots" in bad.output
