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
