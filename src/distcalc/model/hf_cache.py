"""Resolve a Hugging Face repo id (``meta-llama/Meta-Llama-3-8B``) to the ``config.json`` already in the
local Hugging Face cache. Offline only: nothing is downloaded; ``huggingface_hub``'s cache API
(``try_to_load_from_cache``) reads the cache layout ``models--owner--name/snapshots/<rev>/config.json``.

The cache directory is read when the call is made: ``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub`` (the defaults documented by huggingface_hub's environment variables).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from distcalc.errors import ConfigError

#: ``owner/name`` as the Hub spells repo ids (letters, digits, ``-``, ``_``, ``.``).
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def looks_like_repo_id(text: str) -> bool:
    """True for ``owner/name`` (one slash, no file extension path such as ``dir/config.json``)."""
    return bool(REPO_ID.match(text)) and not text.lower().endswith((".json", ".yaml", ".yml"))


def hf_cache_dir() -> Path:
    """The hub cache directory huggingface_hub would use now (environment read at call time)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home).expanduser() / "hub"


def cached_config_path(repo_id: str) -> Path:
    """The cached ``config.json`` of ``repo_id``; :class:`ConfigError` saying how to get it when absent."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub is a runtime dependency
        raise ConfigError(f"model {repo_id!r} looks like a Hugging Face repo id but huggingface_hub is not "
                          "installed (pip install huggingface_hub)") from None
    cache = hf_cache_dir()
    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=str(cache))
    if not isinstance(found, str):
        raise ConfigError(
            f"model {repo_id!r}: no config.json for this Hugging Face repo in the local cache {str(cache)!r} "
            f"(distcalc works offline; fetch it once with `huggingface-cli download {repo_id} config.json` "
            "or pass the path of a config.json)")
    return Path(found)
