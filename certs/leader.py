"""Leader election on a coordination.k8s.io/v1 Lease, as client-go does it (kubernetes/kubernetes
staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go, tryAcquireOrRenew).

Each candidate reads the Lease; it takes it when the Lease is free, is its own, or has not changed for
`lease_duration` by the candidate's own monotonic clock (client-go judges expiry from when it *observed* the
record change, not from the holder's renewTime, so clock skew between nodes does not matter). Writes carry
the resourceVersion read, so two candidates never both win: the slower one gets 409 and stays a follower.

The official client's `kubernetes.leaderelection` runs the leader's work in a thread it cannot cancel when
the lease is lost. Here the controller calls `try_acquire_or_renew()` before each reconcile and does its
work in between, synchronously, so losing the lease simply stops the next write.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client import ApiException

from certs.cluster import ClusterError


def _micro_time(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseElector:
    """One candidate for the Lease `namespace/name`."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api: Any = api
        self.coordination: Any = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self._monotonic = monotonic
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._renewed_at: float | None = None

    @property
    def is_leader(self) -> bool:
        """True while our last successful renewal is younger than the lease duration."""
        return self._renewed_at is not None and self._monotonic() - self._renewed_at < self.lease_duration

    def _spec(self, holder: str, now: datetime.datetime, acquired: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": holder,
            "leaseDurationSeconds": max(int(self.lease_duration), 1),
            "acquireTime": acquired,
            "renewTime": _micro_time(now),
            "leaseTransitions": transitions,
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the Lease afterwards."""
        now = datetime.datetime.now(datetime.UTC)
        where = f"lease {self.namespace}/{self.name}"
        try:
            raw = self.api.sanitize_for_serialization(
                self.coordination.read_namespaced_lease(self.name, self.namespace)
            )
        except ApiException as exc:
            if exc.status != 404:
                raise ClusterError(f"{where}: get: HTTP {exc.status}") from None
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(self.identity, now, _micro_time(now), 0),
            }
            try:
                self.coordination.create_namespaced_lease(self.namespace, body)
            except ApiException as create_exc:
                if create_exc.status == 409:
                    return False
                raise ClusterError(f"{where}: create: HTTP {create_exc.status}") from None
            self._renewed_at = self._monotonic()
            return True
        spec = raw.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        mono = self._monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, mono
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and mono - self._observed_at < duration:
            self._renewed_at = None
            return False
        ours = holder == self.identity
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if ours else 1)
        acquired = str(spec.get("acquireTime") or "") if ours else _micro_time(now)
        raw["spec"] = self._spec(self.identity, now, acquired or _micro_time(now), transitions)
        try:
            self.coordination.replace_namespaced_lease(self.name, self.namespace, raw)
        except ApiException as exc:
            if exc.status == 409:
                self._renewed_at = None
                return False
            raise ClusterError(f"{where}: update: HTTP {exc.status}") from None
        self._renewed_at = mono
        self._observed = (self.identity, raw["spec"]["renewTime"])
        self._observed_at = mono
        return True

    def release(self) -> None:
        """Give the Lease up on a clean stop, so a follower takes over at once instead of after expiry."""
        if self._renewed_at is None:
            return
        self._renewed_at = None
        try:
            raw = self.api.sanitize_for_serialization(
                self.coordination.read_namespaced_lease(self.name, self.namespace)
            )
            spec = raw.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec["holderIdentity"] = ""
            spec["leaseDurationSeconds"] = 1
            raw["spec"] = spec
            self.coordination.replace_namespaced_lease(self.name, self.namespace, raw)
        except ApiException:
            return
