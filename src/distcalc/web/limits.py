"""What the web server accepts: request size and the search/collective/simulate space it will compute.

The caps keep one request from occupying the machine (a search over many GPU counts, a simulation of
thousands of ranks); the CLI has none of them."""

from __future__ import annotations

from typing import Any

from distcalc.errors import ConfigError

#: Largest request body (a Hugging Face config.json is a few KiB).
MAX_BODY_BYTES = 256 * 1024
#: Analyze/memory: the per-stage work grows with pp and an uploaded model's layer count (real models have
#: at most a few hundred layers and pipelines of at most a few dozen stages).
MAX_PIPELINE_STAGES = 1024
MAX_LAYERS = 4096
MAX_GPUS = 1 << 20
#: Search: at most this many GPU counts, this many GPUs, this many rows returned.
MAX_SEARCH_COUNTS = 16
MAX_SEARCH_GPUS = 4096
MAX_SEARCH_TOP = 100
#: Collective: at most this many sizes in a range and this many ranks.
MAX_COLLECTIVE_SIZES = 64
MAX_COLLECTIVE_GPUS = 65536
#: Simulate: every rank's buffers are executed, so N and the chunk length are kept small.
MAX_SIMULATE_GPUS = 512
MAX_SIMULATE_ELEMENTS = 64


def check_at_most(option: str, value: int, limit: int) -> None:
    """Raise :class:`ConfigError` naming the option when ``value`` is above this server's ``limit``."""
    if value > limit:
        raise ConfigError(f"{option} {value} is above this server's limit {limit} (the CLI has no such limit)")


def check_layout(request: Any) -> None:
    """Caps of an analyze or memory request: pp, GPUs and an uploaded model's layers."""
    check_at_most("--pp", request.pp or 1, MAX_PIPELINE_STAGES)
    check_at_most("--gpus", request.gpus or 1, MAX_GPUS)
    config = request.model_config_json or {}
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if isinstance(config.get(key), int):
            check_at_most(f"--model: uploaded {key}", config[key], MAX_LAYERS)
