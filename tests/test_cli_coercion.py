"""Options whose values need no conversion skip typer's per-option pydantic adapter (distcalc.cli.coercion): the
value a command receives, and the error it prints, must be exactly typer's own."""

import enum
import math
from typing import Annotated, Any, Optional

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.cli import COMMANDS, _module_commands, app
from distcalc.cli.coercion import DeferredCoercion, defer_coercion


class Colour(str, enum.Enum):
    RED = "red"
    BLUE = "blue"


class Other(enum.Enum):
    RED = "red"


def _command() -> Any:
    """A typer command with one option per kind the deferred coercion handles (and one it leaves alone)."""
    sub = typer.Typer()

    @sub.command()
    def run(
        count: Annotated[int, typer.Option()] = 1,
        low: Annotated[int, typer.Option(min=0, max=3)] = 0,
        size: Annotated[float, typer.Option(min=1)] = 5,
        share: Annotated[float, typer.Option(min=0.0, max=0.99)] = 0.1,
        clamped: Annotated[float, typer.Option(min=0.0, max=1.0, clamp=True)] = 0.5,
        name: Annotated[Optional[str], typer.Option()] = None,
        colour: Annotated[Colour, typer.Option()] = Colour.RED,
        many: Annotated[Optional[list[int]], typer.Option()] = None,
    ) -> None:
        """One of each."""

    return typer.main.get_command(sub)


COMMAND = _command()
TYPER_HAS_RUNTIME_PARAMS = all(hasattr(p, "_runtime_param") for p in COMMAND.params)
pytestmark = pytest.mark.skipif(not TYPER_HAS_RUNTIME_PARAMS, reason="this typer converts values with click types")

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**60, 2**60), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6), st.sampled_from(["1", "2.5", "red", "RED", "blue", "nan", "-1", "1e9"]),
    st.sampled_from(list(Colour) + list(Other)), st.just(2**53), st.just(2**53 + 1))


def _typer_result(param: Any, value: Any) -> tuple[str, Any]:
    """What typer's own coercion makes of ``value``: ('ok', result) or ('error', message)."""
    param._runtime_param = None
    context = COMMAND.make_context("run", [], resilient_parsing=True)
    try:
        return "ok", param.get_runtime_param().coerce(value, param=param, ctx=context)
    except Exception as error:  # noqa: BLE001 (the comparison is of whatever typer raises)
        return "error", f"{type(error).__name__}: {error}"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, len(COMMAND.params) - 1), value=VALUES)
def test_a_passed_value_is_what_typer_would_return(index, value):
    param = COMMAND.params[index]
    done, result = DeferredCoercion(param.type_descriptor).passes(value)
    if not done or param.multiple:
        return
    outcome, expected = _typer_result(param, value)
    assert outcome == "ok", (param.name, value, expected)
    assert _same(result, expected), (param.name, value, result, expected)


@settings(max_examples=200, deadline=None)
@given(index=st.integers(0, len(COMMAND.params) - 1), value=VALUES)
def test_every_value_comes_out_as_typer_makes_it(index, value):
    """Through :meth:`DeferredCoercion.coerce` (fast path or typer's), the result or the error is typer's."""
    param = COMMAND.params[index]
    expected = _typer_result(param, value)
    param._runtime_param = None
    defer_coercion([param])
    assert isinstance(param._runtime_param, DeferredCoercion)
    context = COMMAND.make_context("run", [], resilient_parsing=True)
    try:
        got = "ok", param.get_runtime_param().coerce(value, param=param, ctx=context)
    except Exception as error:  # noqa: BLE001
        got = "error", f"{type(error).__name__}: {error}"
    assert got[0] == expected[0] and (_same(got[1], expected[1]) if got[0] == "ok" else got[1] == expected[1])


def test_the_passing_kinds_pass():
    """The values a plain ``distcalc analyze`` gives its options (left out, enum defaults, typed defaults, an int
    default of a float option) need no adapter; strings for numbers, NaN and out-of-range numbers do."""
    by_name = {p.name: DeferredCoercion(p.type_descriptor) for p in COMMAND.params}
    assert by_name["name"].passes(None) == (True, None)
    assert by_name["colour"].passes(Colour.BLUE) == (True, Colour.BLUE)
    assert by_name["count"].passes(7) == (True, 7)
    done, value = by_name["size"].passes(5)
    assert done and type(value) is float and value == 5.0
    for name, value in [("count", "7"), ("low", 4), ("share", math.nan), ("colour", "blue"), ("colour", Other.RED),
                        ("clamped", 0.5), ("count", True), ("size", 2**53 + 1)]:
        assert by_name[name].passes(value) == (False, None), (name, value)


def test_analyze_options_are_deferred_and_results_unchanged():
    """The command line installs the deferred coercion on a command's options; a value given as text still goes
    through typer (its error message included)."""
    _module_commands.cache_clear()  # fresh command objects: no option has converted a value yet
    bad = CliRunner().invoke(app, ["analyze", "--tp", "abc"])
    assert bad.exit_code == 2 and "'--tp'" in bad.output and "valid integer" in bad.output
    params = {p.name: p for p in _module_commands(COMMANDS["analyze"][0])["analyze"].params}
    assert isinstance(params["model"]._runtime_param, DeferredCoercion)
    assert isinstance(params["pp"]._runtime_param, DeferredCoercion)
    assert not isinstance(params["tp"]._runtime_param, DeferredCoercion)  # "abc" went through typer's adapter

