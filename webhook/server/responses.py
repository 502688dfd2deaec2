"""The server's plain answers: JSON bodies, one-line JSON errors (aiohttp's own 404/405 included), no
`Server` header naming versions."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from webhook.server import envelope
from webhook.server.metrics import WebhookMetrics
from webhook.server.protocol import SERVER_HEADER

JSON = "application/json"

METRICS_KEY = web.AppKey("metrics", WebhookMetrics)


def json_response(status: int, payload: Any) -> web.Response:
    return web.Response(
        status=status, body=json.dumps(payload, separators=(",", ":")).encode(), content_type=JSON
    )


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=envelope.error_body(message), content_type=JSON, headers=headers)


@web.middleware
async def json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """aiohttp's own 404/405/... become one-line JSON errors like every other refusal; 404 and 405 counted."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        metrics = request.app.get(METRICS_KEY)
        if metrics is not None and exc.status in (404, 405):
            metrics.unrouted.labels(str(exc.status)).inc()
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        reason = f"{request.method} {request.path}: {exc.reason.lower()}"
        return error_response(exc.status, reason, headers)


async def no_server_version(request: web.Request, response: web.StreamResponse) -> None:
    """No `Server` header naming aiohttp and Python versions (a scanner's first question)."""
    response.headers["Server"] = SERVER_HEADER
