"""The request path of every admission endpoint: read, check, decode, judge, write.

Each review's body is read against its endpoint's limit (webhook/server/endpoints.py), then judged on the
event loop when its endpoint allows it, else by a worker (webhook/server/workers.py), and answered before the
caller's deadline (a Timeout denial when it cannot be judged in time). A review is parsed at most once in
this process: the parse made for the inline estimate goes on to a worker thread and to the late denial; a
worker process parses the body it is sent, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import http_exceptions, web

from webhook.server import envelope
from webhook.server.bodies import BodyTooLarge, BodyTooSlow, read_body
from webhook.server.endpoints import CostedHandler, Endpoint, EndpointLimits, Endpoints, Job
from webhook.server.inline import InlineAllowance
from webhook.server.judging import (
    AdmissionHandler,
    HandlerBug,
    Judged,
    Outcome,
    Refusal,
    Switchable,
    Verdict,
    judge,
    judge_in_worker,
    judge_parsed,
    judge_review,
)
from webhook.server.limits import MAX_DEADLINE_SECONDS, ServerLimits
from webhook.server.logs import log_decision, log_event
from webhook.server.memory import note_work
from webhook.server.metrics import BUSY, ERROR, INLINE, TIMEOUT, WORKER, WebhookMetrics
from webhook.server.responses import JSON, error_response
from webhook.server.status import timeout_status
from webhook.server.workers import AdmissionWorkers, Busy, WorkerDied

# The admission handler's endpoints, by its method's name.
ADMISSION_PATHS = ("validate", "mutate")


@dataclass(frozen=True)
class Inline:
    """What the loop made of a review: its answer, or the parsed review for whoever judges it next."""

    judged: Judged | None = None
    review: envelope.Review | None = None


class AdmissionRoutes:
    """The registered endpoints and the request path they share."""

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
        self.handler = handler
        self.metrics = metrics
        self.logger = logger
        self.warmed = warmed
        self.workers = workers
        self.endpoints = Endpoints()
        self.allowance = InlineAllowance(limits.inline_slow_seconds_per_second, limits.inline_free_seconds)

    @property
    def handler(self) -> AdmissionHandler | None:
        return self._handler

    @handler.setter
    def handler(self, handler: AdmissionHandler | None) -> None:
        """The handler judging on the loop (and on worker threads); a costed one judges cheap reviews here."""
        self._handler = handler
        self._costed = handler if isinstance(handler, CostedHandler) else None

    def admission_endpoint(self, path: str) -> Endpoint:
        """`/validate` or `/mutate`: the admission handler's method of that name, judged on the loop when its
        estimate calls a small review cheap."""

        def call(request: dict[str, Any]) -> Outcome:
            assert self._handler is not None
            method = self._handler.validate if path == "validate" else self._handler.mutate
            return method(request)

        limits = EndpointLimits(self.limits.max_body, self.limits.inline_max_body)
        return Endpoint(path, call, limits, estimated=True)

    def view(self, endpoint: Endpoint) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            return await self.admit(request, endpoint)

        return handle

    def _inline(self, endpoint: Endpoint, body: bytes) -> Inline:
        """Judge the review here, on the loop, when its handler says it is cheap and slow inline reviews have
        not used up their share of the loop's time (webhook/server/inline.py); no answer sends it to a worker.
        A review sent on for its costly work alone makes bounded steps of it here (the handler's
        `warm_steps`), so the loop's cluster view warms up over the next reviews."""
        costed = self._costed
        if costed is None or not self.allowance.open():
            return Inline()
        started = time.thread_time()  # CPU time: a preempted loop (a busy node) has not judged slowly
        try:
            try:
                review = envelope.parse_review(body)
            except envelope.EnvelopeError as exc:
                return Inline(Refusal(exc.status, exc.message))
            try:
                estimate = costed.cost(endpoint.path, review.request)
                if estimate.inline:
                    return Inline(judge_review(endpoint.handler, review), review)
                if estimate.warm_steps > 0:
                    costed.prepare(endpoint.path, review.request, estimate.warm_steps)
            except (
                Exception
            ):  # a bug in the estimate: the worker judges the review (and reports its own bugs)
                self.logger.exception(
                    "estimating a review's cost failed", extra={"fields": {"uid": review.uid}}
                )
            return Inline(review=review)
        finally:
            self.allowance.charge(time.thread_time() - started)

    def _work(self, endpoint: Endpoint, body: bytes, review: envelope.Review | None) -> Job:
        """The job for a worker: the endpoint's own, picklable for processes, or the handler's call for
        threads (on the review parsed here, when it was)."""
        if endpoint.offload is not None:
            return endpoint.offload(body)
        if self.workers.kind == "process" or self.handler is None:
            handler = self.handler
            gates = handler.gates if isinstance(handler, Switchable) else None
            return functools.partial(judge_in_worker, endpoint.path, body, gates)
        if review is not None:
            return functools.partial(judge_parsed, endpoint.handler, review, len(body))
        return functools.partial(judge, endpoint.handler, body)

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

    async def admit(self, request: web.Request, ep: Endpoint) -> web.Response:
        start, endpoint, limit = time.perf_counter(), ep.path, ep.limits.max_body
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
            review = None
            if len(body) <= ep.limits.inline_max_body:
                if not ep.estimated:  # cheap by construction
                    return self._answer_judged(request, endpoint, start, judge(ep.handler, body))
                here = self._inline(ep, body)
                if here.judged is not None:
                    if not isinstance(here.judged, Refusal):
                        self.metrics.judged.labels(endpoint, INLINE).inc()
                    return self._answer_judged(request, endpoint, start, here.judged)
                review = here.review
            work = self._work(ep, body, review)
            self.metrics.judged.labels(endpoint, WORKER).inc()
            submitted = True
            try:
                judged = await asyncio.wait_for(self.workers.run(held, work, len(body)), remaining())
            except TimeoutError:
                return self._late(request, endpoint, start, body, waited, review)
            except WorkerDied as exc:
                self.logger.error("admission worker died", extra={"fields": {"endpoint": endpoint}})
                return self._refuse(request, endpoint, start, 429, f"webhook busy: {exc}; retry")
        finally:
            if not submitted:
                self.workers.release(held)
        if ep.offload is not None and ep.counted is not None and isinstance(judged, Verdict):
            ep.counted(judged)
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
        self,
        request: web.Request,
        endpoint: str,
        start: float,
        body: bytes,
        waited: float,
        review: envelope.Review | None,
    ) -> web.Response:
        """The deadline is near and the review is not judged: deny it with a Timeout status. Its uid comes
        from the review parsed here already, else from parsing the body now, on the loop, once (at most a few
        tens of milliseconds for the largest body)."""
        elapsed = time.perf_counter() - start
        if _closed(request):
            return self._gone(request, endpoint, "queued", start)
        if review is None:
            try:
                review = envelope.parse_review(body)
            except envelope.EnvelopeError as exc:
                return self._refuse(request, endpoint, start, exc.status, exc.message)
        response = {"uid": review.uid, "allowed": False, "status": timeout_status(review.name, elapsed)}
        payload = orjson.dumps(
            {"apiVersion": envelope.API_VERSION, "kind": envelope.KIND, "response": response}
        )
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


def _closed(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()
