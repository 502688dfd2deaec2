"""Health, readiness and metrics over plain HTTP, on a thread and an event loop of their own.

One implementation for every process (controller-runtime's health-probe and metrics servers): `serve`,
`bind` and `certs controller` each start a `HealthListener` with their own checks. It shares nothing with the
process's work: not its event loop (`serve`'s admission traffic, with its connection cap and slow clients),
not its threads. A probe never queues behind a webhook client.

* `GET /healthz`: 200 `{"status":"ok"}` while every liveness check passes, else 503 `{"error": "not alive:
  ..."}`. A check is a callable returning None when fine, or the reason.
* `GET /readyz`: the same with the readiness checks (`{"status":"ready"}`, 503 `{"error": "not ready: ..."}`).
* `GET /metrics`: Prometheus text, when the process gives a renderer.

Anything else is a one-line JSON 404 (405 for another method). Idle connections close after a few seconds
(probes open a connection each time), which also bounds how long a request's headers may take.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web

Check = Callable[[], str | None]
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
SERVER_HEADER = "dra-capacity"
IDLE_SECONDS = 5.0
START_SECONDS = 10.0


def _json(status: int, payload: Any) -> web.Response:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return web.Response(status=status, body=body, content_type="application/json")


def failing(checks: Sequence[Check]) -> list[str]:
    """The reasons of the checks that fail; a check that raises fails with its exception's text."""
    reasons = []
    for check in checks:
        try:
            reason = check()
        except Exception as exc:  # a broken check is a failed one, never a 500
            reason = f"{type(exc).__name__}: {exc}"
        if reason is not None:
            reasons.append(reason)
    return reasons


@web.middleware
async def _json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _json(exc.status, {"error": f"{request.method} {request.path}: {exc.reason.lower()}"})


async def _server_header(request: web.Request, response: web.StreamResponse) -> None:
    response.headers["Server"] = SERVER_HEADER


def health_app(
    live: Sequence[Check],
    ready: Sequence[Check],
    metrics: Callable[[], bytes] | None = None,
    metrics_content_type: str = PROMETHEUS_TEXT,
) -> web.Application:
    """The listener's application (also mountable on a loop of the caller's, in tests)."""
    app = web.Application(middlewares=[_json_errors])
    app.on_response_prepare.append(_server_header)

    async def healthz(request: web.Request) -> web.Response:
        reasons = failing(live)
        if reasons:
            return _json(503, {"error": "not alive: " + "; ".join(reasons)})
        return _json(200, {"status": "ok"})

    async def readyz(request: web.Request) -> web.Response:
        reasons = failing(ready)
        if reasons:
            return _json(503, {"error": "not ready: " + "; ".join(reasons)})
        return _json(200, {"status": "ready"})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if metrics is not None:
        render = metrics

        async def metrics_view(request: web.Request) -> web.Response:
            return web.Response(body=render(), headers={"Content-Type": metrics_content_type})

        app.router.add_get("/metrics", metrics_view)
    return app


class HealthListener:
    """`health_app` served on `host:port` from a daemon thread running its own event loop.

    `start()` binds before it returns (port 0 picks a free one: see `.port`) and raises OSError when it
    cannot; `stop()` closes the listener and ends the thread."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        live: Sequence[Check] = (),
        ready: Sequence[Check] = (),
        metrics: Callable[[], bytes] | None = None,
        metrics_content_type: str = PROMETHEUS_TEXT,
        name: str = "health",
        idle_timeout: float = IDLE_SECONDS,
    ) -> None:
        self.host = host
        self.port = port
        self._app = health_app(live, ready, metrics, metrics_content_type)
        self._name = name
        self._idle = idle_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._bound = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> int:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        if not self._bound.wait(START_SECONDS):
            raise OSError(f"the {self._name} listener did not start within {START_SECONDS:g} s")
        if self._error is not None:
            raise self._error
        return self.port

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            try:
                loop.run_until_complete(self._listen())
            except BaseException as exc:
                self._error = exc
                return
            finally:
                self._bound.set()
            loop.run_forever()
            if self._runner is not None:
                loop.run_until_complete(self._runner.cleanup())
        finally:
            loop.close()

    async def _listen(self) -> None:
        runner = web.AppRunner(
            self._app,
            handle_signals=False,
            access_log=None,
            keepalive_timeout=self._idle,
            shutdown_timeout=1.0,
        )
        await runner.setup()
        self._runner = runner
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        ports = [address[1] for address in runner.addresses if isinstance(address, tuple)]
        if ports:
            self.port = int(ports[0])

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        with contextlib.suppress(RuntimeError):  # the loop already closed
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)


class LoopHeartbeat:
    """A liveness check for a process whose work runs on an event loop the health listener does not share:
    the loop beats every `interval` seconds; a loop that has not beaten for `stall` seconds (wedged) fails
    `/healthz`, so the kubelet restarts the process, as it would a server that stopped answering."""

    def __init__(self, interval: float = 1.0, stall: float = 60.0) -> None:
        self.interval = interval
        self.stall = stall
        self.last = time.monotonic()

    async def run(self) -> None:
        while True:
            self.last = time.monotonic()
            await asyncio.sleep(self.interval)

    def check(self) -> str | None:
        quiet = time.monotonic() - self.last
        if quiet > self.stall:
            return f"event loop unresponsive for {quiet:.0f} s"
        return None
