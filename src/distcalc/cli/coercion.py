"""Option values that need no conversion skip typer's per-option pydantic ``TypeAdapter``.

Recent typer (0.2x, which vendors click) converts every option's value with a pydantic ``TypeAdapter`` that it
builds for that option the first time a value is processed — also when the value is ``None`` (an option left
out), a member of the option's enum, or a default that already has the option's type. ``distcalc analyze``
processes ~65 options, so a plain run built ~50 adapters (and imported typer's adapter module) only to hand
back the values unchanged. :func:`defer_coercion` gives each option a :class:`DeferredCoercion` that returns
those values as typer's adapter would and builds typer's own coercion for any other value (a string from the
command line, an out-of-range number), so what a command receives and every error it prints are typer's.

With an older typer (options converted by click's types, no ``_runtime_param``) this does nothing.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Iterable

#: Doubles hold every integer up to 2**53 exactly: pydantic's lax float validation of such an int is float().
_EXACT_FLOAT_INT = 2**53


class DeferredCoercion:
    """Stands in for typer's coercion of one option (its ``RuntimeParam``) until a value needs converting."""

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor

    def passes(self, value: Any) -> tuple[bool, Any]:
        """``(True, result)`` where typer's adapter would return ``result`` for ``value`` without converting
        anything; ``(False, None)`` where typer's own coercion must decide."""
        info = self.descriptor.parameter_info
        if self.descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
            return False, None
        if value is None:  # typer: an absent single value stays None before any adapter is asked
            return True, None
        annotation = self.descriptor.annotation
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            return (True, value) if type(value) is annotation else (False, None)  # a member is its own choice
        if annotation is str:
            return (True, value) if type(value) is str else (False, None)
        if annotation is int and type(value) is int:
            result = value
        elif annotation is float and type(value) is float:
            result = value
        elif annotation is float and type(value) is int and abs(value) <= _EXACT_FLOAT_INT:
            result = float(value)
        else:
            return False, None
        if getattr(info, "clamp", False):
            return False, None
        low, high = getattr(info, "min", None), getattr(info, "max", None)
        if result != result or (low is not None and result < low) or (high is not None and result > high):
            return False, None  # NaN or out of bounds: typer's adapter says what is wrong
        return True, result

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        """The value typer's coercion would give: directly where :meth:`passes`, else by typer's own."""
        if not (param.multiple or param.nargs == -1):
            done, result = self.passes(value)
            if done:
                return result
        param._runtime_param = None  # typer builds (and keeps) its own coercion from here on
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def defer_coercion(params: Iterable[Any]) -> None:
    """Give every typer option among ``params`` whose coercion is not built yet a :class:`DeferredCoercion`."""
    for param in params:
        if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = DeferredCoercion(param.type_descriptor)
