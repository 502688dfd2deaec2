"""aiohttp's per-connection handler with two more defences: a header-read timeout and JSON refusals of
malformed requests.

* **Headers in time.** aiohttp bounds a request's header phase only by the keep-alive timeout (120 s here,
  above the apiserver's 90 s idle timeout), so a client sending one header byte at a time (slowloris) held a
  connection, and a slot under the connection cap, for two minutes. Here the headers of each request must be
  complete within `header_timeout` seconds of its first byte (of the connection's start, for the first one:
  kube-apiserver writes its request as soon as it connects); else the connection is closed and counted.
* **Malformed requests** (aiohttp's parser refuses them before any route runs) are answered with the
  one-line JSON error of every other refusal, not aiohttp's plain-text 400, and logged in one line without a
  traceback: oversized or too many header fields are 431 (RFC 6585), anything else 400.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import http_exceptions, web, web_protocol
from aiohttp.web_request import BaseRequest

from webhook.server import envelope
from webhook.server.logs import log_event

HEADERS_TOO_LARGE = "request header fields too large"
SERVER_HEADER = "dra-capacity"


def refusal_status(exc: BaseException | None) -> tuple[int, str]:
    """The status and message for a request aiohttp's parser refused."""
    if isinstance(exc, http_exceptions.LineTooLong) or (
        isinstance(exc, http_exceptions.BadHttpMessage) and "too many headers" in str(exc).lower()
    ):
        return 431, f"{HEADERS_TOO_LARGE}: {_reason(exc)}"
    return 400, f"malformed HTTP request: {_reason(exc)}"


def _reason(exc: BaseException | None) -> str:
    if isinstance(exc, http_exceptions.HttpProcessingError):
        text = exc.message
    else:
        text = str(exc) if exc is not None else ""
    return " ".join(str(text).split())[:200] or "unreadable request"


class HardenedHandler(web_protocol.RequestHandler):
    """`RequestHandler` with the header-read timeout and the JSON refusals of the module docstring."""

    def __init__(
        self,
        *args: Any,
        header_timeout: float,
        on_header_timeout: Callable[[], None] | None = None,
        refusal_logger: logging.Logger | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = header_timeout
        self._on_header_timeout = on_header_timeout
        self._refusal_logger = refusal_logger
        self._header_timer: asyncio.TimerHandle | None = None

    def _waiting_for_headers(self) -> bool:
        return not self._request_in_progress and not self._messages

    def _arm(self) -> None:
        if self._header_timer is None and self._header_timeout > 0:
            self._header_timer = self._loop.call_later(self._header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport is None or not self._waiting_for_headers():
            return
        if self._on_header_timeout is not None:
            self._on_header_timeout()
        self.force_close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if data and self._waiting_for_headers():
            self._arm()
        super().data_received(data)
        if self._messages or self._request_in_progress:
            self._disarm()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status != 400 or not isinstance(exc, http_exceptions.HttpProcessingError):
            return super().handle_error(request, status, exc, message)
        code, text = refusal_status(exc)
        if self._refusal_logger is not None:
            log_event(
                self._refusal_logger,
                logging.WARNING,
                "malformed request refused",
                code=code,
                error=text,
                remote=request.remote,
            )
        response = web.Response(
            status=code,
            body=envelope.error_body(text),
            content_type="application/json",
            headers={"Server": SERVER_HEADER},  # no aiohttp and Python versions, as on every answer
        )
        response.force_close()
        return response


def handler_factory(
    server: web.Server,
    header_timeout: float,
    on_header_timeout: Callable[[], None] | None = None,
    logger: logging.Logger | None = None,
) -> Callable[[], asyncio.Protocol]:
    """A protocol factory for `loop.create_server` building `HardenedHandler`s for aiohttp's `server` (with
    the handler arguments its runner was given)."""
    kwargs: dict[str, Any] = dict(server._kwargs)
    loop = server._loop

    def build() -> asyncio.Protocol:
        return HardenedHandler(
            server,
            loop=loop,
            header_timeout=header_timeout,
            on_header_timeout=on_header_timeout,
            refusal_logger=logger,
            **kwargs,
        )

    return build
