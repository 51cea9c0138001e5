"""What every job request shares: forbid unknown fields, resolve the model (preset, file or inline
config.json), and write itself as a run file (naming the field an error is about: :mod:`distcalc.jobs.messages`)."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from distcalc.model import ModelSpec, list_models, load_model, model_from_mapping
from distcalc.model.loader import unknown_model
from distcalc.run_file import DEFAULTS, dump_run_file


class JobRequest(BaseModel):
    """Base of the request models: the CLI's option names (underscores) and defaults. ``defer_build``: a
    request model builds its validator when first used, so a command builds only its own."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), defer_build=True)


class ModelRequest(JobRequest):
    """A request naming a model: a preset, a file path (CLI only) or an inline parsed config.json."""

    model: str = Field(DEFAULTS.model, description="model preset (or, on the CLI, a config.json / YAML path or a "
                                                   "Hugging Face repo id in the local cache)")
    model_config_json: Optional[dict[str, Any]] = Field(
        None, description="a parsed Hugging Face config.json (or ModelSpec fields) used instead of a preset; "
                          "`model` is then its name")

    def resolve_model(self, allow_files: bool) -> ModelSpec:
        """The spec: the inline config if given, else a preset, else (CLI only) a file path."""
        if self.model_config_json is not None:
            return model_from_mapping(dict(self.model_config_json), self.model or "uploaded")
        if allow_files:
            return load_model(self.model)
        key = self.model.strip().lower().replace("_", "-")
        if key not in list_models():
            raise unknown_model(self.model)  # a server never reads a path it is sent
        return load_model(key)


class PipelineRequest(ModelRequest):
    """A model request with a pipeline whose first and last stage may hold a chosen number of layers
    (Megatron-Core ``--decoder-first/last-pipeline-num-layers``; the other stages share the rest evenly)."""

    first_stage_layers: Optional[int] = Field(None, ge=1, description="layers on the first pipeline stage")
    last_stage_layers: Optional[int] = Field(None, ge=1, description="layers on the last pipeline stage")

    @property
    def ends(self) -> tuple[int, int]:
        """(first, last) stage layers, 0 where not given."""
        return self.first_stage_layers or 0, self.last_stage_layers or 0


def request_to_yaml(request: JobRequest, command: str) -> str:
    """The run file (``--config``) of ``request``: every field that differs from its default, keyed by option
    name (:func:`distcalc.run_file.dump_run_file`), so that ``distcalc COMMAND --config FILE`` reproduces it."""
    return dump_run_file(request.model_dump(mode="json", exclude_defaults=True), command)
