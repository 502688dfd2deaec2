"""Prometheus metrics of the webhook, in a registry of its own (tests and several servers never collide).

Names follow the apiserver's admission metrics where they overlap: requests by endpoint, operation, outcome
and HTTP code; a latency histogram with millisecond buckets; rejection causes by StatusCause type; certificate
reloads and the serving certificate's expiry, so an alert can fire before the apiserver starts failing calls.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

# Outcomes of one HTTP request to an admission endpoint.
ALLOWED = "allowed"
DENIED = "denied"
ERROR = "error"  # not a well-formed review (4xx) or a handler failure (5xx)
FOREIGN = "foreign"  # a well-formed review of an object this endpoint does not handle: allowed, counted
TIMEOUT = "timeout"  # judged too slowly for the caller's deadline: denied with a Timeout status
BUSY = "busy"  # refused with 429 (too many bytes in flight, or the deadline passed while queued)

# Where a review was judged: on the event loop (small and cheap: the inline budget) or by a worker.
INLINE = "inline"
WORKER = "worker"

# Where a client went away: while sending the body, while its review waited or ran, or before the answer.
DISCONNECT_STAGES = ("body", "queued", "answer")

# The operation label takes the AdmissionRequest operations; anything else a client sends is counted as
# "other", so a caller cannot grow the label set (and the process's memory) without bound.
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class WebhookMetrics:
    """The webhook's collectors; `render()` gives the Prometheus text exposition."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "dra_capacity_webhook_requests",
            "Admission requests by endpoint, operation, outcome (allowed/denied/error/foreign), HTTP code.",
            ["endpoint", "operation", "outcome", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "dra_capacity_webhook_request_duration_seconds",
            "Time from request received to response written, by endpoint and outcome.",
            ["endpoint", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.rejection_causes = Counter(
            "dra_capacity_webhook_rejection_causes",
            "Causes of rejected reviews by endpoint and StatusCause type (FieldValueInvalid, ...).",
            ["endpoint", "cause_type"],
            registry=self.registry,
        )
        self.native_rule_findings = Counter(
            "dra_capacity_webhook_native_rule_findings",
            "Findings on natively validated fields warned, not denied (--native-rules warn), by guarded "
            "field (metadata, spec.selectors, spec.config, spec.extendedResourceName, other) and cause type.",
            ["field", "cause_type"],
            registry=self.registry,
        )
        self.certificate_reloads = Counter(
            "dra_capacity_webhook_certificate_reloads",
            "Serving-certificate loads from disk by result (success, failure); the first load counts.",
            ["result"],
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            "dra_capacity_webhook_serving_certificate_expiry_timestamp_seconds",
            "notAfter of the serving certificate currently served, as a Unix timestamp.",
            registry=self.registry,
        )
        self.cluster_warnings = Counter(
            "dra_capacity_webhook_cluster_warnings",
            "DeviceClass reviews by how the cluster-aware warnings ran: used (a cluster view was read) or "
            "cold (no synced view yet, or a failed cache: the warnings were skipped).",
            ["view"],
            registry=self.registry,
        )
        self.ready = Gauge(
            "dra_capacity_webhook_ready",
            "1 once certificates are loaded and the admission handler is warmed up.",
            registry=self.registry,
        )

        self.disconnects = Counter(
            "dra_capacity_webhook_client_disconnects",
            "Clients that closed the connection before their answer, by stage (body, queued, answer).",
            ["stage"],
            registry=self.registry,
        )
        self.unrouted = Counter(
            "dra_capacity_webhook_unrouted_requests",
            "Requests for no endpoint (404) or with a method the endpoint does not take (405), by code.",
            ["code"],
            registry=self.registry,
        )
        self.connections = Gauge(
            "dra_capacity_webhook_open_connections",
            "Connections open on the HTTPS listener, TLS handshakes included.",
            registry=self.registry,
        )
        self.worker_recycles = Counter(
            "dra_capacity_webhook_worker_recycles",
            "Times the worker processes were replaced by a fresh pool (after large reviews, or grown RSS).",
            registry=self.registry,
        )
        self.header_timeouts = Counter(
            "dra_capacity_webhook_header_timeouts",
            "Connections closed because a request's headers were not complete in time (slow clients).",
            registry=self.registry,
        )
        self.refused_connections = Counter(
            "dra_capacity_webhook_refused_connections",
            "Connections closed on arrival because the listener already had --max-connections open.",
            registry=self.registry,
        )
        self.throttled_connections = Counter(
            "dra_capacity_webhook_throttled_connections",
            'Connections a source lost to per-source fairness, by source (address, IPv6 /64; "other" past '
            "64 sources) and action: refused (at its share, or nobody holds more) or evicted (for another).",
            ["source", "action"],
            registry=self.registry,
        )
        self.in_flight_bytes = Gauge(
            "dra_capacity_webhook_in_flight_bytes",
            "Bytes of review bodies accepted and not yet answered (bounded by --max-in-flight-bytes).",
            registry=self.registry,
        )
        self.judged = Counter(
            "dra_capacity_webhook_judged_reviews",
            "Reviews judged by endpoint and where: inline (small and cheap, on the event loop) or worker.",
            ["endpoint", "where"],
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "dra_capacity_webhook_in_flight_reviews",
            "Reviews accepted and not yet answered, queued or being judged.",
            registry=self.registry,
        )

    def native_rule_findings_seen(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Count native-rule findings, by (guarded field, cause type): both bounded sets
        (webhook/deviceclass/native_rules.py `RULE_FIELDS`, StatusCause types)."""
        for (rule, cause_type), n in counts.items():
            self.native_rule_findings.labels(rule, cause_type).inc(n)

    def observe(
        self,
        endpoint: str,
        operation: str,
        outcome: str,
        code: int,
        seconds: float,
        cause_counts: Mapping[str, int] | None = None,
    ) -> None:
        """Count one request to an admission endpoint; `cause_counts` maps StatusCause types to counts."""
        op = operation if operation in OPERATIONS else ("unknown" if not operation else "other")
        self.requests.labels(endpoint, op, outcome, str(code)).inc()
        self.latency.labels(endpoint, outcome).observe(seconds)
        for cause, count in (cause_counts or {}).items():
            self.rejection_causes.labels(endpoint, cause).inc(count)

    def render(self) -> bytes:
        return generate_latest(self.registry)
