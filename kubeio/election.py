"""Leader election on a `coordination.k8s.io/v1` Lease, as client-go does it (kubernetes/kubernetes
staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go, tryAcquireOrRenew and renew).

A candidate takes the lease when it is free, is its own, or its record has not changed for the lease's
duration as observed locally (client-go's observedTime: expiry is judged from when the candidate *saw* the
record change, never from the holder's renewTime, so clock skew between nodes does not matter). Every write is
an update with the resourceVersion read, so two candidates never both win: the slower one gets 409 and stays a
follower.

`is_leader()` is true only while the last renewal is younger than `renew_deadline`, and false at once when
another holder is seen: it is checked before every write, so a leader that loses its lease stops writing even
if its renewals hang. Two ways to use it:

* `start()`: a thread renews every `retry_period`; when no renewal succeeded for `renew_deadline`, `on_lost`
  fires and the loop ends (the binder then exits so the process restarts clean, as kube-scheduler does);
  `on_started` fires on acquiring.
* `try_acquire_or_renew()` called by the caller's own loop before each unit of work (the certs controller),
  which then does that work synchronously, so losing the lease simply stops the next write. Failures other
  than a conflict raise `LeaseError`, naming the Lease.

The official client's `kubernetes.leaderelection` runs the leader's work in a thread it cannot cancel when the
lease is lost, which is why neither is used.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubeio.kube import LEASES, ApiError, Kube, Obj

log = logging.getLogger("dra_capacity.kubeio")

DEFAULT_LEASE_DURATION = 15.0
"""client-go's defaults (kube-scheduler's --leader-elect-lease-duration 15s, renew deadline 10s, retry 2s);
without explicit values the deadline and the period keep these proportions of the lease duration."""
RENEW_DEADLINE_FRACTION = 2 / 3
RETRY_PERIOD_FRACTION = 2 / 15


class LeaseError(Exception):
    """A Lease read or write failed for a reason other than a conflict; names the Lease and the answer."""


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """One candidate for the Lease `namespace/name`."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = DEFAULT_LEASE_DURATION,
        renew_deadline: float | None = None,
        retry_period: float | None = None,
        request_timeout: float | None = None,
        on_started: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`request_timeout`: per Lease request (default twice the retry period)."""
        renew_deadline = (
            lease_duration * RENEW_DEADLINE_FRACTION if renew_deadline is None else renew_deadline
        )
        retry_period = lease_duration * RETRY_PERIOD_FRACTION if retry_period is None else retry_period
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease duration > renew deadline > retry period > 0")
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity  # the process's (procrt.identity: one rule for every command)
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.request_timeout = request_timeout if request_timeout is not None else retry_period * 2
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
        if release:
            self.release()
        self._leading = False

    # --- the loop -------------------------------------------------------------------------------------------

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except LeaseError as exc:
            # client-go's tryAcquireOrRenew logs each failed get or update of the lock as an error: a
            # missing RBAC rule or an unreachable API server must show in the log, not only in a stuck standby
            log.warning("leader election: %s", exc)
            return False

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._leading:
                if self._attempt():
                    log.info(
                        "leader election: %s acquired lease %s/%s", self.identity, self.namespace, self.name
                    )
                    if self.on_started is not None:
                        self.on_started()
                    continue
                self._stop.wait(self.retry_period)
                continue
            if not self._attempt() and (
                not self._leading or self.clock() - self._last_renew >= self.renew_deadline
            ):
                self._leading = False
                log.warning("leader election: %s lost lease %s/%s", self.identity, self.namespace, self.name)
                self.lost.set()
                if self.on_lost is not None:
                    self.on_lost()
                return
            self._stop.wait(self.retry_period)

    # --- one attempt ----------------------------------------------------------------------------------------

    def _spec(self, transitions: int, acquire: str | None) -> Obj:
        now = _micro_time()
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(round(self.lease_duration), 1),
            "acquireTime": acquire or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _failed(self, verb: str, exc: ApiError) -> LeaseError:
        return LeaseError(
            f"lease {self.namespace}/{self.name}: {verb}: HTTP {exc.status} {exc.reason}".strip()
        )

    def _won(self) -> bool:
        self._leading = True
        self._last_renew = self.clock()
        return True

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards. False when another holder's
        lease has not expired, or on a conflict (someone else wrote first); LeaseError on other failures."""
        try:
            lease = self.kube.get(LEASES, self.namespace, self.name)
        except ApiError as exc:
            if not exc.not_found:
                raise self._failed("get", exc) from None
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(0, None),
            }
            try:
                self.kube.request(
                    "POST", LEASES.path(self.namespace), body=body, timeout=self.request_timeout
                )
            except ApiError as exc2:
                if exc2.status == 409:
                    return False
                raise self._failed("create", exc2) from None
            return self._won()
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("acquireTime"), spec.get("leaseTransitions"))
        now = self.clock()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        mine = holder == self.identity
        if holder and not mine and now - self._observed_at < duration:
            self._leading = False  # someone else holds it: not the leader, at once
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = self._spec(
            transitions if mine else transitions + 1, spec.get("acquireTime") if mine else None
        )
        lease["spec"] = {**spec, **new_spec}
        try:
            self.kube.request(
                "PUT", LEASES.path(self.namespace, self.name), body=lease, timeout=self.request_timeout
            )
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise self._failed("update", exc) from None
        return self._won()

    def release(self) -> None:
        """Give the lease up on a clean stop, so a standby takes over at once instead of after expiry."""
        if not self._leading:
            return
        self._leading = False
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
    """The namespace this pod runs in (service account mount), else `$POD_NAMESPACE`, else `default`."""
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return os.environ.get("POD_NAMESPACE", "default")
