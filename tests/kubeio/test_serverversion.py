"""`/version` read at start and periodically (kubeio/serverversion.py), against the API double: the lowest
release seen during an HA upgrade, every change logged, an unknown newer server treated as the newest known
release with a warning and a count."""

from __future__ import annotations

import logging
import threading

import pytest
from kubeapi import KubeAPIServer
from prometheus_client import CollectorRegistry, generate_latest
from support import waiting

from kubeio import serverversion
from kubeio.kube import Kube
from resourceapi.gates import FeatureGates
from resourceapi.releases import RELEASES, server_release

LOG = logging.getLogger("test.serverversion")


def _serve(api: KubeAPIServer, git_version: str) -> None:
    """The double's `/version` answers `git_version` from now on (test-double behaviour)."""
    api.serve_versions(git_version)


@pytest.mark.parametrize(
    ("git_version", "release", "unknown"),
    [
        ("v1.37.2", "1.37", False),
        ("v1.38.0-beta.0", "1.38", False),
        ("v1.36.3-gke.1200", "1.36", False),
        ("v1.41.0", "1.38", True),
        ("v1.30.1", "1.34", True),
        ("nonsense", "1.37", True),
    ],
)
def test_server_versions_map_to_known_releases(git_version: str, release: str, unknown: bool) -> None:
    mapped = server_release(git_version)
    assert (mapped.name, mapped.unknown, mapped.warning is not None) == (release, unknown, unknown)
    assert mapped.name in RELEASES


def test_the_lowest_release_seen_is_judged_by_and_each_change_is_logged(
    kube_api: KubeAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    kube = Kube.of_client(kube_api.api_client())
    tracker = serverversion.VersionTracker(LOG)
    caplog.set_level(logging.INFO, LOG.name)
    assert tracker.observe(serverversion.read_git_version(kube)) == "1.37"
    _serve(kube_api, "v1.38.0-beta.0")  # one server upgraded: still judged as 1.37
    assert tracker.observe(serverversion.read_git_version(kube)) == "1.37"
    changes = [r for r in caplog.records if r.getMessage().startswith("judging as")]
    assert [r.getMessage() for r in changes] == ["judging as Kubernetes 1.37"]
    assert {r.getMessage() for r in caplog.records} >= {"API server version seen"}
    kube.close()


def test_an_unknown_newer_server_warns_and_counts(
    kube_api: KubeAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    _serve(kube_api, "v1.41.0")
    kube = Kube.of_client(kube_api.api_client())
    tracker = serverversion.VersionTracker(LOG)
    with caplog.at_level(logging.WARNING, LOG.name):
        assert tracker.observe(serverversion.read_git_version(kube)) == "1.38"
        assert tracker.observe(serverversion.read_git_version(kube)) == "1.38"
    assert tracker.unknown == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "treating it as Kubernetes 1.38, the newest known release" in warnings[0]
    kube.close()


def test_the_watch_reports_a_downgrade_of_the_lowest_release(kube_api: KubeAPIServer) -> None:
    _serve(kube_api, "v1.38.0-beta.0")
    kube = Kube.of_client(kube_api.api_client())
    tracker = serverversion.VersionTracker(LOG)
    tracker.observe(serverversion.read_git_version(kube))
    changes: list[str] = []
    stop = threading.Event()
    thread = serverversion.watch(kube, tracker, stop, interval=0.05, on_change=changes.append)
    try:
        _serve(kube_api, "v1.37.2")  # a server not yet upgraded answers
        waiting.wait_for("the watch to see 1.37", lambda: changes == ["1.37"], timeout=5)
    finally:
        stop.set()
        thread.join(timeout=5)
        kube.close()
    assert tracker.release == "1.37"


def test_an_upgraded_control_plane_is_judged_as_its_release_once_the_old_servers_drop_out(
    kube_api: KubeAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Mid-upgrade the servers answer in turn: the lowest stands; a version unanswered for `window` reads is
    forgotten, so the finished upgrade is judged as the new release, each step logged."""
    kube = Kube.of_client(kube_api.api_client())
    tracker = serverversion.VersionTracker(LOG, window=3)
    caplog.set_level(logging.INFO, LOG.name)
    kube_api.serve_versions("v1.37.2", "v1.38.0-beta.0")
    judged = [tracker.observe(serverversion.read_git_version(kube)) for _ in range(6)]
    assert judged == ["1.37"] * 6
    kube_api.serve_versions("v1.38.0-beta.0")
    judged = [tracker.observe(serverversion.read_git_version(kube)) for _ in range(3)]
    assert judged == ["1.37", "1.38", "1.38"]  # v1.37.2 answered read 5 last, none of reads 6, 7 and 8
    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("API server version no longer seen") == 1
    assert [m for m in messages if m.startswith("judging as")] == [
        "judging as Kubernetes 1.37",
        "judging as Kubernetes 1.38",
    ]
    kube.close()


def test_served_release_hands_new_gates_to_its_subscribers_and_counts_in_metrics(
    kube_api: KubeAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """`--feature-gates` is parsed again over the new release's defaults; the gauge follows the judged
    release, the changes and the unknown answers are counted."""
    kube = Kube.of_client(kube_api.api_client())
    registry = CollectorRegistry()
    metrics = serverversion.ReleaseMetrics(registry, "test")
    served = serverversion.ServedRelease(
        kube, "DRAListTypeAttributes=true", FeatureGates.parse(""), LOG, window=2, metrics=metrics
    )
    assert served.read().release == "1.37"
    got: list[FeatureGates] = []
    served.subscribe(got.append)
    stop = threading.Event()
    thread = served.watch(stop, interval=0.02)
    try:
        with caplog.at_level(logging.WARNING, LOG.name):
            kube_api.serve_versions("v1.41.0")  # newer than every known release: judged as 1.38
            waiting.wait_for("the switch to 1.38", lambda: got, timeout=5)
    finally:
        stop.set()
        thread.join(timeout=5)
        kube.close()
    assert [g.release for g in got] == ["1.38"]
    assert got[0] == FeatureGates.parse("DRAListTypeAttributes=true", "1.38")
    text = generate_latest(registry).decode()
    assert 'test_kubernetes_release{release="1.38"} 1.0' in text
    assert 'test_kubernetes_release{release="1.37"}' not in text
    assert "test_kubernetes_release_changes_total 1.0" in text
    unknown = next(
        line for line in text.splitlines() if line.startswith("test_unknown_server_versions_total")
    )
    assert float(unknown.split()[1]) >= 1
    assert any("the newest known release" in r.getMessage() for r in caplog.records)
