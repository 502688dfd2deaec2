"""The served cluster's release, read from `/version` at start and periodically (`serve`, `bind`).

During an HA upgrade the API servers answer with different versions, one request at a time: the lowest
release answered within the last `window` reads is the one objects are judged by, as the oldest server would
judge them; once every server is upgraded the old version drops out of the window and the newer release
takes over. Every change is logged; a server newer than every known release is treated as the newest known
one, with a warning and a count (`VersionTracker.unknown`, the `unknown_server_versions` metric). The mapping
is resourceapi/releases.py `server_release`.

`ServedRelease` turns the tracker into the gates to judge by (`--feature-gates` over the release's defaults)
and hands each new assignment to its subscribers, which swap it in whole (webhook/deviceclass/admission.py
`switch`, binder/controller.py `switch`), so no object is judged half by one release and half by another.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge

from kubeio.kube import ApiError, Kube
from resourceapi.gates import FeatureGates
from resourceapi.releases import ServerRelease, lowest, release_warnings, server_release

DEFAULT_INTERVAL = 60.0
DEFAULT_WINDOW = 10
"""Reads a gitVersion stays counted after its last answer (10 minutes at the default interval)."""


@dataclass
class VersionTracker:
    """The releases the API servers reported within the last `window` reads, the lowest of them, and how
    often an unknown one answered."""

    logger: logging.Logger
    window: int = DEFAULT_WINDOW
    seen: dict[str, ServerRelease] = field(default_factory=dict)  # gitVersion -> its release
    unknown: int = 0
    release: str | None = None
    reads: int = 0
    _last: dict[str, int] = field(default_factory=dict, repr=False)  # gitVersion -> the read that saw it
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def observe(self, git_version: str) -> str:
        """Record one `/version` answer; the release to judge by (the lowest within the window). A new
        gitVersion, one dropping out of the window and a change of the lowest release are logged once each."""
        with self._lock:
            self.reads += 1
            mapped = self.seen.get(git_version)
            if mapped is None:
                mapped = server_release(git_version)
                self.seen[git_version] = mapped
                self.logger.info(
                    "API server version seen",
                    extra={"git_version": git_version, "release": mapped.name, "servers": sorted(self.seen)},
                )
                if mapped.warning:
                    self.logger.warning(mapped.warning, extra={"git_version": git_version})
            self._last[git_version] = self.reads
            if mapped.unknown:
                self.unknown += 1
            for gone in [v for v, at in self._last.items() if self.reads - at >= self.window]:
                del self._last[gone], self.seen[gone]
                self.logger.info(
                    "API server version no longer seen",
                    extra={"git_version": gone, "reads": self.window, "servers": sorted(self.seen)},
                )
            now = lowest([r.name for r in self.seen.values()])
            if now != self.release:
                self.logger.info(
                    "judging as Kubernetes %s",
                    now,
                    extra={"previous": self.release, "release": now, "servers": sorted(self.seen)},
                )
                self.release = now
            return now


def read_git_version(kube: Kube) -> str:
    """`GET /version`'s gitVersion."""
    return str(kube.request("GET", "/version", timeout=10.0).get("gitVersion", ""))


def watch(
    kube: Kube,
    tracker: VersionTracker,
    stop: threading.Event,
    interval: float = DEFAULT_INTERVAL,
    on_change: Callable[[str], None] | None = None,
    on_read: Callable[[], None] | None = None,
) -> threading.Thread:
    """Poll `/version` every `interval` seconds until `stop` is set (a daemon thread); `on_change` gets each
    new lowest release, `on_read` runs after each answer. A failed read is logged and retried at the next
    tick."""

    def loop() -> None:
        while not stop.wait(interval):
            before = tracker.release
            try:
                now = tracker.observe(read_git_version(kube))
            except ApiError as exc:
                tracker.logger.warning("reading /version failed", extra={"error": str(exc)})
                continue
            if on_read is not None:
                on_read()
            if on_change is not None and now != before:
                try:
                    on_change(now)
                except Exception:  # a subscriber's bug must not end the watch
                    tracker.logger.exception("switching to Kubernetes %s failed", now)

    thread = threading.Thread(target=loop, name="server-version", daemon=True)
    thread.start()
    return thread


class ReleaseMetrics:
    """The judged release and the unknown answers: `<prefix>_kubernetes_release{release}` (1 for the release
    judged by), `<prefix>_kubernetes_release_changes_total` and `<prefix>_unknown_server_versions_total`
    (answers of a release dra-capacity does not know)."""

    def __init__(self, registry: CollectorRegistry, prefix: str) -> None:
        self.release = Gauge(
            f"{prefix}_kubernetes_release",
            "1 for the Kubernetes release objects are judged by (the lowest the API servers report).",
            ["release"],
            registry=registry,
        )
        self.changes = Counter(
            f"{prefix}_kubernetes_release_changes",
            "Changes of the release judged by after start (an upgrade or a downgrade seen on /version).",
            registry=registry,
        )
        self.unknown = Counter(
            f"{prefix}_unknown_server_versions",
            "/version answers naming a release dra-capacity does not know (judged as the nearest known one).",
            registry=registry,
        )
        self._shown: str | None = None
        self._unknown_counted = 0

    def show(self, release: str, tracker: VersionTracker) -> None:
        """The gauge on `release`; the unknown counter caught up with the tracker's count."""
        if release != self._shown:
            if self._shown is not None:
                self.release.remove(self._shown)
            self.release.labels(release).set(1)
            self._shown = release
        extra = tracker.unknown - self._unknown_counted
        if extra > 0:
            self.unknown.inc(extra)
            self._unknown_counted = tracker.unknown


class ServedRelease:
    """The gates of the served cluster: `spec` (`--feature-gates`) parsed over the defaults of the release
    `/version` reports (the lowest within the tracker's window), re-derived when it changes and handed to
    each subscriber. With no readable `/version` at start, `gates` (the default release) stand."""

    def __init__(
        self,
        kube: Kube,
        spec: str | None,
        gates: FeatureGates,
        logger: logging.Logger,
        *,
        window: int = DEFAULT_WINDOW,
        metrics: ReleaseMetrics | None = None,
    ) -> None:
        self.kube = kube
        self.spec = spec
        self.gates = gates
        self.logger = logger
        self.metrics = metrics
        self.tracker = VersionTracker(logger, window=window)
        self._subscribers: list[Callable[[FeatureGates], None]] = []
        self._lock = threading.Lock()

    def read(self) -> FeatureGates:
        """The first `/version` read: the gates to start with, the release's warnings logged."""
        try:
            served = self.tracker.observe(read_git_version(self.kube))
        except ApiError as exc:
            self.logger.warning(
                "reading /version failed: judging as the default release", extra={"error": str(exc)}
            )
            self._show()
            return self.gates
        self.gates = self._derive(served)
        self._show()
        return self.gates

    def subscribe(self, switch: Callable[[FeatureGates], None]) -> None:
        """`switch(gates)` is called (from the watch thread) with every new assignment."""
        self._subscribers.append(switch)

    def watch(self, stop: threading.Event, interval: float = DEFAULT_INTERVAL) -> threading.Thread:
        """Follow `/version` until `stop` (kubeio/serverversion.py `watch`)."""
        return watch(self.kube, self.tracker, stop, interval, on_change=self._changed, on_read=self._show)

    def _derive(self, name: str) -> FeatureGates:
        gates = FeatureGates.parse(self.spec, name)
        for warning in release_warnings(gates):
            self.logger.warning(warning)
        return gates

    def _changed(self, name: str) -> None:
        with self._lock:
            if name == self.gates.release:
                return
            self.gates = gates = self._derive(name)
            if self.metrics is not None:
                self.metrics.changes.inc()
            self._show()
            for switch in self._subscribers:
                switch(gates)
            self.logger.info(
                "switched to Kubernetes %s", name, extra={"release": name, "feature_gates": str(gates)}
            )

    def _show(self) -> None:
        if self.metrics is not None:
            self.metrics.show(self.gates.release, self.tracker)
