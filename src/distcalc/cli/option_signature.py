"""Options declared once and spliced into a command's signature (what typer reads), for a command function
that takes them as ``**options``: the parallel configuration's (:mod:`.config_options`) and the topology's
(:mod:`.topology_options`)."""

from __future__ import annotations

import inspect
from typing import Any, Callable


def insert_options(after: str, options: dict[str, tuple[Any, Any]]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``options`` (``{name: (Annotated[type, typer.Option(...)], default)}``, in order) enter the
    function's signature right after its parameter ``after``; the function receives them in its ``**kwargs``."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(function, eval_str=True)
        own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        cut = [p.name for p in own].index(after) + 1
        added = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                   annotation=annotation)
                 for name, (annotation, default) in options.items()]
        function.__signature__ = signature.replace(parameters=own[:cut] + added + own[cut:])  # type: ignore[attr-defined]
        return function

    return decorate
