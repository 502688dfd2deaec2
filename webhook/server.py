"""The HTTPS admission server: aiohttp app factory, routes, and the running server with its listeners.

`/validate` and `/mutate` check the envelope (webhook/envelope.py), call the admission handler, and wrap its
response in an `admission.k8s.io/v1` AdmissionReview that echoes the request's uid. Every answer is counted
and every decision logged. `/healthz` says the process is alive; `/readyz` turns 200 only once the serving
certificate is loaded and the handler's `warm_up()` has finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

from certs.files import ServingPair
from webhook import envelope
from webhook.logs import get_logger, log_decision, log_event
from webhook.metrics import ALLOWED, DENIED, ERROR, FOREIGN, WebhookMetrics
from webhook.tlsreload import CertificateReloader

API_VERSION = envelope.API_VERSION
KIND = envelope.KIND
BASELINE_PATH = "/bench/allow"
JSON = "application/json"


class Outcome(Protocol):
    """What an admission handler returns (webhook/admission.py's `AdmissionOutcome`)."""

    response: dict[str, Any]
    handled: bool
    cause_types: list[str]
    name: str
    operation: str


class AdmissionHandler(Protocol):
    """The admission logic the server calls (webhook/admission.py's `DeviceClassAdmission`)."""

    def warm_up(self) -> None: ...

    def mutate(self, request: dict[str, Any]) -> Outcome: ...

    def validate(self, request: dict[str, Any]) -> Outcome: ...


@dataclass
class AllowAllOutcome:
    """The baseline handler's answer: allowed, nothing else."""

    response: dict[str, Any]
    handled: bool = True
    cause_types: list[str] = field(default_factory=list)
    name: str = ""
    operation: str = ""


def allow_all(request: dict[str, Any]) -> AllowAllOutcome:
    """The benchmark baseline: the same envelope and wrapping as /validate, with no admission logic."""
    return AllowAllOutcome(
        response={"uid": request["uid"], "allowed": True}, operation=request.get("operation", "")
    )


@dataclass
class Readiness:
    """What `/readyz` waits for."""

    certificates_loaded: bool = False
    warmed_up: bool = False
    warm_up_error: str | None = None

    @property
    def ready(self) -> bool:
        return self.certificates_loaded and self.warmed_up

    def missing(self) -> list[str]:
        out = []
        if not self.certificates_loaded:
            out.append("serving certificate not loaded")
        if self.warm_up_error is not None:
            out.append(f"admission warm-up failed: {self.warm_up_error}")
        elif not self.warmed_up:
            out.append("admission handler warming up")
        return out


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
    """aiohttp's own 404/405/... become one-line JSON errors like every other refusal."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        reason = f"{request.method} {request.path}: {exc.reason.lower()}"
        return error_response(exc.status, reason, headers)


HandlerCall = Callable[[dict[str, Any]], Outcome]


class AdmissionRoutes:
    """The request path shared by /validate, /mutate and the benchmark baseline."""

    def __init__(
        self,
        handler: AdmissionHandler,
        metrics: WebhookMetrics,
        readiness: Readiness,
        logger: logging.Logger,
        warmed: asyncio.Event | None,
        max_body: int = envelope.MAX_BODY_BYTES,
    ) -> None:
        self.max_body = max_body
        self.handler = handler
        self.metrics = metrics
        self.readiness = readiness
        self.logger = logger
        self.warmed = warmed

    def endpoint(self, name: str, call: HandlerCall) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            return await self.admit(request, name, call)

        return handle

    async def admit(self, request: web.Request, endpoint: str, call: HandlerCall) -> web.Response:
        start = time.perf_counter()
        try:
            envelope.check_content_type(request.content_type if "Content-Type" in request.headers else "")
            envelope.check_length(request.content_length, self.max_body)
            try:
                body = await request.read()
            except web.HTTPRequestEntityTooLarge:
                raise envelope.too_large(self.max_body) from None
            review = envelope.parse_review(body)
        except envelope.EnvelopeError as exc:
            self.metrics.observe(endpoint, "", ERROR, exc.status, time.perf_counter() - start)
            log_event(
                self.logger,
                logging.WARNING,
                "request refused",
                endpoint=endpoint,
                code=exc.status,
                error=exc.message,
                remote=request.remote,
            )
            refusal = error_response(exc.status, exc.message)
            if exc.status in (413, 415):
                refusal.force_close()  # the body was never read: do not keep the connection for more
            return refusal
        if self.warmed is not None and not self.warmed.is_set():
            await self.warmed.wait()
        try:
            outcome = call(review.request)
            response = dict(outcome.response)
            response["uid"] = review.uid
            payload = json.dumps(
                {"apiVersion": API_VERSION, "kind": KIND, "response": response}, separators=(",", ":")
            ).encode()
            allowed = bool(response.get("allowed"))
            outcome_label = FOREIGN if not outcome.handled else (ALLOWED if allowed else DENIED)
            operation = str(outcome.operation or review.operation)
            warnings = len(response.get("warnings") or ())
            causes = [str(c) for c in outcome.cause_types]
            name = str(outcome.name or review.name)
        except Exception:
            # A bug on our side, never bad input: log the traceback, tell the client no more than the uid.
            self.logger.exception(
                "admission handler failed",
                extra={"fields": {"uid": review.uid, "endpoint": endpoint, "name": review.name}},
            )
            self.metrics.observe(endpoint, review.operation, ERROR, 500, time.perf_counter() - start)
            return error_response(
                500, f"internal error while admitting request {review.uid}; see the webhook log"
            )
        elapsed = time.perf_counter() - start
        self.metrics.observe(endpoint, operation, outcome_label, 200, elapsed, causes)
        log_decision(
            self.logger,
            uid=review.uid,
            name=name,
            operation=operation,
            endpoint=endpoint,
            allowed=allowed,
            duration_ms=elapsed * 1000.0,
            dry_run=review.dry_run,
            outcome=outcome_label,
            warnings=warnings,
            causes=causes,
        )
        return web.Response(status=200, body=payload, content_type=JSON)


def create_app(
    handler: AdmissionHandler,
    *,
    metrics: WebhookMetrics | None = None,
    readiness: Readiness | None = None,
    logger: logging.Logger | None = None,
    serve_metrics: bool = True,
    bench_baseline: bool = False,
    warmed: asyncio.Event | None = None,
    max_body: int = envelope.MAX_BODY_BYTES,
    pod_router: HandlerCall | None = None,
) -> web.Application:
    """The webhook's aiohttp application. `bench_baseline` adds the allow-all route used by bench/;
    `pod_router` serves `/mutate-pods` (webhook/pod_routing.py)."""
    metrics = metrics if metrics is not None else WebhookMetrics()
    readiness = readiness if readiness is not None else Readiness(certificates_loaded=True, warmed_up=True)
    routes = AdmissionRoutes(handler, metrics, readiness, logger or get_logger(), warmed, max_body)
    # client_max_size one above the limit: a body of exactly max_body bytes is read, one more is refused.
    app = web.Application(client_max_size=max_body + 1, middlewares=[json_errors])
    app.router.add_post("/validate", routes.endpoint("validate", handler.validate))
    app.router.add_post("/mutate", routes.endpoint("mutate", handler.mutate))
    if pod_router is not None:
        app.router.add_post("/mutate-pods", routes.endpoint("mutate-pods", pod_router))
    if bench_baseline:
        app.router.add_post(BASELINE_PATH, routes.endpoint("baseline", allow_all))

    async def healthz(request: web.Request) -> web.Response:
        return json_response(200, {"status": "ok"})

    async def readyz(request: web.Request) -> web.Response:
        if readiness.ready:
            return json_response(200, {"status": "ready"})
        return error_response(503, "not ready: " + "; ".join(readiness.missing()))

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if serve_metrics:
        add_metrics_route(app, metrics)
    return app


def add_metrics_route(app: web.Application, metrics: WebhookMetrics) -> None:
    async def metrics_view(request: web.Request) -> web.Response:
        body = metrics.render()
        return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    app.router.add_get("/metrics", metrics_view)


def create_metrics_app(metrics: WebhookMetrics) -> web.Application:
    """The separate plain-HTTP metrics listener (`--metrics-listen`)."""
    app = web.Application(middlewares=[json_errors])
    add_metrics_route(app, metrics)
    return app


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
    """The running webhook: HTTPS listener, optional metrics listener, certificate reload and warm-up."""

    def __init__(
        self,
        handler: AdmissionHandler,
        reloader: CertificateReloader,
        listen: Listen,
        *,
        metrics_listen: Listen | None = None,
        metrics: WebhookMetrics | None = None,
        logger: logging.Logger | None = None,
        bench_baseline: bool = False,
        pod_router: HandlerCall | None = None,
    ) -> None:
        self.pod_router = pod_router
        self.handler = handler
        self.reloader = reloader
        self.listen = listen
        self.metrics_listen = metrics_listen
        self.metrics = metrics if metrics is not None else WebhookMetrics()
        self.logger = logger or get_logger()
        self.readiness = Readiness()
        self.warmed = asyncio.Event()
        self.bench_baseline = bench_baseline
        self._runners: list[web.AppRunner] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.port = 0
        self.metrics_port = 0

    async def start(self) -> None:
        """Bind the listeners (port 0 picks a free one; see `.port`) and start warm-up and reload polling."""
        ssl_context = self.reloader.server_context
        self.readiness.certificates_loaded = True
        app = create_app(
            self.handler,
            metrics=self.metrics,
            readiness=self.readiness,
            logger=self.logger,
            serve_metrics=self.metrics_listen is None,
            bench_baseline=self.bench_baseline,
            warmed=self.warmed,
            pod_router=self.pod_router,
        )
        self.port = await self._start_site(app, self.listen, ssl_context)
        if self.metrics_listen is not None:
            self.metrics_port = await self._start_site(
                create_metrics_app(self.metrics), self.metrics_listen, None
            )
        self._tasks.append(asyncio.create_task(self.reloader.run()))
        self._tasks.append(asyncio.create_task(self._warm_up()))

    async def _start_site(self, app: web.Application, listen: Listen, ssl_context: Any) -> int:
        # lingering_time: a refused oversized upload is drained (so the client reads its 413) for 1 s at most.
        runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=5.0, lingering_time=1.0
        )
        await runner.setup()
        self._runners.append(runner)
        site = web.TCPSite(runner, listen.host, listen.port, ssl_context=ssl_context, reuse_address=True)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        return int(sockets[0].getsockname()[1]) if sockets else listen.port

    async def _warm_up(self) -> None:
        started = time.perf_counter()
        try:
            await asyncio.to_thread(self.handler.warm_up)
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
            self.logger, logging.INFO, "ready", warm_up_ms=round((time.perf_counter() - started) * 1000, 1)
        )

    async def stop(self) -> None:
        """Stop polling, then close the listeners, letting in-flight requests finish."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
