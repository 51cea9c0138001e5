"""422 answers: the field(s) an error is about and the message the CLI prints for the same input."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from distcalc.errors import DistcalcError
from distcalc.jobs.messages import blamed_fields, validation_item_message

UNPROCESSABLE = 422


def _validation_item(item: dict[str, Any]) -> dict[str, Any]:
    loc = [str(x) for x in item.get("loc", ()) if x != "body"]
    return {"field": loc[0] if loc else "", "message": validation_item_message(item), "type": item.get("type", "")}


async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    """A request that does not match the job's schema (the CLI's one-line format for pydantic errors)."""
    items = [_validation_item(dict(e)) for e in error.errors()]
    return JSONResponse(status_code=UNPROCESSABLE, content={
        "error": "; ".join(i["message"] for i in items), "field": items[0]["field"] if items else "",
        "detail": items})


def distcalc_error(fields: Any, error: DistcalcError) -> JSONResponse:
    """A library error: the CLI's message (``error: …`` without the prefix) and the fields it names."""
    message = str(error)
    named = blamed_fields(message, fields)
    return JSONResponse(status_code=UNPROCESSABLE, content={
        "error": message, "field": named[0] if named else "",
        "detail": [{"field": f, "message": message, "type": type(error).__name__} for f in named or [""]]})
