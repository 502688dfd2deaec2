"""One review judged from its raw body to its encoded answer: on the event loop when it is cheap, else in a
worker.

`judge` parses the AdmissionReview, calls the handler and encodes the AdmissionReview response; what it
returns is plain, picklable data (a `Verdict`, a `Refusal` for a body that is not a well-formed review, or a
`HandlerBug`), so the same function runs on a worker thread or in a worker process (`judge_in_worker`, with
the handler the process built at start). `judge_review` is the same for a review already parsed: the server
uses it on the event loop for a small review its handler's estimate calls cheap
(webhook/server/endpoints.py), and on a worker thread for one it parsed there, so no review is parsed twice
in one process.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import json
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson

from webhook.server import envelope
from webhook.server.memory import pin_mmap_threshold, start_trimmer, trim_after_burst

# No answer is ever larger (kube-apiserver's own request limit is 3 MiB); webhook/server/status.py keeps a
# rejection far below it, and this is the last guard against a bug.
MAX_RESPONSE_BYTES = 1024 * 1024

# Outcomes of one HTTP request to an admission endpoint (also metric label values).
ALLOWED = "allowed"
DENIED = "denied"
FOREIGN = "foreign"


class Outcome(Protocol):
    """What an admission handler returns (webhook/deviceclass/admission.py's `AdmissionOutcome`)."""

    response: dict[str, Any]
    handled: bool
    cause_types: list[str]
    name: str
    operation: str


class AdmissionHandler(Protocol):
    """The admission logic the server calls (webhook/deviceclass/admission.py's `DeviceClassAdmission`)."""

    def warm_up(self) -> None: ...

    def mutate(self, request: dict[str, Any]) -> Outcome: ...

    def validate(self, request: dict[str, Any]) -> Outcome: ...


@runtime_checkable
class Switchable(Protocol):
    """A handler whose judging state (the served release's gates) can change while it serves: the server hands
    the main handler's `gates` to each job for a worker process, which switches to them first
    (`judge_in_worker`), so every process judges a review by the state current when it was received."""

    @property
    def gates(self) -> Any: ...

    def switch(self, gates: Any) -> None: ...


HandlerCall = Callable[[dict[str, Any]], Outcome]


@dataclass(frozen=True)
class Verdict:
    """A judged review: the encoded answer and the facts the server counts and logs."""

    uid: str
    name: str
    operation: str
    dry_run: bool
    payload: bytes
    allowed: bool
    outcome: str
    warnings: int
    cause_counts: dict[str, int] = field(default_factory=dict)
    # Native-rule findings answered with warnings (webhook/deviceclass/native_rules.py): (guarded field, cause
    # type) -> n.
    native_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    cluster: str = ""  # how the cluster-aware warnings ran: "" (off), "used", "cold" (skipped)
    routing: str = (
        ""  # /mutate-pods: the routing verdict (webhook/podrouting/pod_routing.py), counted by the server
    )


@dataclass(frozen=True)
class Refusal:
    """The body is not a well-formed review: answered with this HTTP status and message."""

    status: int
    message: str


@dataclass(frozen=True)
class HandlerBug:
    """The handler raised: a bug on our side, never bad input. Answered 500 naming the uid only."""

    uid: str
    name: str
    operation: str
    traceback: str


Judged = Verdict | Refusal | HandlerBug


def encode(document: dict[str, Any]) -> bytes:
    """Compact JSON; a string orjson refuses (a lone surrogate a handler echoed) is escaped by `json`."""
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError:
        return json.dumps(document, separators=(",", ":")).encode()


def judge(call: HandlerCall, body: bytes) -> Judged:
    """Parse, judge and encode one review."""
    try:
        review = envelope.parse_review(body)
    except envelope.EnvelopeError as exc:
        return Refusal(exc.status, exc.message)
    return judge_parsed(call, review, len(body))


def judge_parsed(call: HandlerCall, review: envelope.Review, size: int) -> Judged:
    """`judge` for a review parsed already, from a body of `size` bytes (a worker thread's job)."""
    try:
        return judge_review(call, review)
    finally:
        trim_after_burst(size)


def judge_review(call: HandlerCall, review: envelope.Review) -> Judged:
    """Judge and encode one parsed review."""
    try:
        outcome = call(review.request)
        response = dict(outcome.response)
        response["uid"] = review.uid
        payload = encode({"apiVersion": envelope.API_VERSION, "kind": envelope.KIND, "response": response})
        if len(payload) > MAX_RESPONSE_BYTES:
            raise ValueError(f"the answer would be {len(payload)} bytes (limit {MAX_RESPONSE_BYTES})")
        allowed = bool(response.get("allowed"))
        verdict = Verdict(
            uid=review.uid,
            name=str(outcome.name or review.name),
            operation=str(outcome.operation or review.operation),
            dry_run=review.dry_run,
            payload=payload,
            allowed=allowed,
            outcome=FOREIGN if not outcome.handled else (ALLOWED if allowed else DENIED),
            warnings=len(response.get("warnings") or ()),
            cause_counts=dict(collections.Counter(str(c) for c in outcome.cause_types)),
            native_counts=dict(getattr(outcome, "native_findings", None) or {}),
            cluster=str(getattr(outcome, "cluster", "")),
            routing=str(getattr(outcome, "routing", "")),
        )
    except Exception:
        return HandlerBug(review.uid, review.name, review.operation, traceback.format_exc())
    return verdict


# ---------------------------------------------------------------------------------------------------------
# Worker processes

WORKER_NICENESS = 5
_handler: AdmissionHandler | None = None


def _exit_with(server_pid: int, interval: float = 1.0) -> None:
    """End this worker when the server process is gone. Workers are forked by multiprocessing's forkserver
    and hold both ends of their queues, so a server that died (SIGKILL, OOM) would leave them waiting
    forever, and the forkserver and resource tracker with them."""

    def watch() -> None:
        while True:
            time.sleep(interval)
            try:
                os.kill(server_pid, 0)
            except ProcessLookupError:
                os._exit(0)
            except OSError:
                pass

    threading.Thread(target=watch, name="server-watch", daemon=True).start()


def start_worker(factory: Callable[[], AdmissionHandler], server_pid: int | None = None) -> None:
    """A worker process's initializer: build and warm the handler once, keep it out of the collector's passes.
    Ctrl-C reaches the whole process group: only the server process handles it. Workers run at a lower CPU
    priority, so on a busy node the event loop (probes, TLS, reading bodies) gets the CPU first."""
    global _handler
    if server_pid is not None:
        _exit_with(server_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    pin_mmap_threshold()
    handler = factory()
    handler.warm_up()
    gc.collect()
    gc.freeze()
    start_trimmer()
    _handler = handler


def judge_in_worker(endpoint: str, body: bytes, gates: Any = None) -> Judged:
    """`judge` with this worker process's handler; `endpoint` is `validate` or `mutate`. With `gates` (the
    server's handler's, a `Switchable`), the handler switches to them first: a process judges one review at a
    time, so the review is judged wholly by them."""
    if _handler is None:
        raise RuntimeError("worker process not started")
    if gates is not None and isinstance(_handler, Switchable) and _handler.gates != gates:
        _handler.switch(gates)
    call: HandlerCall = _handler.validate if endpoint == "validate" else _handler.mutate
    return judge(call, body)


def worker_ready() -> int:
    """A no-op that proves a worker process is up (its initializer has run)."""
    return 0
