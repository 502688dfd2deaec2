"""The HTTPS admission server: aiohttp app factory, routes, and the running server with its listeners.

`/validate` and `/mutate` check the envelope (webhook/envelope.py), hand the body to a worker thread
(webhook/workers.py) that parses it, calls the admission handler and encodes the AdmissionReview response
that echoes the request's uid; the event loop only reads bodies and writes answers, so probes are never
starved. Every review is answered before the caller's deadline (`?timeout=`), with a Timeout denial when it
cannot be judged in time. Every answer is counted and every decision logged. `/healthz` says the process is
alive; `/readyz` turns 200 only once the serving certificate is loaded and the handler's `warm_up()` has
finished. The limits (webhook/limits.py) are documented in docs/troubleshooting.md.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import gc
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from aiohttp import web

from certs.files import ServingPair
from webhook import envelope
from webhook.connections import ConnectionGuard, GuardedSite, shrink_tls_read_buffer
from webhook.limits import MAX_DEADLINE_SECONDS, ServerLimits
from webhook.logs import get_logger, log_decision, log_event
from webhook.memory import trim_after_burst
from webhook.metrics import ALLOWED, BUSY, DENIED, ERROR, FOREIGN, TIMEOUT, WebhookMetrics
from webhook.status import timeout_status
from webhook.tlsreload import CertificateReloader
from webhook.workers import AdmissionWorkers, Busy

API_VERSION = envelope.API_VERSION
KIND = envelope.KIND
JSON = "application/json"
# No answer is ever larger (kube-apiserver's own request limit is 3 MiB); webhook/status.py keeps a rejection
# far below it, and this is the last guard against a bug.
MAX_RESPONSE_BYTES = 1024 * 1024
SERVER_HEADER = "dra-capacity"


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
        metrics: WebhookMetrics | None = request.app.get(METRICS_KEY)
        if metrics is not None and exc.status in (404, 405):
            metrics.unrouted.labels(str(exc.status)).inc()
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        reason = f"{request.method} {request.path}: {exc.reason.lower()}"
        return error_response(exc.status, reason, headers)


async def _no_server_version(request: web.Request, response: web.StreamResponse) -> None:
    """No `Server` header naming aiohttp and Python versions (a scanner's first question)."""
    response.headers["Server"] = SERVER_HEADER


METRICS_KEY = web.AppKey("metrics", WebhookMetrics)

HandlerCall = Callable[[dict[str, Any]], Outcome]


@dataclass
class Judgement:
    """What a worker hands back to the event loop: the encoded answer and the facts to count and log."""

    review: envelope.Review
    payload: bytes
    allowed: bool
    outcome: str
    operation: str
    name: str
    warnings: int
    cause_counts: dict[str, int]


@dataclass
class HandlerBug:
    """The handler raised (logged with its traceback on the worker): answered 500, naming the uid only."""

    review: envelope.Review


class Pending:
    """Shared between the event loop and the worker judging one review: the parsed review (once known, so a
    timeout can still answer with its uid) and whether the caller has stopped waiting."""

    def __init__(self) -> None:
        self.review: envelope.Review | None = None
        self.abandoned = False


class AdmissionRoutes:
    """The request path shared by /validate and /mutate."""

    def __init__(
        self,
        handler: AdmissionHandler,
        metrics: WebhookMetrics,
        readiness: Readiness,
        logger: logging.Logger,
        warmed: asyncio.Event | None,
        limits: ServerLimits,
        workers: AdmissionWorkers,
    ) -> None:
        self.limits = limits
        self.max_body = limits.max_body
        self.handler = handler
        self.metrics = metrics
        self.readiness = readiness
        self.logger = logger
        self.warmed = warmed
        self.workers = workers

    def endpoint(self, name: str, call: HandlerCall) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            return await self.admit(request, name, call)

        return handle

    def _refuse(
        self, request: web.Request, endpoint: str, start: float, exc: envelope.EnvelopeError
    ) -> web.Response:
        outcome = BUSY if exc.status == 429 else ERROR
        self.metrics.observe(endpoint, "", outcome, exc.status, time.perf_counter() - start)
        log_event(
            self.logger,
            logging.WARNING,
            "request refused",
            endpoint=endpoint,
            code=exc.status,
            error=exc.message,
            remote=request.remote,
        )
        headers = {"Retry-After": "1"} if exc.status == 429 else None
        refusal = error_response(exc.status, exc.message, headers)
        if exc.status in (408, 413, 415):
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

    async def admit(self, request: web.Request, endpoint: str, call: HandlerCall) -> web.Response:
        start = time.perf_counter()
        try:
            envelope.check_content_type(request.content_type if "Content-Type" in request.headers else "")
            envelope.check_content_encoding(request.headers.get("Content-Encoding"))
            deadline = envelope.parse_timeout(request.query.get("timeout"))
            envelope.check_length(request.content_length, self.max_body)
        except envelope.EnvelopeError as exc:
            return self._refuse(request, endpoint, start, exc)
        waited = min(deadline or self.limits.default_deadline, MAX_DEADLINE_SECONDS)
        answer_by = start + self.limits.answer_within(waited)
        try:
            reserved = self.workers.reserve(request.content_length or self.max_body)
        except Busy as exc:
            return self._refuse(request, endpoint, start, envelope.EnvelopeError(429, f"webhook busy: {exc}"))
        submitted = False
        try:
            try:
                body = await asyncio.wait_for(
                    request.read(), min(self.limits.body_timeout, max(answer_by - time.perf_counter(), 0.0))
                )
            except web.HTTPRequestEntityTooLarge:
                return self._refuse(request, endpoint, start, envelope.too_large(self.max_body))
            except TimeoutError:
                timeout = envelope.EnvelopeError(408, "request body did not arrive in time")
                return self._refuse(request, endpoint, start, timeout)
            except (ConnectionError, asyncio.IncompleteReadError):
                return self._gone(request, endpoint, "body", start)
            if self.warmed is not None and not self.warmed.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.warmed.wait(), max(answer_by - time.perf_counter(), 0.0))
            if _closed(request):
                return self._gone(request, endpoint, "queued", start)
            pending = Pending()
            work = functools.partial(self._judge, call, body, pending, endpoint)
            future = self.workers.submit(reserved, work)
            submitted = True
            del body, work  # only the worker holds the body from now on
            try:
                judgement = await asyncio.wait_for(future, max(answer_by - time.perf_counter(), 0.0))
            except TimeoutError:
                pending.abandoned = True
                return self._late(request, endpoint, start, pending, waited)
        finally:
            if not submitted:
                self.workers.release(reserved)
        if isinstance(judgement, envelope.EnvelopeError):
            return self._refuse(request, endpoint, start, judgement)
        if isinstance(judgement, HandlerBug):
            review = judgement.review
            self.metrics.observe(endpoint, review.operation, ERROR, 500, time.perf_counter() - start)
            return error_response(
                500, f"internal error while admitting request {review.uid}; see the webhook log"
            )
        if _closed(request):
            return self._gone(request, endpoint, "answer", start)
        return self._answer(endpoint, start, judgement)

    def _judge(
        self, call: HandlerCall, body: bytes, pending: Pending, endpoint: str
    ) -> Judgement | envelope.EnvelopeError | HandlerBug:
        """On a worker: parse, judge, encode. Envelope errors come back as values, a handler bug as a 500."""
        try:
            review = envelope.parse_review(body)
        except envelope.EnvelopeError as exc:
            return exc
        pending.review = review
        if pending.abandoned:
            return envelope.EnvelopeError(429, "abandoned")
        try:
            outcome = call(review.request)
            response = dict(outcome.response)
            response["uid"] = review.uid
            payload = orjson.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response})
            if len(payload) > MAX_RESPONSE_BYTES:
                raise ValueError(f"the answer would be {len(payload)} bytes (limit {MAX_RESPONSE_BYTES})")
            allowed = bool(response.get("allowed"))
            return Judgement(
                review=review,
                payload=payload,
                allowed=allowed,
                outcome=FOREIGN if not outcome.handled else (ALLOWED if allowed else DENIED),
                operation=str(outcome.operation or review.operation),
                name=str(outcome.name or review.name),
                warnings=len(response.get("warnings") or ()),
                cause_counts=dict(collections.Counter(str(c) for c in outcome.cause_types)),
            )
        except Exception:
            # A bug on our side, never bad input: log the traceback, tell the client no more than the uid.
            self.logger.exception(
                "admission handler failed",
                extra={"fields": {"uid": review.uid, "endpoint": endpoint, "name": review.name}},
            )
            return HandlerBug(review)

    def _answer(self, endpoint: str, start: float, judgement: Judgement) -> web.Response:
        elapsed = time.perf_counter() - start
        self.metrics.observe(
            endpoint, judgement.operation, judgement.outcome, 200, elapsed, judgement.cause_counts
        )
        review = judgement.review
        log_decision(
            self.logger,
            uid=review.uid,
            name=judgement.name,
            operation=judgement.operation,
            endpoint=endpoint,
            allowed=judgement.allowed,
            duration_ms=elapsed * 1000.0,
            dry_run=review.dry_run,
            outcome=judgement.outcome,
            warnings=judgement.warnings,
            causes=sorted(judgement.cause_counts),
        )
        trim_after_burst(len(judgement.payload))
        return web.Response(status=200, body=judgement.payload, content_type=JSON)

    def _late(
        self, request: web.Request, endpoint: str, start: float, pending: Pending, waited: float
    ) -> web.Response:
        """The deadline is near and the review is not judged: deny it with a Timeout status, or, when it was
        not even parsed yet (so there is no uid to answer), refuse the call with 429."""
        elapsed = time.perf_counter() - start
        if _closed(request):
            return self._gone(request, endpoint, "queued", start)
        review = pending.review
        if review is None:
            busy = envelope.EnvelopeError(
                429, f"webhook busy: the review waited {elapsed:.1f}s unread (deadline {waited:g}s)"
            )
            return self._refuse(request, endpoint, start, busy)
        status = timeout_status(review.name, elapsed)
        response = {"uid": review.uid, "allowed": False, "status": status}
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


def _closed(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def create_app(
    handler: AdmissionHandler,
    *,
    metrics: WebhookMetrics | None = None,
    readiness: Readiness | None = None,
    logger: logging.Logger | None = None,
    serve_metrics: bool = True,
    warmed: asyncio.Event | None = None,
    limits: ServerLimits | None = None,
    workers: AdmissionWorkers | None = None,
) -> web.Application:
    """The webhook's aiohttp application; without `workers`, it runs its own pool (closed on cleanup)."""
    metrics = metrics if metrics is not None else WebhookMetrics()
    readiness = readiness if readiness is not None else Readiness(certificates_loaded=True, warmed_up=True)
    limits = limits if limits is not None else ServerLimits()
    own_pool = workers is None
    pool = workers if workers is not None else new_workers(limits, metrics)
    routes = AdmissionRoutes(handler, metrics, readiness, logger or get_logger(), warmed, limits, pool)
    # client_max_size one above the limit: a body of exactly max_body bytes is read, one more is refused.
    app = web.Application(client_max_size=limits.max_body + 1, middlewares=[json_errors])
    app[METRICS_KEY] = metrics
    app.on_response_prepare.append(_no_server_version)
    app.router.add_post("/validate", routes.endpoint("validate", handler.validate))
    app.router.add_post("/mutate", routes.endpoint("mutate", handler.mutate))

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
    if own_pool:

        async def pool_lifetime(app: web.Application) -> AsyncIterator[None]:
            yield
            pool.shutdown()

        app.cleanup_ctx.append(pool_lifetime)
    return app


def new_workers(limits: ServerLimits, metrics: WebhookMetrics) -> AdmissionWorkers:
    def changed(in_flight_bytes: int, reviews: int) -> None:
        metrics.in_flight_bytes.set(in_flight_bytes)
        metrics.in_flight.set(reviews)

    return AdmissionWorkers(limits.workers, limits.in_flight_bytes, changed)


def add_metrics_route(app: web.Application, metrics: WebhookMetrics) -> None:
    async def metrics_view(request: web.Request) -> web.Response:
        body = metrics.render()
        return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    app.router.add_get("/metrics", metrics_view)


def create_metrics_app(metrics: WebhookMetrics) -> web.Application:
    """The separate plain-HTTP metrics listener (`--metrics-listen`)."""
    app = web.Application(middlewares=[json_errors])
    app[METRICS_KEY] = metrics
    app.on_response_prepare.append(_no_server_version)
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
        limits: ServerLimits | None = None,
    ) -> None:
        self.handler = handler
        self.reloader = reloader
        self.listen = listen
        self.metrics_listen = metrics_listen
        self.metrics = metrics if metrics is not None else WebhookMetrics()
        self.logger = logger or get_logger()
        self.limits = limits if limits is not None else ServerLimits()
        self.readiness = Readiness()
        self.warmed = asyncio.Event()
        self.guard = ConnectionGuard(self.limits.max_connections, self.metrics.refused_connections.inc)
        self.metrics.connections.set_function(lambda: len(self.guard))
        self._runners: list[web.AppRunner] = []
        self.port = 0
        self.metrics_port = 0

    async def start(self) -> None:
        """Bind the listeners (port 0 picks a free one; see `.port`); the app's startup starts the warm-up and
        the certificate polling, its cleanup stops them."""
        shrink_tls_read_buffer()
        ssl_context = self.reloader.server_context
        self.readiness.certificates_loaded = True
        app = create_app(
            self.handler,
            metrics=self.metrics,
            readiness=self.readiness,
            logger=self.logger,
            serve_metrics=self.metrics_listen is None,
            warmed=self.warmed,
            limits=self.limits,
        )
        app.cleanup_ctx.append(self._background)
        self.port = await self._start_site(app, self.listen, ssl_context, self.guard)
        if self.metrics_listen is not None:
            metrics_guard = ConnectionGuard(64)
            self.metrics_port = await self._start_site(
                create_metrics_app(self.metrics), self.metrics_listen, None, metrics_guard
            )

    async def _background(self, app: web.Application) -> AsyncIterator[None]:
        tasks = [asyncio.create_task(self.reloader.run()), asyncio.create_task(self._warm_up())]
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
        # keepalive_timeout also bounds how long a request's headers may take (aiohttp closes a connection
        # whose request is still incomplete when it expires). No request body is ever decompressed.
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
        )
        await site.start()
        ports = [address[1] for address in runner.addresses if isinstance(address, tuple)]
        return int(ports[0]) if ports else listen.port

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
        """Graceful stop: close the listeners, let in-flight reviews finish (up to the shutdown timeout),
        close idle keep-alive connections, then stop polling and the workers."""
        self.readiness.warmed_up = False
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
