"""`/mutate-pods`: on Pod CREATE, send pods that ask for a capacity-backed extended resource to the binder.

The answer sets `spec.schedulerName`; a pod created with `spec.nodeName` also has it moved into a required
node affinity (resourceapi.routing.pin_to_node), as DaemonSet pods have. The rule (resourceapi/routing.py)
needs the cluster's DeviceClasses and Namespace labels, read from an informer cache; with a cold cache the pod
is allowed unchanged and counted. Nothing here ever denies a pod: a routing endpoint must never block pod
creation.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from resourceapi import routing
from resourceapi.machinery.objects import display_name
from webhook.podrouting.routing_cache import RoutingCache
from webhook.server.endpoints import Endpoint, EndpointLimits
from webhook.server.judging import Judged, Verdict, judge
from webhook.server.limits import ServerLimits

# The path the router serves (without its leading slash), as charts/dra-capacity registers it.
POD_ENDPOINT = "mutate-pods"
DEFAULT_SCHEDULER_NAME = "dra-capacity"
COLD = "cold-cache"


@dataclass
class RoutingOutcome:
    """The server's Outcome protocol (webhook/server/judging.py)."""

    response: dict[str, Any]
    handled: bool = True
    cause_types: list[str] = field(default_factory=list)
    name: str = ""
    operation: str = ""
    routing: str = ""  # the verdict counted (a Verdict's `routing`), "" for reviews not routed at all


class PodRoutingMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.decisions = Counter(
            "dra_capacity_webhook_pod_routing",
            "Pod CREATE reviews by routing verdict (route, not-opted-in, no-capacity-resource, "
            "own-scheduler, unsupported, cold-cache).",
            ["verdict"],
            registry=registry,
        )
        for verdict in [*(v.value for v in routing.Verdict), COLD]:
            self.decisions.labels(verdict)


def _patch(scheduler_name: str, more: list[dict[str, Any]] | None = None) -> str:
    ops = [{"op": "add", "path": "/spec/schedulerName", "value": scheduler_name}, *(more or [])]
    return base64.b64encode(json.dumps(ops, separators=(",", ":")).encode()).decode()


class PodRouter:
    def __init__(
        self,
        cache: RoutingCache,
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        metrics: PodRoutingMetrics | None = None,
    ) -> None:
        self.cache = cache
        self.scheduler_name = scheduler_name
        self.metrics = metrics or PodRoutingMetrics(CollectorRegistry())
        self._patch = _patch(scheduler_name)
        self._counters = {v: self.metrics.decisions.labels(v.value) for v in routing.Verdict}
        self._cold = self.metrics.decisions.labels(COLD)

    def mutate(self, request: dict[str, Any]) -> RoutingOutcome:
        uid = request["uid"]
        operation = request.get("operation")
        op = operation if isinstance(operation, str) else ""
        kind = request.get("kind")
        obj = request.get("object")
        if not isinstance(kind, dict) or kind.get("kind") != "Pod" or kind.get("group") not in ("", None):
            return RoutingOutcome({"uid": uid, "allowed": True}, handled=False, operation=op)
        if op != "CREATE" or not isinstance(obj, dict) or request.get("subResource"):
            return RoutingOutcome({"uid": uid, "allowed": True}, operation=op)
        name = display_name(obj)
        names = self.cache.routed_names()
        if names is None:
            self._cold.inc()
            return RoutingOutcome(
                {
                    "uid": uid,
                    "allowed": True,
                    "warnings": [
                        "dra-capacity: pod routing is not ready (DeviceClass cache not synced): pod admitted "
                        "unchanged"
                    ],
                },
                name=name,
                operation=op,
                routing=COLD,
            )
        namespace = request.get("namespace")
        ns = namespace if isinstance(namespace, str) and namespace else "default"
        decision = routing.decide(
            obj, names, self.cache.namespace_labels(ns), self.scheduler_name, self.cache.all_namespaces
        )
        self._counters[decision.verdict].inc()
        response: dict[str, Any] = {"uid": uid, "allowed": True}
        if decision.routed:
            response["patchType"] = "JSONPatch"
            pinned = routing.pin_to_node(obj, decision.node) if decision.node else None
            response["patch"] = _patch(self.scheduler_name, pinned) if pinned else self._patch
        warning = decision.warning(self.scheduler_name)
        if warning is not None:
            response["warnings"] = [warning]
        return RoutingOutcome(response, name=name, operation=op, routing=decision.verdict.value)

    def endpoint(self, limits: ServerLimits) -> Endpoint:
        """`/mutate-pods`: judged on the loop (cheap by construction), a large review by a worker, whose
        routing decision is then counted here."""
        bodies = EndpointLimits(limits.pod_max_body, limits.pod_inline_max_body)
        return Endpoint(POD_ENDPOINT, self.mutate, bodies, offload=self.offload, counted=self.count)

    def offload(self, body: bytes) -> Callable[[], Judged]:
        """A large review's job for a worker (process or thread): the body and a copy of what routing reads
        from the cache now, so the worker parses and judges it off the event loop."""
        return functools.partial(route_in_worker, self.cache.snapshot(), self.scheduler_name, body)

    def count(self, verdict: Verdict) -> None:
        """Count the routing decision of a review a worker judged (its own counters are the worker's)."""
        if verdict.routing:
            self.metrics.decisions.labels(verdict.routing).inc()


def route_in_worker(cache: RoutingCache, scheduler_name: str, body: bytes) -> Judged:
    """Parse and judge one `/mutate-pods` review where it runs (a worker), with the cache snapshot given."""
    return judge(PodRouter(cache, scheduler_name).mutate, body)
