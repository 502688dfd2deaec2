"""Events on DeviceClasses that the published devices can no longer serve.

A driver that republishes its ResourceSlices (a new driver version renames a capacity, a node pool goes
away) can silently strand a class that was fine when it was admitted: every pod using it stays pending. After
each new `ClusterView`, the webhook re-checks the classes that ask for capacity and emits a Warning Event
(events.k8s.io/v1) on each class whose capacity request no device can serve any more.

The Event's name is derived from the class and the finding, so replicas and restarts that see the same
finding create it once (the second create is AlreadyExists); a finding that goes away is forgotten, and is
reported again if it comes back.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
from collections.abc import Callable
from typing import Any

from procrt.identity import instance_name
from resourceapi.capacity_requests import ANNOTATION, CAPACITY_FIELD
from resourceapi.cel import CelCache
from resourceapi.gates import FeatureGates
from webhook.clusterview.cluster_view import ClusterView
from webhook.deviceclass.cluster_warnings import cluster_findings

log = logging.getLogger(__name__)

REASON = "NoDeviceCanServe"
REPORTING_CONTROLLER = "dra-capacity.io/webhook"
EventSink = Callable[[dict[str, Any]], None]


class ClassEvents:
    """Re-checks every capacity-requesting class against each new view; emits an Event per new finding."""

    def __init__(self, gates: FeatureGates, sink: EventSink, namespace: str = "default") -> None:
        self._gates = gates
        self._sink = sink
        self._namespace = namespace
        self._cache = CelCache()
        self._reported: set[tuple[str, str]] = set()
        self._instance = instance_name()

    def switch(self, gates: FeatureGates) -> None:
        """Judge the next views by `gates` (the served release changed: webhook/deviceclass/admission.py)."""
        self._gates = gates

    def on_view(self, view: ClusterView) -> list[dict[str, Any]]:
        """Check the view; return (and send) the Events of findings not reported before."""
        current: set[tuple[str, str]] = set()
        sent: list[dict[str, Any]] = []
        gates = self._gates
        if not view.devices:
            return sent  # nothing published (yet): no class can be judged
        for name, device_class in sorted(view.classes.items()):
            obj = device_class.to_api()
            spec = obj.get("spec") or {}
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if spec.get(CAPACITY_FIELD) is None and ANNOTATION not in annotations:
                continue
            for finding in cluster_findings(obj, view, gates, self._cache.compile):
                if not finding.stranding:
                    continue
                text = finding.text
                key = (name, text)
                current.add(key)
                if key in self._reported:
                    continue
                event = self._event(obj, text)
                try:
                    self._sink(event)
                except Exception as exc:  # an Event is advice: never let it break the cache
                    log.warning("cannot emit Event for DeviceClass %r: %s", name, exc)
                    continue
                sent.append(event)
        self._reported = {k for k in self._reported if k in current} | {
            (e["regarding"]["name"], e["note"]) for e in sent
        }
        return sent

    def _event(self, obj: dict[str, Any], text: str) -> dict[str, Any]:
        """An events.k8s.io/v1 Event regarding the class, named after the class and the finding."""
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        digest = hashlib.sha256(f"{name}\n{text}".encode()).hexdigest()[:16]
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{name[:200]}.{digest}", "namespace": self._namespace},
            "eventTime": now,
            "type": "Warning",
            "reason": REASON,
            "action": "CheckPublishedDevices",
            "note": text,
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self._instance[:128],
            "regarding": {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "name": name,
                "uid": meta.get("uid") or "",
                "resourceVersion": meta.get("resourceVersion") or "",
            },
        }
