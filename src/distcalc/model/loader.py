"""Load a :class:`ModelSpec` from a preset name, a Hugging Face ``config.json`` or a YAML/JSON spec file."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from distcalc.errors import ConfigError
from distcalc.inputs import MAX_MODEL_FILE_BYTES, excerpt, read_data_file
from distcalc.model.fields import check_model_fields
from distcalc.model.hf import spec_from_hf_config
from distcalc.model.hf_cache import cached_config_path, looks_like_repo_id
from distcalc.suggest import did_you_mean
from distcalc.model.spec import ModelSpec
from distcalc.preset_files import parse_preset_yaml

# Fields only distcalc's own spec files carry; a Hugging Face config.json never has them.
_SPEC_ONLY_FIELDS = frozenset({"norm_type", "gated_mlp", "position_embedding", "attention_qkv_bias"})


def _preset_root() -> Any:
    return resources.files("distcalc") / "presets" / "models"


@lru_cache(maxsize=None)
def list_models() -> tuple[str, ...]:
    """Names of the shipped model presets (lowercase, hyphenated), sorted."""
    return tuple(sorted(p.name[: -len(".yaml")] for p in _preset_root().iterdir() if p.name.endswith(".yaml")))


@lru_cache(maxsize=None)
def _load_preset(name: str) -> ModelSpec:
    data = parse_preset_yaml((_preset_root() / f"{name}.yaml").read_text(encoding="utf-8"))
    data.setdefault("name", name)
    return ModelSpec(**data)


def _is_hf_config(data: dict[str, Any]) -> bool:
    """A Hugging Face config.json: names a model_type (or uses GPT-2's n_embd) and no distcalc-only field."""
    return ("model_type" in data or "n_embd" in data) and not _SPEC_ONLY_FIELDS & data.keys()


def _load_file(path: Path) -> ModelSpec:
    data = read_data_file(path, "model file", error=ConfigError, max_bytes=MAX_MODEL_FILE_BYTES)
    if not isinstance(data, dict):
        raise ConfigError(f"model file {str(path)!r} does not hold a mapping of fields (got {type(data).__name__})")
    check_model_fields(data, path)
    return model_from_mapping(data, path.parent.name if path.stem == "config" else path.stem)


def model_from_mapping(data: dict[str, Any], name: str) -> ModelSpec:
    """A model spec from an already parsed Hugging Face ``config.json`` or a mapping of :class:`ModelSpec`
    fields (``name`` is used when the mapping has none). Field types and ranges are checked first
    (:func:`distcalc.model.fields.check_model_fields`)."""
    check_model_fields(data, name, "model")
    if _is_hf_config(data):
        return spec_from_hf_config(data, name)
    return ModelSpec(**{"name": name, **data})


def _load_hf_cached(repo_id: str) -> ModelSpec:
    """The model of a Hugging Face repo id from its cached config.json (named after the repo), read and checked
    like any model file (:func:`distcalc.inputs.read_data_file`, :func:`model_from_mapping`)."""
    path = cached_config_path(repo_id)
    data = read_data_file(path, f"the cached config.json of {excerpt(repo_id)}:", error=ConfigError,
                          max_bytes=MAX_MODEL_FILE_BYTES, json_only=True)
    if not isinstance(data, dict):
        raise ConfigError(f"the cached config.json of {excerpt(repo_id)} does not hold a mapping of fields")
    return model_from_mapping(data, repo_id.split("/")[-1])


def load_model(name_or_path: str | Path) -> ModelSpec:
    """A model spec from a preset name (e.g. ``llama3-70b``), a ``config.json`` (or a directory holding
    one), a YAML/JSON file of :class:`ModelSpec` fields, or a Hugging Face repo id (``owner/name``) whose
    config.json is in the local Hugging Face cache (:mod:`distcalc.model.hf_cache`; offline).

    Raises :class:`ConfigError` naming the valid presets when the name is neither a file nor a preset."""
    text = str(name_or_path)
    path = Path(text).expanduser()
    try:
        if path.is_dir() and (path / "config.json").is_file():
            path = path / "config.json"
        is_file = path.is_file()
    except OSError:  # a name too long for the file system: not a file, maybe a preset
        is_file = False
    if is_file:
        return _load_file(path)
    key = text.strip().lower().replace("_", "-")
    if key in list_models():
        return _load_preset(key)
    if looks_like_repo_id(text.strip()):
        return _load_hf_cached(text.strip())
    raise unknown_model(text)


def unknown_model(text: str) -> ConfigError:
    """The error for a model name that is neither a file, a preset nor a cached Hugging Face repo id (with a
    "did you mean" and the presets)."""
    key = text.strip().lower().replace("_", "-")
    return ConfigError(
        f"unknown model {excerpt(text)}{did_you_mean(key, list_models())}: not a file, not a preset and not a Hugging "
        f"Face repo id (owner/name); presets: {', '.join(list_models())} (distcalc presets models lists them)"
    )
