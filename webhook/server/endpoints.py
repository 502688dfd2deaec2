"""Admission endpoints as objects: a path, its handler, its limits and how its reviews are judged.

After controller-runtime's `Server.Register(path, hook)`: each path is registered once (a second registration
is a bug, and raises), and the request path (webhook/server/admit.py) reads, checks, decodes, judges and
writes every review by what its `Endpoint` says. What makes a review cheap enough for the event loop is the
handler's to say (`Estimate`); the server only keeps the loop's share of time (webhook/server/inline.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from webhook.server.judging import HandlerCall, Judged, Verdict
from webhook.server.limits import ServerLimits

Job = Callable[[], Judged]


class Estimate(Protocol):
    """A handler's word on what judging one review would still cost it (webhook/deviceclass/costing.py)."""

    @property
    def inline(self) -> bool:
        """Cheap enough to judge on the event loop."""
        ...

    @property
    def warm_steps(self) -> int:
        """Bounded steps of the costly work worth doing on the loop for a review sent to a worker anyway."""
        ...


@runtime_checkable
class CostedHandler(Protocol):
    """An admission handler that can say, before judging, what a review would cost it; a handler without
    these has every review of an estimated endpoint judged by a worker."""

    def cost(self, endpoint: str, request: dict[str, Any]) -> Estimate: ...

    def prepare(self, endpoint: str, request: dict[str, Any], evaluations: int) -> None:
        """Do about `evaluations` steps of the work `cost` counted, so a later review is cheap."""


@dataclass(frozen=True)
class EndpointLimits:
    """The body limits of one endpoint: what is read at all, and what may be judged on the loop (0: none)."""

    max_body: int
    inline_max_body: int


@dataclass(frozen=True)
class Endpoint:
    """One admission path (without its leading slash) and how its reviews are judged.

    A review at most `limits.inline_max_body` bytes is judged by `handler` on the event loop: always, or,
    when `estimated`, only when the server's admission handler calls it cheap and the loop has time to spare.
    Any other review is `offload`'s job for a worker (picklable), whose verdict `counted` then sees; without
    `offload`, worker processes judge it with the handler they built for `path`, worker threads with
    `handler`.
    """

    path: str
    handler: HandlerCall
    limits: EndpointLimits
    estimated: bool = False
    offload: Callable[[bytes], Job] | None = None
    counted: Callable[[Verdict], None] | None = None


class EndpointSource(Protocol):
    """Something that serves an endpoint of its own (webhook/podrouting/pod_routing.py `PodRouter`)."""

    def endpoint(self, limits: ServerLimits) -> Endpoint: ...


class DuplicateEndpoint(ValueError):
    """A path registered twice: two handlers would answer one path."""


class Endpoints:
    """The registered endpoints, by path; each path once."""

    def __init__(self) -> None:
        self._by_path: dict[str, Endpoint] = {}

    def register(self, endpoint: Endpoint) -> None:
        if not endpoint.path or endpoint.path.startswith("/"):
            raise ValueError(f"endpoint path {endpoint.path!r}: a name without the leading slash")
        if endpoint.path in self._by_path:
            raise DuplicateEndpoint(f"endpoint /{endpoint.path} is already registered")
        self._by_path[endpoint.path] = endpoint

    def __iter__(self) -> Iterator[Endpoint]:
        return iter(self._by_path.values())

    def __getitem__(self, path: str) -> Endpoint:
        return self._by_path[path]

    def __len__(self) -> int:
        return len(self._by_path)

    @property
    def max_body(self) -> int:
        """The largest body any endpoint reads."""
        return max((e.limits.max_body for e in self), default=0)
