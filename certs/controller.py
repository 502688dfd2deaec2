"""`certs controller`: keep the webhook's certificates healthy from inside its Deployment.

Every replica runs one (the chart runs it as a native sidecar of the webhook container):

* all of them mirror the Secret's `tls.crt`, `tls.key` and `ca.crt` into the directory the webhook serves
  from (a shared emptyDir), so the webhook's own hot reload (webhook/server/tlsreload.py) picks a rotation up
  within seconds, without waiting for the kubelet's Secret-volume sync;
* the one holding the Lease reconciles (certs/operations.py): creates the material on first install, renews
  at two thirds of a lifetime, runs CA rotations, and restores any caBundle that differs from the Secret's
  `ca.crt` (GitOps tools re-apply the rendered configurations, which carry no caBundle).

Watches on the Secret and on each webhook configuration wake the loop at once; a resync period bounds how
long any missed event can stay unnoticed. `/healthz` answers while the loop runs; `/readyz` once the
directory holds a serving pair (the webhook container starts only after that, via the sidecar's startup
probe).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from certs.cluster import MUTATING, VALIDATING, CertCluster, ClusterError, Conflict
from certs.files import TLS_CRT, TLS_KEY
from certs.material import MaterialError
from certs.operations import NotManaged, mirror_files, reconcile
from certs.plan import Settings
from kubeio.election import LeaderElector, LeaseError
from kubeio.informer import Informer
from kubeio.kube import MUTATING_WEBHOOK_CONFIGURATIONS, SECRETS, VALIDATING_WEBHOOK_CONFIGURATIONS, Kube

log = logging.getLogger("dra_capacity.certs")
WATCH_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class ControllerOptions:
    tls_dir: Path | None = None
    # Replicas to dial instead of the Service's EndpointSlices (outside a cluster, and in tests).
    endpoints: tuple[tuple[str, int], ...] | None = None
    resync: float = 30.0
    retry: float = 2.0
    watch: bool = True
    # False when the elector renews on its own thread (a procrt Manager's): `step` then only asks it.
    renew: bool = True


class Controller:
    """The loop described in the module docstring; `run(stop)` returns when `stop` is set."""

    def __init__(
        self,
        cluster: CertCluster,
        settings: Settings,
        elector: LeaderElector,
        options: ControllerOptions,
        *,
        emit: Callable[[str], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.settings = settings
        self.elector = elector
        self.options = options
        self.emit = emit or (lambda line: log.info(line))
        self.wake = threading.Event()
        self.healthy = True
        self.reconciles = 0
        self._scope_said: list[str] = []  # the managed/skipped lines last emitted (emitted again on change)
        self._leading = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        d = self.options.tls_dir
        if d is None:
            return self.healthy
        return (d / TLS_CRT).exists() and (d / TLS_KEY).exists()

    def not_ready(self) -> str | None:
        """The readiness check: None once ready, else why not."""
        if self.ready:
            return None
        if self.options.tls_dir is None:
            return "the last reconcile failed"
        return f"no serving certificate in {self.options.tls_dir} yet"

    def _start_watches(self) -> list[Informer]:
        """One informer on the Secret and one on each webhook configuration; every change wakes the loop
        (the first list too). Each reconnects and relists on its own (kubeio/informer.py)."""
        if not self.options.watch:
            return []
        c = self.cluster
        kube = Kube.of_client(c.api)
        informers = [
            Informer(
                kube,
                SECRETS,
                namespace=c.namespace,
                field_selector=f"metadata.name={c.secret}",
                watch_timeout=WATCH_TIMEOUT_SECONDS,
            )
        ]
        for ref in c.configs:
            for kind in ref.kinds:
                assert kind in (VALIDATING, MUTATING)
                resource = (
                    VALIDATING_WEBHOOK_CONFIGURATIONS
                    if kind == VALIDATING
                    else MUTATING_WEBHOOK_CONFIGURATIONS
                )
                informers.append(
                    Informer(
                        kube,
                        resource,
                        field_selector=f"metadata.name={ref.name}",
                        watch_timeout=WATCH_TIMEOUT_SECONDS,
                    )
                )
        for informer in informers:
            informer.listeners.append(self.wake.set)
            informer.start()
        return informers

    def step(self, due: bool = True) -> bool:
        """One pass: renew or take the Lease; when `due` (or just elected), reconcile as leader and mirror
        the Secret into the serving directory. False when it must be retried (conflict, error)."""
        try:
            if self.options.renew:
                was_leader = self.elector.is_leader()
                leading = self.elector.try_acquire_or_renew()
            else:
                was_leader, leading = self._leading, self.elector.is_leader()
            self._leading = leading
            if leading and not was_leader:
                self.emit(f"became the leader ({self.elector.identity})")
                due = True
            if leading and due:
                outcome = reconcile(self.cluster, self.settings, endpoints=self.options.endpoints)
                self.reconciles += 1
                if outcome.scope != self._scope_said:
                    for line in outcome.scope:
                        self.emit(line)
                    self._scope_said = outcome.scope
                if outcome.changed:
                    for line in outcome.lines():
                        self.emit(line)
            tls_dir = self.options.tls_dir
            if due and tls_dir is not None and mirror_files(self.cluster.read_secret(), tls_dir):
                self.emit(f"wrote the serving certificate to {self.options.tls_dir}")
            self.healthy = True
            return True
        except Conflict as exc:
            log.info("conflict, reconciling again: %s", exc)
        except (ClusterError, LeaseError, MaterialError, NotManaged, OSError) as exc:
            self.healthy = False
            self.emit(f"error: {exc}")
        return False

    def run(self, stop: threading.Event) -> None:
        """Renew the Lease every `retry` seconds; reconcile and mirror on a watch event or every `resync`."""
        informers = self._start_watches()
        last = float("-inf")
        retry = False
        try:
            while not stop.is_set():
                due = retry or self.wake.is_set() or time.monotonic() - last >= self.options.resync
                self.wake.clear()
                if due:
                    last = time.monotonic()
                retry = not self.step(due)
                self.wake.wait(self.options.retry)
        finally:
            if self.options.renew:  # else the elector's owner releases it
                with contextlib.suppress(Exception):
                    self.elector.release()
            for informer in informers:
                informer.stop()

    def start(self) -> None:
        """`run` on a thread of its own, until `stop()` (a procrt Manager's runnable)."""
        self._thread = threading.Thread(target=self.run, args=(self._stop,), name="certs-controller")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.wake.set()
        if self._thread is not None:
            self._thread.join()


__all__: Sequence[str] = ["Controller", "ControllerOptions"]
