"""Fault injection and the request log of the kube-apiserver TEST DOUBLE.

A fault matches requests by verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
`deletecollection`), resource (plural or `plural.group`), optional subresource, namespace and name; it fires
on
the `nth` matching call (1-based, counted from when it was added) and the `times - 1` calls after it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack


@dataclass
class RecordedRequest:
    """One request the double received (recorded before any fault or pause applies)."""

    method: str
    path: str
    query: dict[str, str]
    verb: str
    resource: str  # `pods`, `deviceclasses.resource.k8s.io`; "" for discovery and other non-resource paths
    subresource: str
    namespace: str
    name: str
    body: Any
    content_type: str
    user: str = ""
    status: int = 0
    time: float = field(default_factory=time.time)
    fault: str = ""


@dataclass
class Fault:
    """What to do to matching calls: `fail` (answer `code`), `delay` (sleep `seconds`, then serve),
    `hang` (answer nothing, close after `seconds`), `hold` (wait until the test sets `release`, at most
    `seconds`, then serve: a write sent before its client froze, landing late), each either before the
    request is served or, with `after=True`, after it was served (the write happened, the client sees the
    failure). `arrived` is set when a call matched (with `after`, once it was served)."""

    action: str
    verb: str | None = None
    resource: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None
    nth: int = 1
    times: int = 1
    code: int = 500
    seconds: float = 0.0
    message: str | None = None
    after: bool = False
    seen: int = 0
    fired: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)

    def matches(self, rec: RecordedRequest) -> bool:
        if self.verb is not None and self.verb != rec.verb:
            return False
        if self.resource is not None and self.resource not in (rec.resource, rec.resource.split(".", 1)[0]):
            return False
        if self.subresource is not None and self.subresource != rec.subresource:
            return False
        if self.namespace is not None and self.namespace != rec.namespace:
            return False
        return self.name is None or self.name == rec.name

    @property
    def exhausted(self) -> bool:
        return self.times > 0 and self.fired >= self.times


class Held(TypedDict, total=False):
    """Which matching calls a fault takes: the `nth` and the `times - 1` after it, narrowed by subresource,
    namespace and name."""

    nth: int
    times: int
    subresource: str | None
    namespace: str | None
    name: str | None


class Where(Held, total=False):
    """`Held`, and `after`: the fault applies once the call was served."""

    after: bool


class Faults:
    """The registered faults; thread-safe, so tests arm them from the test thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.active.append(fault)
        return fault

    def fail(
        self,
        verb: str | None,
        resource: str | None,
        code: int = 500,
        *,
        message: str | None = None,
        **where: Unpack[Where],
    ) -> Fault:
        """Answer `code` (409 Conflict, 500 InternalError, 503 ServiceUnavailable, 504 Timeout, 429 ...)."""
        return self.add(Fault("fail", verb, resource, code=code, message=message, **where))

    def delay(self, verb: str | None, resource: str | None, seconds: float, **where: Unpack[Where]) -> Fault:
        return self.add(Fault("delay", verb, resource, seconds=seconds, **where))

    def hang(
        self, verb: str | None, resource: str | None, seconds: float = 60.0, **where: Unpack[Where]
    ) -> Fault:
        """Never answer: the client's own timeout fires; the connection is closed after `seconds`."""
        return self.add(Fault("hang", verb, resource, seconds=seconds, **where))

    def hold(
        self, verb: str | None, resource: str | None, seconds: float = 60.0, **where: Unpack[Held]
    ) -> Fault:
        """Hold matching calls until `fault.release.set()` (or `seconds`), then serve them as they are."""
        return self.add(Fault("hold", verb, resource, seconds=seconds, **where))

    def clear(self) -> None:
        with self._lock:
            self.active.clear()

    def take(self, rec: RecordedRequest) -> list[Fault]:
        """The faults that fire for this request (counting it against every matching fault)."""
        fired: list[Fault] = []
        with self._lock:
            for f in self.active:
                if f.exhausted or not f.matches(rec):
                    continue
                f.seen += 1
                if f.seen >= f.nth:
                    f.fired += 1
                    fired.append(f)
        return fired
