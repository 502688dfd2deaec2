"""core/v1 Events about pods, sent off the bind path by one background thread (best effort, like client-go's
event recorder: a lost Event never fails or delays a bind)."""

from __future__ import annotations

import logging
import queue
import secrets
import threading
from collections.abc import Mapping
from typing import Any

from binder.claims import now_rfc3339
from binder.names import COMPONENT
from kubeio.kube import EVENTS, ApiError, Kube, Obj

log = logging.getLogger("dra_capacity.binder")
MAX_MESSAGE = 1024  # the API server refuses longer Event messages


def _ref(pod: Mapping[str, Any]) -> Obj:
    meta = pod.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": meta.get("namespace"),
        "name": str(meta.get("name") or "pod"),
        "uid": meta.get("uid"),
    }


def event_body(
    pod: Mapping[str, Any],
    kind: str,
    reason: str,
    message: str,
    instance: str,
    action: str | None = None,
    related: Mapping[str, Any] | None = None,
) -> Obj:
    """A core/v1 Event on `pod`; `action` and `related` (another pod) as the events.k8s.io recorder's
    `Eventf(regarding, related, type, reason, action, note)` gives them (preemption's `Preempted`)."""
    meta = pod.get("metadata") or {}
    now = now_rfc3339()
    name = str(meta.get("name") or "pod")
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name[:200]}.{secrets.token_hex(8)}", "namespace": meta.get("namespace")},
        "involvedObject": _ref(pod),
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "type": kind,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    if action is not None:
        body["action"] = action
    if related is not None:
        body["related"] = _ref(related)
    return body


class EventSink:
    def __init__(self, kube: Kube, instance: str, maxsize: int = 10000) -> None:
        self.kube = kube
        self.instance = instance
        self._queue: queue.Queue[Obj | None] = queue.Queue(maxsize)
        self._thread = threading.Thread(target=self._run, name="binder-events", daemon=True)
        self.sent = 0
        self.dropped = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued (up to `timeout`), then stop."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def backlog(self) -> int:
        """Events queued and not sent yet."""
        return self._queue.qsize()

    def emit(
        self,
        pod: Mapping[str, Any],
        kind: str,
        reason: str,
        message: str,
        *,
        action: str | None = None,
        related: Mapping[str, Any] | None = None,
    ) -> None:
        try:
            self._queue.put_nowait(event_body(pod, kind, reason, message, self.instance, action, related))
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            try:
                self.kube.request("POST", EVENTS.path(body["metadata"]["namespace"]), body=body, timeout=10.0)
                self.sent += 1
            except ApiError as exc:
                self.dropped += 1
                log.debug("event not recorded: %s", exc)
