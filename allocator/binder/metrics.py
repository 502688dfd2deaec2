"""Prometheus metrics of the binder, in a registry of its own, and the plain-HTTP /metrics, /healthz, /readyz.

Names follow kube-scheduler's where they overlap (`scheduler_resourceclaim_creates_total`,
`scheduler_pod_scheduling_sli_duration_seconds`), prefixed `dra_capacity_binder_`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class BinderMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.pods_bound = Counter("dra_capacity_binder_pods_bound", "Pods bound to a node.", registry=r)
        self.pods_unschedulable = Counter(
            "dra_capacity_binder_pods_unschedulable",
            "Placement attempts that found no node, by reason (the scheduler-style reason per node).",
            ["reason"],
            registry=r,
        )
        self.bind_latency = Histogram(
            "dra_capacity_binder_bind_latency_seconds",
            "Time from the pod's creationTimestamp to its Binding.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.attempts = Counter(
            "dra_capacity_binder_allocation_attempts",
            "Placement attempts by result (bound, unschedulable, error).",
            ["result"],
            registry=r,
        )
        self.claim_creates = Counter(
            "dra_capacity_binder_resourceclaim_creates",
            "ResourceClaim creates by status (success, failure).",
            ["status"],
            registry=r,
        )
        self.conflicts = Counter(
            "dra_capacity_binder_api_conflicts",
            "409 Conflict answers, by the write that got them.",
            ["operation"],
            registry=r,
        )
        self.retries = Counter(
            "dra_capacity_binder_api_retries",
            "API writes retried (after a conflict or a transient error), by operation.",
            ["operation"],
            registry=r,
        )
        self.claims_deleted = Counter(
            "dra_capacity_binder_claims_deleted",
            "Extended-resource claims deleted, by why (leftover, failed-bind).",
            ["why"],
            registry=r,
        )
        self.recovered = Counter(
            "dra_capacity_binder_binds_resumed",
            "Binds completed from a claim already allocated and reserved (crash recovery).",
            registry=r,
        )
        self.not_routed = Counter(
            "dra_capacity_binder_pods_not_routed",
            "Pods that should have been routed to this binder but kept the default scheduler.",
            registry=r,
        )
        self.leader = Gauge("dra_capacity_binder_leader", "1 while this replica holds the lease.", registry=r)
        self.pending = Gauge(
            "dra_capacity_binder_pending_pods", "Pods in the queue, by state.", ["state"], registry=r
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class HealthServer:
    """`/metrics`, `/healthz` (alive) and `/readyz` (informers synced) over plain HTTP on its own thread."""

    def __init__(self, host: str, port: int, metrics: BinderMetrics, ready: Callable[[], str | None]) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/metrics":
                    self._send(200, metrics.render(), CONTENT_TYPE_LATEST)
                elif self.path == "/healthz":
                    self._send(200, b'{"status":"ok"}', "application/json")
                elif self.path == "/readyz":
                    missing = ready()
                    if missing is None:
                        self._send(200, b'{"status":"ready"}', "application/json")
                    else:
                        body = json.dumps({"error": f"not ready: {missing}"}).encode()
                        self._send(503, body, "application/json")
                else:
                    body = json.dumps({"error": f"GET {self.path}: not found"}).encode()
                    self._send(404, body, "application/json")

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=outer.httpd.serve_forever, name="binder-health", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
