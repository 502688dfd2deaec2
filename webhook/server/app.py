"""The webhook's aiohttp application: its endpoints registered once, probes, metrics, and the workers'
lifetime."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass

from aiohttp import web

from webhook.server.admit import ADMISSION_PATHS, ROUTES_KEY, AdmissionRoutes
from webhook.server.endpoints import Endpoint, EndpointLimits, EndpointSource
from webhook.server.judging import AdmissionHandler, HandlerCall
from webhook.server.limits import ServerLimits
from webhook.server.logs import get_logger, log_event
from webhook.server.metrics import WebhookMetrics
from webhook.server.responses import (
    METRICS_KEY,
    error_response,
    json_errors,
    json_response,
    no_server_version,
)
from webhook.server.workers import AdmissionWorkers, Recycling


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
    pod_router: EndpointSource | None = None,
    inline_routes: Mapping[str, HandlerCall] | None = None,
    endpoints: Sequence[Endpoint] = (),
) -> web.Application:
    """The webhook's aiohttp application. Without `workers`, it judges on threads of its own calling
    `handler`; the workers are shut down with the app. `handler` serves `/validate` and `/mutate` and also
    judges their cheap reviews on the loop. Each of `inline_routes` (path without the leading slash -> call)
    is one more endpoint judged on the loop (bench/webhook_baseline.py mounts its allow-all baseline so);
    `pod_router` and `endpoints` add theirs. A path registered twice raises `DuplicateEndpoint`."""
    metrics = metrics if metrics is not None else WebhookMetrics()
    readiness = readiness if readiness is not None else Readiness(certificates_loaded=True, warmed_up=True)
    limits = limits if limits is not None else ServerLimits()
    pool = workers if workers is not None else new_workers(limits, metrics)
    routes = AdmissionRoutes(handler, metrics, logger or get_logger(), warmed, limits, pool)
    registry = routes.endpoints
    loop_only = EndpointLimits(limits.max_body, limits.max_body)
    try:
        for path in ADMISSION_PATHS:
            registry.register(routes.admission_endpoint(path))
        for name, call in (inline_routes or {}).items():
            registry.register(Endpoint(name, call, loop_only))
        if pod_router is not None:  # webhook/podrouting/pod_routing.py: on the loop, large ones by a worker
            registry.register(pod_router.endpoint(limits))
        for endpoint in endpoints:
            registry.register(endpoint)
    except ValueError:
        if workers is None:
            pool.shutdown()  # no app owns the workers made here
        raise
    # Bodies are read by webhook/server/bodies.py against each endpoint's own limit; aiohttp's cap is above.
    app = web.Application(client_max_size=registry.max_body + 1, middlewares=[json_errors])
    app[METRICS_KEY] = metrics
    app[ROUTES_KEY] = routes
    app.on_response_prepare.append(no_server_version)
    for endpoint in registry:
        app.router.add_post(f"/{endpoint.path}", routes.view(endpoint))

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
