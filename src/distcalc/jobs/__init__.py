"""Jobs: one request model (pydantic, the CLI's option names and defaults) and one function per command that
turns a request into the command's ``--json`` payload. The CLI and the web API both call these, so the two
outputs are the same object by construction.

Nothing here renders; every number comes from the library modules below (analyze, memory, search,
collective, simulate)."""

from __future__ import annotations

from distcalc.jobs.jsonable import to_jsonable

__all__ = ["to_jsonable"]
