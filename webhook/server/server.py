"""The running webhook server: its HTTPS listener, certificate reload, warm-up and workers (the plain-HTTP
probe and metrics listeners are the process's `procrt.manager.Manager`'s, fed by `heartbeat` and `not_ready`).

Every admission endpoint (webhook/server/endpoints.py) is registered once in the app (webhook/server/app.py)
and served by one request path (webhook/server/admit.py): a small review its handler calls cheap is judged on
the event loop, every other one by a worker (webhook/server/workers.py) off the loop, so probes are never
starved, and each is answered before the caller's deadline. `/healthz` says the process is alive; `/readyz`
turns 200 only once the serving certificate is loaded and the workers have warmed up. The limits
(webhook/server/limits.py) are documented in docs/troubleshooting.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from certs.files import ServingPair
from procrt.health import LoopHeartbeat
from procrt.manager import Manager
from webhook.server.admit import ROUTES_KEY
from webhook.server.app import Readiness, create_app, new_workers
from webhook.server.connections import ConnectionGuard, GuardedSite, ThrottleReport, shrink_tls_read_buffer
from webhook.server.endpoints import DuplicateEndpoint, Endpoint, EndpointSource
from webhook.server.fairness import parse_networks
from webhook.server.handshakes import HandshakeThread
from webhook.server.judging import AdmissionHandler, HandlerCall, Outcome
from webhook.server.limits import ServerLimits
from webhook.server.logs import get_logger, log_event
from webhook.server.memory import MIN_INTERVAL, note_work, pin_mmap_threshold, trim_if_due
from webhook.server.metrics import WebhookMetrics
from webhook.server.protocol import handler_factory
from webhook.server.tlsreload import CertificateReloader
from webhook.server.workers import AdmissionWorkers

__all__ = [
    "AdmissionHandler",
    "CertificateEvents",
    "DuplicateEndpoint",
    "Endpoint",
    "HandlerCall",
    "Listen",
    "Outcome",
    "Readiness",
    "WebhookServer",
    "create_app",
    "process_manager",
]


class CertificateEvents:
    """Reloader callbacks: count each load, publish the leaf's expiry, log what is served from now on."""

    def __init__(self, metrics: WebhookMetrics, logger: logging.Logger) -> None:
        self.metrics = metrics
        self.logger = logger

    def loaded(self, pair: ServingPair) -> None:
        self.metrics.certificate_reloads.labels("success").inc()
        self.metrics.certificate_expiry.set(pair.not_valid_after.timestamp())
        log_event(
            self.logger,
            logging.INFO,
            "serving certificate loaded",
            serial=format(pair.leaf.serial_number, "x"),
            not_after=pair.not_valid_after.isoformat(),
        )

    def failed(self, message: str) -> None:
        self.metrics.certificate_reloads.labels("failure").inc()
        log_event(
            self.logger,
            logging.WARNING,
            "serving certificate not reloaded; keeping the current one",
            error=message,
        )


@dataclass(frozen=True)
class Listen:
    host: str
    port: int


class WebhookServer:
    """The running webhook: HTTPS listener, certificate reload and warm-up (`serve_metrics`: /metrics on the
    HTTPS listener too, unless the process serves them on an address of their own).

    Reviews are judged by `handler` on worker threads, or, with `worker_factory` (a picklable callable that
    builds the handler), in worker processes that each build their own; either way `handler` (when given)
    judges the small, cheap reviews on the event loop.
    """

    def __init__(
        self,
        handler: AdmissionHandler | None,
        reloader: CertificateReloader,
        listen: Listen,
        *,
        serve_metrics: bool = True,
        metrics: WebhookMetrics | None = None,
        logger: logging.Logger | None = None,
        limits: ServerLimits | None = None,
        worker_factory: Callable[[], AdmissionHandler] | None = None,
        pod_router: EndpointSource | None = None,
        inline_routes: Mapping[str, HandlerCall] | None = None,
        endpoints: Sequence[Endpoint] = (),
    ) -> None:
        if handler is None and worker_factory is None:
            raise ValueError("WebhookServer needs a handler or a worker_factory")
        self.pod_router = pod_router
        self.inline_routes = dict(inline_routes or {})
        self.endpoints = tuple(endpoints)
        self.handler = handler
        self.worker_factory = worker_factory
        self.reloader = reloader
        self.listen = listen
        self.serve_metrics = serve_metrics
        self.heartbeat = LoopHeartbeat()
        self.metrics = metrics if metrics is not None else WebhookMetrics()
        self.logger = logger or get_logger()
        self.limits = limits if limits is not None else ServerLimits()
        self.readiness = Readiness()
        self.warmed = asyncio.Event()
        self.guard = ConnectionGuard(
            self.limits.max_connections,
            self.metrics.refused_connections.inc,
            protected=parse_networks(",".join(self.limits.protected_sources)),
            per_source=self.limits.max_connections_per_source,
            on_throttled=ThrottleReport(
                lambda s, a: self.metrics.throttled_connections.labels(s, a).inc(), self.logger
            ),
        )
        # The costly step of each TLS handshake runs here, off the event loop (webhook/server/handshakes.py).
        self.handshakes = HandshakeThread()
        self.metrics.connections.set_function(lambda: len(self.guard))
        self.workers: AdmissionWorkers | None = None
        self._app: web.Application | None = None
        self._runners: list[web.AppRunner] = []
        self.port = 0

    async def start(self) -> None:
        """Bind the HTTPS listener (port 0 picks a free one; see `.port`). The app's startup starts the
        warm-up and the certificate polling; its cleanup stops them and the workers."""
        shrink_tls_read_buffer()
        pin_mmap_threshold()
        ssl_context = self.reloader.server_context
        self.readiness.certificates_loaded = True
        try:
            self.workers = new_workers(self.limits, self.metrics, self.worker_factory, self.logger)
        except OSError as exc:  # no semaphores for a process pool (no /dev/shm, say)
            self._log_fallback(exc)
            if self.worker_factory is not None and self.handler is None:
                self.handler = self.worker_factory()
            self.workers = new_workers(self.limits, self.metrics)
        app = create_app(
            self.handler,
            metrics=self.metrics,
            readiness=self.readiness,
            logger=self.logger,
            serve_metrics=self.serve_metrics,
            warmed=self.warmed,
            limits=self.limits,
            workers=self.workers,
            pod_router=self.pod_router,
            inline_routes=self.inline_routes,
            endpoints=self.endpoints,
        )
        app.cleanup_ctx.append(self._background)
        self._app = app
        self.port = await self._start_site(app, self.listen, ssl_context, self.guard)

    def not_ready(self) -> str | None:
        """The readiness check of the process's probe listener: what is missing, else None."""
        return "; ".join(self.readiness.missing()) or None

    async def _background(self, app: web.Application) -> AsyncIterator[None]:
        tasks = [
            asyncio.create_task(self.reloader.run()),
            asyncio.create_task(self._warm_up()),
            asyncio.create_task(self._trim_memory()),
            asyncio.create_task(self.heartbeat.run()),
        ]
        yield
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _start_site(
        self, app: web.Application, listen: Listen, ssl_context: Any, guard: ConnectionGuard
    ) -> int:
        limits = self.limits
        # lingering_time: a refused oversized upload is drained (so the client reads its 413) for 1 s at most.
        # Headers have their own timeout (webhook/server/protocol.py). No request body is ever decompressed.
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=limits.shutdown_timeout,
            lingering_time=1.0,
            keepalive_timeout=limits.keepalive_timeout,
            auto_decompress=False,
            max_headers=32,
        )
        await runner.setup()
        self._runners.append(runner)
        site = GuardedSite(
            runner,
            listen.host,
            listen.port,
            guard=guard,
            ssl_context=ssl_context,
            handshake_timeout=limits.handshake_timeout,
            handshakes=self.handshakes,
            protocol=lambda server: handler_factory(
                server, limits.header_timeout, self.metrics.header_timeouts.inc, self.logger
            ),
        )
        await site.start()
        ports = [address[1] for address in runner.addresses if isinstance(address, tuple)]
        return int(ports[0]) if ports else listen.port

    async def _trim_memory(self) -> None:
        """Every 10 s, when connections came and went or reviews were answered, give freed memory back."""
        seen = 0
        while True:
            await asyncio.sleep(2 * MIN_INTERVAL)
            served = int(self.guard.accepted)
            if served != seen:
                seen = served
                note_work(1 << 20)
            trim_if_due()

    async def _warm_up(self) -> None:
        started = time.perf_counter()
        try:
            if self.handler is not None:
                await asyncio.to_thread(self.handler.warm_up)
            if self.workers is not None:
                try:
                    await self.workers.warm_up()
                except (OSError, BrokenProcessPool) as exc:
                    await self._fall_back_to_threads(exc)
        except Exception as exc:
            self.readiness.warm_up_error = f"{type(exc).__name__}: {exc}"
            self.logger.exception("admission warm-up failed; /readyz stays 503")
            return
        # Everything alive now (modules, the CEL environment) lives for the whole process: keep it out of the
        # collector's full passes, which otherwise show up as multi-millisecond tail latency.
        gc.collect()
        gc.freeze()
        self.readiness.warmed_up = True
        self.metrics.ready.set(1)
        self.warmed.set()
        log_event(
            self.logger,
            logging.INFO,
            "ready",
            warm_up_ms=round((time.perf_counter() - started) * 1000, 1),
            workers=self.limits.workers,
            worker_kind=self.workers.kind if self.workers is not None else "thread",
        )

    async def _fall_back_to_threads(self, exc: BaseException) -> None:
        """Worker processes cannot start here (no usable temporary directory or /dev/shm, a process limit):
        judge on threads of this process instead, and say so."""
        if self.workers is None or self.worker_factory is None or self._app is None:
            raise exc
        self._log_fallback(exc)
        if self.handler is None:
            handler = await asyncio.to_thread(self.worker_factory)
            await asyncio.to_thread(handler.warm_up)
            self.handler = handler
            self._app[ROUTES_KEY].handler = handler
        self.workers.use_threads()

    def _log_fallback(self, exc: BaseException) -> None:
        log_event(
            self.logger,
            logging.WARNING,
            "worker processes could not start; judging reviews on threads (a costly review may delay probes)",
            error=f"{type(exc).__name__}: {exc}",
        )

    async def stop(self) -> None:
        """Graceful stop: close the listeners, let in-flight reviews finish (up to the shutdown timeout),
        close idle keep-alive connections, then stop polling and the workers."""
        self.readiness.warmed_up = False
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
        await asyncio.to_thread(self.handshakes.stop)


def process_manager(
    server: WebhookServer, *, health_listen: Listen | None, metrics_listen: Listen | None
) -> Manager:
    """The `serve` process's Manager: its plain-HTTP listeners answer `/healthz` from the server's loop
    heartbeat, `/readyz` from its readiness and `/metrics` from its metrics (`server.serve_metrics` says
    whether the HTTPS listener serves them too)."""
    manager = Manager(
        server.logger,
        name="serve",
        health=(health_listen.host, health_listen.port) if health_listen is not None else None,
        metrics=server.metrics.render,
        metrics_listen=(metrics_listen.host, metrics_listen.port) if metrics_listen is not None else None,
    )
    manager.add_healthz_check(server.heartbeat.check)
    manager.add_readyz_check(server.not_ready)
    return manager
