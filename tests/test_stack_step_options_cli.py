"""``distcalc analyze --dp-wrapper`` and ``--zero-reduce-to-owners``: the older stacks' step passes from the command
line (analyze.optimizer_passes, analyze.zero_reduce)."""

import json

import pytest
from typer.testing import CliRunner

from distcalc.cli import app

runner = CliRunner()
FP16_RUN = ["analyze", "--model", "llama2-7b", "--cluster", "dgx-a100", "--gpus", "32", "--tp", "4", "--micro-batch", "4",
            "--global-batch", "512", "--seq-len", "2048", "--recompute", "full", "--dtype", "fp16",
            "--grad-reduce-bytes", "2", "--json"]


def _breakdown(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["time_breakdown"]


def test_torch_ddp_wrapper_adds_the_fp16_step_passes():
    """fp16 with PyTorch DDP: Adam 38 + unscale 8 + upcast 6 B per parameter, bucket copies 8 B per gradient, no
    zeroing: 60 B against the default 42 B, on the same parameters."""
    core, ddp = _breakdown(FP16_RUN), _breakdown(FP16_RUN + ["--dp-wrapper", "torch-ddp"])
    assert ddp["compute_s"] == core["compute_s"]
    assert ddp["optimizer_s"] > core["optimizer_s"] * 1.3
    assert ddp["optimizer_s"] < core["optimizer_s"] * 60 / 42


def test_bf16_local_buffers_change_only_the_division_pass():
    bf16 = [a if a != "fp16" else "bf16" for a in FP16_RUN if a not in ("--grad-reduce-bytes", "2")]
    core, local = _breakdown(bf16), _breakdown(bf16 + ["--dp-wrapper", "local-buffers"])
    assert local["optimizer_s"] > core["optimizer_s"]  # the 1/dp division of the fp32 buffer (8 B)
    assert local["optimizer_s"] < core["optimizer_s"] * 50 / 42


@pytest.mark.parametrize("args, message", [
    (["--dp-wrapper", "nonsense"], "'nonsense' is not one of 'megatron-core', 'local-buffers', 'local-coalesced', "
                                   "'torch-ddp'"),
    (["--zero", "3", "--zero-reduce-to-owners"], "--zero-reduce-to-owners needs --zero 1 or 2 (zero=3)"),
    (["--zero-reduce-to-owners"], "--zero-reduce-to-owners needs --zero 1 or 2 (zero=0)"),
])
def test_bad_choices_exit_2_with_one_error_line(args, message):
    result = runner.invoke(app, FP16_RUN[:-1] + args)
    assert result.exit_code == 2
    assert message in result.output and result.output.strip().count("\n") == 0


def test_zero1_reduce_to_owners_lengthens_the_exposed_dp_time():
    zero1 = FP16_RUN + ["--zero", "1", "--no-overlap-grad-reduce"]
    plain, owners = _breakdown(zero1), _breakdown(zero1 + ["--zero-reduce-to-owners"])
    assert owners["dp_exposed_s"] > plain["dp_exposed_s"]
    assert owners["compute_s"] == plain["compute_s"]
