"""The parameters a pipeline stage holds (DP message sizes, optimizer step) against the model's own count."""

from __future__ import annotations

import pytest

from distcalc.analyze.blocks import stage_parameters
from distcalc.compute import model_dims
from distcalc.model import load_model


@pytest.mark.parametrize("name", ["llama3-8b", "llama2-7b", "gpt3-175b", "mixtral-8x7b"])
def test_one_stage_holds_the_whole_model(name):
    """With pp = 1 the only stage holds every layer, the embedding and (untied) the output layer: the model's
    parameter count (ModelSpec.parameters, counted independently) up to the final norm's h weights."""
    spec = load_model(name)
    held = float(stage_parameters(model_dims(spec), 1, 1, 1))
    assert held == pytest.approx(spec.parameters, abs=4 * spec.hidden_size)


def test_untied_output_layer_counts_on_a_single_stage_only_once_split():
    """Llama 3 8B (untied, V·h = 525M each): one stage holds both matrices; with pp = 2 the larger end stage
    holds one of them."""
    d = model_dims(load_model("llama3-8b"))
    one = float(stage_parameters(d, 1, 1, 1))
    two = float(stage_parameters(d, 1, 2, 1))
    assert one - 2 * two == pytest.approx(-(2 * max(d.embedding_parameters, d.lm_head_parameters))
                                          + d.embedding_parameters + d.lm_head_parameters, rel=1e-9)


def test_batch_parameters_per_gpu_follow_each_rows_own_layer_split():
    """The step model computes the stage layer split once per evaluation (analyze.core) and hands it to the DP
    block: in a batch mixing even, embedding/loss-split and uneven-end pipelines, every configuration's
    parameters per GPU are those of its own split (stage_parameters, which computes the split itself)."""
    import numpy as np

    from distcalc.analyze import evaluate_batch

    d = model_dims(load_model("llama3-8b"))
    rows = [  # (pp, account_for_embedding_and_loss, first_stage_layers, last_stage_layers)
        (1, 0, 0, 0), (2, 0, 0, 0), (4, 0, 0, 0), (2, 1, 0, 0), (4, 0, 5, 0), (4, 0, 0, 8), (4, 0, 2, 3)]
    pp, split, first, last = (np.array(col) for col in zip(*rows))
    batch = {"tp": 2, "pp": pp, "dp": 2, "global_batch": 64, "micro_batch": 1, "seq_len": 4096,
             "account_for_embedding_and_loss": split, "first_stage_layers": first, "last_stage_layers": last}
    out = evaluate_batch("llama3-8b", "dgx-h100", batch, memory=False)
    want = stage_parameters(d, 2, pp, 1, split, first, last)
    assert np.asarray(out["parameters_per_gpu"]) == pytest.approx(want, rel=1e-12)
    assert len(set(np.round(want).tolist())) >= 5  # the rows really differ
