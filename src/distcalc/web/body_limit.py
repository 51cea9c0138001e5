"""ASGI middleware: answer 413 to a request body above ``max_bytes`` (declared or streamed)."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse


class BodyTooLarge(Exception):
    """Raised while streaming a body past the limit."""


class BodyLimit:
    """Reject bodies above ``max_bytes`` with 413 before any route reads them."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> JSONResponse:
        return JSONResponse(status_code=413, content={
            "error": f"request body above this server's limit of {self.max_bytes} bytes", "field": ""})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large()(scope, receive, send)
            return
        received = 0

        async def limited() -> Any:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise BodyTooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except BodyTooLarge:
            await self._too_large()(scope, receive, send)
