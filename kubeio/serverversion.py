"""The served cluster's release, read from `/version` at start and periodically (`serve`, `bind`).

During an HA upgrade the API servers answer with different versions, one request at a time: the lowest
release seen is the one objects are judged by, as the oldest server would judge them. Every change is
logged; a server newer than every known release is treated as the newest known one, with a warning and a
count (`unknown` in `VersionTracker.snapshot`). The mapping is resourceapi/releases.py `server_release`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from kubeio.kube import ApiError, Kube
from resourceapi.gates import FeatureGates
from resourceapi.releases import ServerRelease, lowest, release_warnings, server_release

DEFAULT_INTERVAL = 60.0


@dataclass
class VersionTracker:
    """The releases the API servers reported, the lowest of them, and how often an unknown one answered."""

    logger: logging.Logger
    seen: dict[str, ServerRelease] = field(default_factory=dict)  # gitVersion -> its release
    unknown: int = 0
    release: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def observe(self, git_version: str) -> str:
        """Record one `/version` answer; the release to judge by (the lowest seen). A new gitVersion and a
        change of the lowest release are logged once each."""
        with self._lock:
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
            if mapped.unknown:
                self.unknown += 1
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
    return str(kube.request("GET", "/version").get("gitVersion", ""))


def watch(
    kube: Kube,
    tracker: VersionTracker,
    stop: threading.Event,
    interval: float = DEFAULT_INTERVAL,
    on_change: Callable[[str], None] | None = None,
) -> threading.Thread:
    """Poll `/version` every `interval` seconds until `stop` is set (a daemon thread); `on_change` gets each
    new lowest release. A failed read is logged and retried at the next tick."""

    def loop() -> None:
        while not stop.wait(interval):
            before = tracker.release
            try:
                now = tracker.observe(read_git_version(kube))
            except ApiError as exc:
                tracker.logger.warning("reading /version failed", extra={"error": str(exc)})
                continue
            if on_change is not None and now != before:
                on_change(now)

    thread = threading.Thread(target=loop, name="server-version", daemon=True)
    thread.start()
    return thread


def served_gates(
    kube: Kube, spec: str | None, gates: FeatureGates, logger: logging.Logger
) -> tuple[FeatureGates, VersionTracker]:
    """`spec` (`--feature-gates`) parsed over the defaults of the release the API server reports at start
    (`/version`; an unreadable one keeps `gates`, with a warning), the release's warnings logged; the tracker
    then follows later answers (`watch`)."""
    versions = VersionTracker(logger)
    try:
        served = versions.observe(read_git_version(kube))
    except ApiError as exc:
        logger.warning("reading /version failed: judging as the default release", extra={"error": str(exc)})
        return gates, versions
    gates = FeatureGates.parse(spec, served)
    for warning in release_warnings(gates):
        logger.warning(warning)
    return gates, versions
