"""Prometheus metrics of the webhook, in a registry of its own (tests and several servers never collide).

Names follow the apiserver's admission metrics where they overlap: requests by endpoint, operation, outcome
and HTTP code; a latency histogram with millisecond buckets; rejection causes by StatusCause type; certificate
reloads and the serving certificate's expiry, so an alert can fire before the apiserver starts failing calls.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

# Outcomes of one HTTP request to an admission endpoint.
ALLOWED = "allowed"
DENIED = "denied"
ERROR = "error"  # not a well-formed review (4xx) or a handler failure (5xx)
FOREIGN = "foreign"  # a well-formed review of an object this endpoint does not handle: allowed, counted

# The operation label takes the AdmissionRequest operations; anything else a client sends is counted as
# "other", so a caller cannot grow the label set (and the process's memory) without bound.
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST


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
        self.ready = Gauge(
            "dra_capacity_webhook_ready",
            "1 once certificates are loaded and the admission handler is warmed up.",
            registry=self.registry,
        )

    def native_rule_finding(self, rule: str, cause_type: str) -> None:
        """Count one native-rule finding (webhook/native_rules.py); both labels come from bounded sets."""
        self.native_rule_findings.labels(rule, cause_type).inc()

    def observe(
        self,
        endpoint: str,
        operation: str,
        outcome: str,
        code: int,
        seconds: float,
        cause_types: list[str] | None = None,
    ) -> None:
        """Count one request to an admission endpoint."""
        op = operation if operation in OPERATIONS else ("unknown" if not operation else "other")
        self.requests.labels(endpoint, op, outcome, str(code)).inc()
        self.latency.labels(endpoint, outcome).observe(seconds)
        for cause in cause_types or ():
            self.rejection_causes.labels(endpoint, cause).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
