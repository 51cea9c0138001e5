"""An option that several commands offer is defined once: its help comes from the schema's field description
(the topology and link options: :class:`distcalc.topology_schema.TopologyFields`), and every command shows
the same words for it."""

from __future__ import annotations

import click
import pytest
import typer.main

from distcalc.cli import app
from distcalc.jobs.analyze import AnalyzeRequest
from distcalc.jobs.collective import CollectiveRequest, TopologyRequest
from distcalc.jobs.simulate import SimulateRequest
from distcalc.topology_schema import TopologyFields

GROUP = typer.main.get_command(app)
CONTEXT = click.Context(GROUP)
TOPOLOGY_NAMES = [name for name in TopologyFields.model_fields if name != "kind"]
LINKS = ["gpus_per_node", "intra_bandwidth", "intra_latency", "inter_bandwidth", "inter_latency"]


def _params(command: str, group: str | None = None) -> dict[str, click.Parameter]:
    found = GROUP.get_command(CONTEXT, group or command)
    if group is not None:
        found = found.get_command(click.Context(found), command)
    return {p.name: p for p in found.params}


@pytest.mark.parametrize("command", ["collective", "simulate"])
def test_every_topology_field_is_an_option_with_the_schemas_help_and_default(command):
    params = _params(command)
    for name in TOPOLOGY_NAMES:
        field = TopologyFields.model_fields[name]
        option = params[name]
        assert option.opts == ["--" + name.replace("_", "-")]
        assert option.help.startswith(str(field.description)), (command, name, option.help)
        assert option.default == field.default, (command, name)


@pytest.mark.parametrize("name", LINKS)
def test_analyze_collective_and_simulate_describe_a_link_option_alike(name):
    description = str(TopologyFields.model_fields[name].description)
    helps = {command: _params(command)[name].help for command in ("analyze", "collective", "simulate")}
    assert all(text.startswith(description) for text in helps.values()), helps
    assert "[default: the cluster's]" in helps["analyze"]
    assert helps["collective"] == helps["simulate"]


@pytest.mark.parametrize("name", LINKS)
def test_the_analyze_request_describes_a_link_override_as_the_schema_does(name):
    """The web API's analyze request (its OpenAPI schema) reads each link field's description from the schema;
    it stays an override: None, the cluster's."""
    field, schema = AnalyzeRequest.model_fields[name], TopologyFields.model_fields[name]
    assert field.description == schema.description
    assert field.annotation == schema.annotation
    assert field.default is None


def test_the_topology_commands_differ_only_where_the_command_does_more():
    collective, simulate = _params("collective"), _params("simulate")
    differ = {name for name in TOPOLOGY_NAMES if collective[name].help != simulate[name].help}
    assert differ == {"size", "algorithm"}  # collective also takes a size range, and --algorithm nccl
    assert "range" in collective["size"].help and "nccl" in collective["algorithm"].help


def test_every_json_switch_reads_the_same():
    helps = {(group, command): _params(command, group)["json_output"].help
             for group, command in [(None, "analyze"), (None, "memory"), (None, "search"), (None, "collective"),
                                    (None, "simulate"), (None, "topologies"), (None, "validate"), (None, "presets"),
                                    (None, "calibrate"), ("bench", "collectives"), ("bench", "training"),
                                    ("bench", "gemm")]}
    assert set(helps.values()) == {"print one JSON object"}, helps


@pytest.mark.parametrize("command", ["analyze", "memory"])
def test_gpus_and_model_read_the_same_in_analyze_and_memory(command):
    params, search = _params(command), _params("search")
    assert params["gpus"].help == _params("analyze")["gpus"].help
    assert params["gpus"].help.startswith("total GPUs [default: ")
    assert params["model"].help.startswith(search["model"].help)


def test_requests_keep_their_field_order_with_the_schema_first():
    """The request models take the schema's fields (``kind`` first), then their own: the web API's field
    order is unchanged."""
    assert list(TopologyRequest.model_fields) == [*TopologyFields.model_fields, "cluster", "gpu"]
    assert list(CollectiveRequest.model_fields)[:len(TopologyFields.model_fields)] == list(TopologyFields.model_fields)
    assert list(SimulateRequest.model_fields)[-4:] == ["segments", "elements", "seed", "mode"]
