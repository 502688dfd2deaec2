"""The webhook server's resource limits: one home for every cap and timeout `serve` enforces.

Each default is sized for the one client that matters, kube-apiserver, and for the chart's memory limit:

* kube-apiserver sends its own deadline as `?timeout=` (the webhook's `timeoutSeconds`, default 10 s, at most
  30 s; `staging/src/k8s.io/apiserver/pkg/util/webhook/webhook.go`). A review is answered before it, with a
  denial that says why, instead of after the caller has given up.
* Its webhook client keeps idle connections for 90 s (`IdleConnTimeout` from
  `staging/src/k8s.io/apimachinery/pkg/util/net/http.go` `SetTransportDefaults`) and never retries a POST
  written to a connection the server had just closed. So the keep-alive timeout is longer than 90 s: the
  client, not the server, closes idle connections.
* It never compresses request bodies, so only the identity content coding is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

from webhook.server.envelope import MAX_BODY_BYTES, MAX_POD_BODY_BYTES

MiB = 1024 * 1024

# The apiserver's webhook timeout: default and maximum (`admissionregistration/v1` `timeoutSeconds`).
DEFAULT_DEADLINE_SECONDS = 10.0
MAX_DEADLINE_SECONDS = 30.0


@dataclass(frozen=True)
class ServerLimits:
    """Caps and timeouts of one webhook listener (see docs/troubleshooting.md, "Limits")."""

    max_body: int = MAX_BODY_BYTES
    # Admission runs on this many workers, off the event loop that answers probes: processes (`serve`'s
    # default, nothing shared with the loop) or threads (the library's default, no extra memory).
    workers: int = 2
    # Bodies read and not yet answered, in bytes; a review beyond it is refused with 429 (Retry-After).
    in_flight_bytes: int = 32 * MiB
    # Open connections (TLS handshakes included), shared fairly between sources (webhook/server/fairness.py):
    # at most `max_connections_per_source` per source (0: a quarter of the cap); at the cap a newcomer from a
    # source holding fewer evicts an idle or handshaking connection of the source holding the most.
    # `protected_sources` (the API server's addresses, CIDRs) are never evicted and have an eighth reserved.
    max_connections: int = 512
    max_connections_per_source: int = 0
    protected_sources: tuple[str, ...] = ()
    # Idle time before the server closes a keep-alive connection.
    keepalive_timeout: float = 120.0
    # A TLS handshake must finish within this (asyncio's default is 60 s); a request's headers must be
    # complete within `header_timeout` of its first byte (webhook/server/protocol.py). Half-open handshakes
    # and slowloris clients so give their connection slot back within seconds, not minutes.
    handshake_timeout: float = 5.0
    header_timeout: float = 10.0
    # The time allowed for a request body to arrive, and the rate it must keep: after `body_grace` seconds,
    # at least `min_body_rate` bytes per second on average, else 408 (webhook/server/bodies.py). A body is
    # charged to the in-flight budget as its bytes arrive, never by its declared length, so a client declaring
    # large bodies and trickling them can neither hold the budget nor a connection for long.
    body_timeout: float = 10.0
    min_body_rate: int = 64 * 1024
    body_grace: float = 1.0
    # Bodies of the pod router's endpoint (webhook/podrouting/pod_routing.py registers it with these;
    # webhook/server/envelope.py `MAX_POD_BODY_BYTES`, derived from the apiserver's 3 MiB request limit);
    # those above `pod_inline_max_body` are judged by a worker, off the event loop.
    pod_max_body: int = MAX_POD_BODY_BYTES
    pod_inline_max_body: int = 256 * 1024
    # When the caller sends no `?timeout=`, the apiserver's default.
    default_deadline: float = DEFAULT_DEADLINE_SECONDS
    # Seconds kept in hand before the caller's deadline to write the answer: min(10% of it, this).
    deadline_margin: float = 1.0
    # Worker processes are replaced (a fresh pool warmed beside the old one) after this many reviews of 1 MiB
    # and more, or once a worker's RSS has grown this many bytes past its warm size
    # (webhook/server/workers.py): memory a large review left behind comes back. 0 turns a rule off. The
    # growth stays well under 20% of what the server and its workers hold warm (about 200 MiB): one review of
    # 100,000 labels left 46 MiB in a worker for good, which a 64 MiB threshold never caught.
    worker_recycle_after: int = 32
    worker_max_rss_growth: int = 24 * MiB
    # Graceful shutdown: how long in-flight reviews may take to finish before their connections are closed.
    shutdown_timeout: float = 15.0
    # A review of `validate` or `mutate` whose body is at most `inline_max_body` bytes may be judged on the
    # event loop, without the hand-off to a worker, when its handler's estimate calls it cheap
    # (webhook/server/endpoints.py `Estimate`; what is cheap is the handler's to say). A body limit of 0
    # judges every review in a worker.
    inline_max_body: int = 16 * 1024
    # And in total (webhook/server/inline.py): inline reviews may take at most this many seconds per second
    # beyond `inline_free_seconds` each; once that is spent, every review goes to a worker until it refills.
    inline_slow_seconds_per_second: float = 0.05
    inline_free_seconds: float = 0.001

    def answer_within(self, deadline: float) -> float:
        """Seconds a review may take when the caller waits `deadline` seconds."""
        return max(deadline - min(deadline * 0.1, self.deadline_margin), deadline * 0.5)
