"""Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `tools/leaderelection` does it.

A candidate takes the lease when it is free or when its record has not changed for `lease_duration` as
observed locally (client-go's observedTime: no trust in other clocks). The leader renews every
`retry_period`; when it has not renewed for `renew_deadline` it is no longer leader, at once: `is_leader()`
is checked before every write, so a leader that loses its lease stops placing even if its renewals hang, and
`on_lost` fires (the command exits so the process restarts clean, as kube-scheduler does). Every write is an
update with the resourceVersion read, so two candidates never both win.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from allocator.binder.kube import LEASES, ApiError, Kube, Obj

log = logging.getLogger("dra_capacity.binder")

DEFAULT_LEASE_NAME = "dra-capacity-binder"
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str = DEFAULT_LEASE_NAME,
        identity: str | None = None,
        *,
        lease_duration: float = DEFAULT_LEASE_DURATION,
        renew_deadline: float = DEFAULT_RENEW_DEADLINE,
        retry_period: float = DEFAULT_RETRY_PERIOD,
        on_started: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease duration > renew deadline > retry period > 0")
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started = on_started
        self.on_lost = on_lost
        self.clock = clock
        self._leading = False
        self._last_renew = 0.0
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = threading.Event()

    def is_leader(self) -> bool:
        """True while this replica holds a lease it renewed within the renew deadline."""
        return self._leading and self.clock() - self._last_renew < self.renew_deadline

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.retry_period + 35.0)
        if release and self._leading:
            self._release()
        self._leading = False

    # --- the loop -------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._leading:
                if self._try_acquire_or_renew():
                    self._leading = True
                    self._last_renew = self.clock()
                    log.info(
                        "leader election: %s acquired lease %s/%s", self.identity, self.namespace, self.name
                    )
                    if self.on_started is not None:
                        self.on_started()
                    continue
                self._stop.wait(self.retry_period)
                continue
            if self._try_acquire_or_renew():
                self._last_renew = self.clock()
            elif self.clock() - self._last_renew >= self.renew_deadline:
                self._leading = False
                log.warning("leader election: %s lost lease %s/%s", self.identity, self.namespace, self.name)
                self.lost.set()
                if self.on_lost is not None:
                    self.on_lost()
                return
            self._stop.wait(self.retry_period)

    def _spec(self, transitions: int, acquire: str | None) -> Obj:
        now = _micro_time()
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(round(self.lease_duration), 1),
            "acquireTime": acquire or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _try_acquire_or_renew(self) -> bool:
        try:
            lease = self.kube.get(LEASES, self.namespace, self.name)
        except ApiError as exc:
            if not exc.not_found:
                log.debug("leader election: get lease: %s", exc)
                return False
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(0, None),
            }
            try:
                self.kube.request(
                    "POST", LEASES.path(self.namespace), body=body, timeout=self.retry_period * 2
                )
            except ApiError as exc2:
                log.debug("leader election: create lease: %s", exc2)
                return False
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("acquireTime"), spec.get("leaseTransitions"))
        now = self.clock()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        mine = holder == self.identity
        if holder and not mine and now - self._observed_at < duration:
            return False  # held by someone else and not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = self._spec(
            transitions if mine else transitions + 1, spec.get("acquireTime") if mine else None
        )
        lease["spec"] = {**spec, **new_spec}
        try:
            self.kube.request(
                "PUT", LEASES.path(self.namespace, self.name), body=lease, timeout=self.retry_period * 2
            )
        except ApiError as exc:
            log.debug("leader election: update lease: %s", exc)
            return False
        return True

    def _release(self) -> None:
        """Give the lease up on a clean stop, so a standby takes over without waiting for expiry."""
        try:
            lease = self.kube.get(LEASES, self.namespace, self.name)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec["holderIdentity"] = ""
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = _micro_time()
            lease["spec"] = spec
            self.kube.request("PUT", LEASES.path(self.namespace, self.name), body=lease, timeout=5.0)
        except ApiError as exc:
            log.debug("leader election: release: %s", exc)


def pod_namespace() -> str:
    """The namespace this pod runs in (service account mount), else `default`."""
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return os.environ.get("POD_NAMESPACE", "default")
