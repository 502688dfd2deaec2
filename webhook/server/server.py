"""The HTTPS admission server: aiohttp app factory, routes, and the running server with its listeners.

`/validate` and `/mutate` check the envelope (webhook/server/envelope.py), then judge the review: parse it,
call the admission handler and encode the AdmissionReview response that echoes the request's uid
(webhook/server/judging.py). A small review that would cost its handler little (its CEL compiled, its
selectors' results on the published devices cached: the inline budget of webhook/server/limits.py) is judged
right on the event loop, which holds it for a few milliseconds at most and skips the hand-off to another
process; every other review goes to a worker (webhook/server/workers.py) off the loop, so probes are never
starved. Every review is answered before the caller's deadline (`?timeout=`), with a Timeout denial when it
cannot be judged in time. Every answer is counted and every decision logged. `/healthz` says the process is
alive; `/readyz` turns 200 only once the serving certificate is loaded and the workers have warmed up. The
limits (webhook/server/limits.py) are documented in docs/troubleshooting.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from aiohttp import http_exceptions, web

from certs.files import ServingPair
from procrt.health import HealthListener, LoopHeartbeat
from webhook.server import envelope
from webhook.server.bodies import BodyTooLarge, BodyTooSlow, read_body
from webhook.server.connections import ConnectionGuard, GuardedSite, ThrottleReport, shrink_tls_read_buffer
from webhook.server.fairness import parse_networks
from webhook.server.handshakes import HandshakeThread
from webhook.server.inline import InlineAllowance
from webhook.server.judging import (
    AdmissionHandler,
    CostedHandler,
    HandlerBug,
    HandlerCall,
    Judged,
    Outcome,
    Refusal,
    Verdict,
    judge,
    judge_in_worker,
    judge_review,
)
from webhook.server.limits import MAX_DEADLINE_SECONDS, ServerLimits
from webhook.server.logs import get_logger, log_decision, log_event
from webhook.server.memory import MIN_INTERVAL, note_work, pin_mmap_threshold, trim_if_due
from webhook.server.metrics import BUSY, ERROR, INLINE, TIMEOUT, WORKER, WebhookMetrics
from webhook.server.protocol import SERVER_HEADER, handler_factory
from webhook.server.status import timeout_status
from webhook.server.tlsreload import CertificateReloader
from webhook.server.workers import AdmissionWorkers, Busy, Recycling, WorkerDied

__all__ = ["AdmissionHandler", "HandlerCall", "Listen", "Outcome", "WebhookServer", "create_app"]

API_VERSION = envelope.API_VERSION
KIND = envelope.KIND
JSON = "application/json"

METRICS_KEY = web.AppKey("metrics", WebhookMetrics)


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


async def _no_server_version(request: web.Request, response: web.StreamResponse) -> None:
    """No `Server` header naming aiohttp and Python versions (a scanner's first question)."""
    response.headers["Server"] = SERVER_HEADER


class AdmissionRoutes:
    """The request path shared by /validate and /mutate."""

    def __init__(
        self,
        handler: AdmissionHandler | None,
        metrics: WebhookMetrics,
        logger: logging.Logger,
        warmed: asyncio.Event | None,
        limits: ServerLimits,
        workers: AdmissionWorkers,
    ) -> None:
        self.limits = limits
        self.max_body = limits.max_body
        self.handler = handler
        self.metrics = metrics
        self.logger = logger
        self.warmed = warmed
        self.workers = workers
        # Endpoints judged on the loop (cheap by construction: /mutate-pods, bench/'s baseline), with their
        # body limits; a large review of one with an `offload` (its job for a worker) is judged off the loop,
        # and `counted` then sees its verdict (the pod router counts routing decisions).
        self.inline: dict[str, HandlerCall] = {}
        self.body_limits: dict[str, int] = {}
        self.offload: dict[str, Callable[[bytes], Callable[[], Judged]]] = {}
        self.counted: dict[str, Callable[[Verdict], None]] = {}
        self.allowance = InlineAllowance(limits.inline_slow_seconds_per_second, limits.inline_free_seconds)

    @property
    def handler(self) -> AdmissionHandler | None:
        return self._handler

    @handler.setter
    def handler(self, handler: AdmissionHandler | None) -> None:
        """The handler judging on the loop (and on worker threads); a costed one judges cheap reviews here."""
        self._handler = handler
        self._costed = handler if isinstance(handler, CostedHandler) else None

    def _call(self, endpoint: str) -> HandlerCall:
        assert self._handler is not None
        return self._handler.validate if endpoint == "validate" else self._handler.mutate

    def _inline(self, endpoint: str, body: bytes) -> Judged | None:
        """Judge the review here, on the loop, when it is small, its handler says it is cheap (the inline
        budget) and slow inline reviews have not used up their share of the loop's time
        (webhook/server/inline.py); None sends it to a worker. A review sent on for its selector evaluations
        alone makes a bounded share of them here, so the loop's cluster view warms up over the next
        reviews."""
        costed, limits = self._costed, self.limits
        if costed is None or len(body) > limits.inline_max_body or not self.allowance.open():
            return None
        started = time.thread_time()  # CPU time: a preempted loop (a busy node) has not judged slowly
        try:
            try:
                review = envelope.parse_review(body)
            except envelope.EnvelopeError as exc:
                return Refusal(exc.status, exc.message)
            try:
                cost = costed.cost(endpoint, review.request)
                if limits.inline(len(body), cost):
                    return judge_review(self._call(endpoint), review)
                if cost.compile_bytes <= limits.inline_compile_bytes:
                    costed.prepare(endpoint, review.request, limits.inline_evaluations)
            except (
                Exception
            ):  # a bug in the estimate: the worker judges the review (and reports its own bugs)
                self.logger.exception(
                    "estimating a review's cost failed", extra={"fields": {"uid": review.uid}}
                )
            return None
        finally:
            self.allowance.charge(time.thread_time() - started)

    def endpoint(self, name: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            return await self.admit(request, name)

        return handle

    def _work(self, endpoint: str, body: bytes) -> Callable[[], Judged]:
        """The job for a worker: picklable for processes, the handler's bound method for threads."""
        if self.workers.kind == "process" or self.handler is None:
            return functools.partial(judge_in_worker, endpoint, body)
        return functools.partial(judge, self._call(endpoint), body)

    def _refuse(
        self,
        request: web.Request,
        endpoint: str,
        start: float,
        status: int,
        message: str,
        close: bool = False,
    ) -> web.Response:
        self.metrics.observe(
            endpoint, "", BUSY if status == 429 else ERROR, status, time.perf_counter() - start
        )
        log_event(
            self.logger,
            logging.WARNING,
            "request refused",
            endpoint=endpoint,
            code=status,
            error=message,
            remote=request.remote,
        )
        refusal = error_response(status, message, {"Retry-After": "1"} if status == 429 else None)
        if close or status in (400, 408, 413, 415):
            refusal.force_close()  # the body was never (fully) read: do not keep the connection for more
        return refusal

    def _gone(self, request: web.Request, endpoint: str, stage: str, start: float) -> web.Response:
        """The caller closed the connection: count it, note it at debug level, answer nobody."""
        self.metrics.disconnects.labels(stage).inc()
        log_event(
            self.logger,
            logging.DEBUG,
            "client went away before its answer",
            endpoint=endpoint,
            stage=stage,
            remote=request.remote,
            after_ms=round((time.perf_counter() - start) * 1000, 1),
        )
        response = web.Response(status=499)
        response.force_close()
        return response

    async def admit(self, request: web.Request, endpoint: str) -> web.Response:
        start = time.perf_counter()
        limit = self.body_limits.get(endpoint, self.max_body)
        try:
            envelope.check_content_type(request.content_type if "Content-Type" in request.headers else "")
            envelope.check_content_encoding(request.headers.get("Content-Encoding"))
            deadline = envelope.parse_timeout(request.query.get("timeout"))
            envelope.check_length(request.content_length, limit)
        except envelope.EnvelopeError as exc:
            return self._refuse(request, endpoint, start, exc.status, exc.message)
        waited = min(deadline or self.limits.default_deadline, MAX_DEADLINE_SECONDS)
        answer_by = start + self.limits.answer_within(waited)

        def remaining() -> float:
            return max(answer_by - time.perf_counter(), 0.0)

        held = self.workers.reserve(0)  # the review counts from now; its bytes as they arrive

        def charge(size: int) -> None:
            nonlocal held
            held = self.workers.charge(held, size)

        submitted = False
        try:
            try:
                body = await read_body(
                    request.content,
                    limit=limit,
                    deadline=start + min(self.limits.body_timeout, remaining()),
                    min_rate=self.limits.min_body_rate,
                    grace=self.limits.body_grace,
                    charge=charge,
                    started=start,
                )
            except BodyTooLarge:
                too_large = envelope.too_large(limit)
                return self._refuse(request, endpoint, start, too_large.status, too_large.message)
            except BodyTooSlow:
                return self._refuse(
                    request,
                    endpoint,
                    start,
                    408,
                    "request body did not arrive in time (at least "
                    f"{self.limits.min_body_rate} bytes per second after {self.limits.body_grace:g} s)",
                )
            except Busy as exc:
                return self._refuse(request, endpoint, start, 429, f"webhook busy: {exc}", close=True)
            except http_exceptions.HttpProcessingError as exc:
                return self._refuse(request, endpoint, start, 400, f"malformed request body: {exc.message}")
            except (ConnectionError, asyncio.IncompleteReadError):
                return self._gone(request, endpoint, "body", start)
            note_work(len(body))
            if self.warmed is not None and not self.warmed.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.warmed.wait(), remaining())
            if _closed(request):
                return self._gone(request, endpoint, "queued", start)
            offload = self.offload.get(endpoint)
            if endpoint in self.inline and (offload is None or len(body) <= self.limits.pod_inline_max_body):
                return self._answer_judged(request, endpoint, start, judge(self.inline[endpoint], body))
            if offload is not None:  # a large review of an inline endpoint: parsed and judged off the loop
                work = offload(body)
            else:
                judged_here = self._inline(endpoint, body)
                if judged_here is not None:
                    if not isinstance(judged_here, Refusal):
                        self.metrics.judged.labels(endpoint, INLINE).inc()
                    return self._answer_judged(request, endpoint, start, judged_here)
                work = self._work(endpoint, body)
            self.metrics.judged.labels(endpoint, WORKER).inc()
            submitted = True
            try:
                judged = await asyncio.wait_for(self.workers.run(held, work, len(body)), remaining())
            except TimeoutError:
                return self._late(request, endpoint, start, body, waited)
            except WorkerDied as exc:
                self.logger.error("admission worker died", extra={"fields": {"endpoint": endpoint}})
                return self._refuse(request, endpoint, start, 429, f"webhook busy: {exc}; retry")
        finally:
            if not submitted:
                self.workers.release(held)
        if offload is not None and isinstance(judged, Verdict) and self.counted.get(endpoint):
            self.counted[endpoint](judged)
        return self._answer_judged(request, endpoint, start, judged)

    def _answer_judged(
        self, request: web.Request, endpoint: str, start: float, judged: Judged
    ) -> web.Response:
        if isinstance(judged, Refusal):
            return self._refuse(request, endpoint, start, judged.status, judged.message)
        if isinstance(judged, HandlerBug):
            return self._bug(endpoint, start, judged)
        if _closed(request):
            return self._gone(request, endpoint, "answer", start)
        return self._answer(endpoint, start, judged)

    def _bug(self, endpoint: str, start: float, bug: HandlerBug) -> web.Response:
        """A bug on our side, never bad input: log the traceback, tell the client no more than the uid."""
        self.logger.error(
            "admission handler failed",
            extra={
                "fields": {"uid": bug.uid, "endpoint": endpoint, "name": bug.name, "exception": bug.traceback}
            },
        )
        self.metrics.observe(endpoint, bug.operation, ERROR, 500, time.perf_counter() - start)
        return error_response(500, f"internal error while admitting request {bug.uid}; see the webhook log")

    def _answer(self, endpoint: str, start: float, verdict: Verdict) -> web.Response:
        elapsed = time.perf_counter() - start
        self.metrics.observe(endpoint, verdict.operation, verdict.outcome, 200, elapsed, verdict.cause_counts)
        self.metrics.native_rule_findings_seen(verdict.native_counts)
        if verdict.cluster:
            self.metrics.cluster_warnings.labels(verdict.cluster).inc()
        log_decision(
            self.logger,
            uid=verdict.uid,
            name=verdict.name,
            operation=verdict.operation,
            endpoint=endpoint,
            allowed=verdict.allowed,
            duration_ms=elapsed * 1000.0,
            dry_run=verdict.dry_run,
            outcome=verdict.outcome,
            warnings=verdict.warnings,
            causes=sorted(verdict.cause_counts),
        )
        return web.Response(status=200, body=verdict.payload, content_type=JSON)

    def _late(
        self, request: web.Request, endpoint: str, start: float, body: bytes, waited: float
    ) -> web.Response:
        """The deadline is near and the review is not judged: deny it with a Timeout status. Its uid is read
        here, on the loop, once (at most a few tens of milliseconds for the largest body)."""
        elapsed = time.perf_counter() - start
        if _closed(request):
            return self._gone(request, endpoint, "queued", start)
        try:
            review = envelope.parse_review(body)
        except envelope.EnvelopeError as exc:
            return self._refuse(request, endpoint, start, exc.status, exc.message)
        response = {"uid": review.uid, "allowed": False, "status": timeout_status(review.name, elapsed)}
        payload = orjson.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response})
        self.metrics.observe(endpoint, review.operation, TIMEOUT, 200, elapsed)
        log_event(
            self.logger,
            logging.WARNING,
            "review not judged before the caller's deadline; denied",
            uid=review.uid,
            name=review.name,
            operation=review.operation,
            endpoint=endpoint,
            duration_ms=round(elapsed * 1000.0, 3),
            deadline_s=waited,
        )
        return web.Response(status=200, body=payload, content_type=JSON)


ROUTES_KEY = web.AppKey("routes", AdmissionRoutes)
POD_ENDPOINT = "mutate-pods"


class PodRoutes(Protocol):
    """`/mutate-pods`' judge (webhook/podrouting/pod_routing.py `PodRouter`): cheap reviews on the loop, large
    ones as a picklable job for a worker, whose verdict the router then counts."""

    def mutate(self, request: dict[str, Any]) -> Outcome: ...

    def offload(self, body: bytes) -> Callable[[], Judged]: ...

    def count(self, verdict: Verdict) -> None: ...


def _closed(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def create_app(
    handler: AdmissionHandler | None,
    *,
    metrics: WebhookMetrics | None = None,
    readiness: Readiness | None = None,
    logger: logging.Logger | None = None,
    serve_metrics: bool = True,
    warmed: asyncio.Event | None = None,
    limits: ServerLimits | None = None,
    workers: AdmissionWorkers | None = None,
    pod_router: PodRoutes | None = None,
    inline_routes: Mapping[str, HandlerCall] | None = None,
) -> web.Application:
    """The webhook's aiohttp application. Without `workers`, it judges on threads of its own calling
    `handler`; the workers are shut down with the app. `handler` also judges cheap reviews on the loop. Each
    of `inline_routes` (path without the leading slash -> call) is one more admission endpoint judged on the
    loop, as `/mutate-pods` is (bench/webhook_baseline.py mounts its allow-all baseline so)."""
    metrics = metrics if metrics is not None else WebhookMetrics()
    readiness = readiness if readiness is not None else Readiness(certificates_loaded=True, warmed_up=True)
    limits = limits if limits is not None else ServerLimits()
    pool = workers if workers is not None else new_workers(limits, metrics)
    routes = AdmissionRoutes(handler, metrics, logger or get_logger(), warmed, limits, pool)
    # Bodies are read by webhook/server/bodies.py against each endpoint's own limit; aiohttp's cap stays above
    # both.
    app = web.Application(
        client_max_size=max(limits.max_body, limits.pod_max_body) + 1, middlewares=[json_errors]
    )
    app[METRICS_KEY] = metrics
    app[ROUTES_KEY] = routes
    app.on_response_prepare.append(_no_server_version)
    app.router.add_post("/validate", routes.endpoint("validate"))
    app.router.add_post("/mutate", routes.endpoint("mutate"))
    inline = dict(inline_routes or {})
    if (
        pod_router is not None
    ):  # webhook/podrouting/pod_routing.py, judged on the loop (large ones by a worker)
        inline[POD_ENDPOINT] = pod_router.mutate
        routes.body_limits[POD_ENDPOINT] = limits.pod_max_body
        routes.offload[POD_ENDPOINT] = pod_router.offload
        routes.counted[POD_ENDPOINT] = pod_router.count
    for name, call in inline.items():
        routes.inline[name] = call
        app.router.add_post(f"/{name}", routes.endpoint(name))

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

    async def pool_lifetime(app: web.Application) -> AsyncIterator[None]:
        yield
        pool.shutdown()

    app.cleanup_ctx.append(pool_lifetime)
    return app


def new_workers(
    limits: ServerLimits,
    metrics: WebhookMetrics,
    factory: Callable[[], AdmissionHandler] | None = None,
    logger: logging.Logger | None = None,
) -> AdmissionWorkers:
    """The admission workers: processes building their handler with `factory`, or threads without one."""

    def changed(in_flight_bytes: int, reviews: int) -> None:
        metrics.in_flight_bytes.set(in_flight_bytes)
        metrics.in_flight.set(reviews)

    def recycled(reason: str) -> None:
        metrics.worker_recycles.inc()
        log_event(logger or get_logger(), logging.INFO, "admission workers recycled", reason=reason)

    recycling = Recycling(limits.worker_recycle_after, limits.worker_max_rss_growth)
    return AdmissionWorkers(limits.workers, limits.in_flight_bytes, changed, factory, recycling, recycled)


def add_metrics_route(app: web.Application, metrics: WebhookMetrics) -> None:
    async def metrics_view(request: web.Request) -> web.Response:
        body = metrics.render()
        return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    app.router.add_get("/metrics", metrics_view)


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
    """The running webhook: HTTPS listener, optional metrics listener, certificate reload and warm-up.

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
        metrics_listen: Listen | None = None,
        health_listen: Listen | None = None,
        metrics: WebhookMetrics | None = None,
        logger: logging.Logger | None = None,
        limits: ServerLimits | None = None,
        worker_factory: Callable[[], AdmissionHandler] | None = None,
        pod_router: PodRoutes | None = None,
        inline_routes: Mapping[str, HandlerCall] | None = None,
    ) -> None:
        if handler is None and worker_factory is None:
            raise ValueError("WebhookServer needs a handler or a worker_factory")
        self.pod_router = pod_router
        self.inline_routes = dict(inline_routes or {})
        self.handler = handler
        self.worker_factory = worker_factory
        self.reloader = reloader
        self.listen = listen
        self.metrics_listen = metrics_listen
        self.health_listen = health_listen
        self.heartbeat = LoopHeartbeat()
        self._listeners: list[HealthListener] = []
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
        self.metrics_port = 0
        self.health_port = 0

    async def start(self) -> None:
        """Bind the listeners (port 0 picks a free one; see `.port`). The app's startup starts the warm-up
        and the certificate polling; its cleanup stops them and the workers."""
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
            serve_metrics=self.metrics_listen is None,
            warmed=self.warmed,
            limits=self.limits,
            workers=self.workers,
            pod_router=self.pod_router,
            inline_routes=self.inline_routes,
        )
        app.cleanup_ctx.append(self._background)
        self._app = app
        self.port = await self._start_site(app, self.listen, ssl_context, self.guard)
        if self.metrics_listen is not None:
            self.metrics_port = await self._start_listener(self.metrics_listen, "metrics")
        if self.health_listen is not None:
            self.health_port = await self._start_listener(self.health_listen, "health")

    async def _start_listener(self, listen: Listen, name: str) -> int:
        """A plain-HTTP /healthz, /readyz and /metrics listener on a thread and loop of its own
        (procrt/health.py): no webhook client, slow or many, ever delays a probe."""

        def ready() -> str | None:
            return "; ".join(self.readiness.missing()) or None

        listener = HealthListener(
            listen.host,
            listen.port,
            live=[self.heartbeat.check],
            ready=[ready],
            metrics=self.metrics.render,
            name=name,
        )
        port = await asyncio.to_thread(listener.start)
        self._listeners.append(listener)
        return port

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
        for listener in self._listeners:
            await asyncio.to_thread(listener.stop)
        self._listeners.clear()
        await asyncio.to_thread(self.handshakes.stop)
