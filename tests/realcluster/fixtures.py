"""pytest plugin for the real control plane (registered by tests/conftest.py).

* `real_cluster`: one cluster per test session (per xdist worker), started on first use.
* `real_cluster_factory`: `real_cluster_factory(ClusterConfig(...))` starts a fresh one, stopped after the
  test.

Every test that uses either gets the `realcluster` marker (so `make quick` deselects it), and a failing one
shows the tail of every component's log in its report.
"""

from __future__ import annotations

import itertools
import signal
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from localcluster.cluster import Cluster, ClusterConfig
from localcluster.netns import reclaim_stale

FIXTURES = ("real_cluster", "real_cluster_factory")
_STARTED: list[Cluster] = []


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("realcluster")
    with Cluster.start(workdir) as cluster:
        print(f"\nrealcluster: {cluster.version} ready in {cluster.startup_seconds:.1f} s in {workdir}")
        _STARTED.append(cluster)
        try:
            yield cluster
        finally:
            _STARTED.remove(cluster)


@pytest.fixture
def real_cluster_factory(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    started: list[Cluster] = []
    counter = itertools.count()

    def start(config: ClusterConfig | None = None) -> Cluster:
        cluster = Cluster.launch(tmp_path / f"cluster-{next(counter)}", config)
        started.append(cluster)
        _STARTED.append(cluster)
        return cluster

    try:
        yield start
    finally:
        for cluster in started:
            _STARTED.remove(cluster)
            cluster.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(f in getattr(item, "fixturenames", ()) for f in FIXTURES):
            item.add_marker(pytest.mark.realcluster)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and any(f in getattr(item, "fixturenames", ()) for f in FIXTURES):
        for cluster in list(_STARTED):
            report.sections.append((f"realcluster logs ({cluster.workdir})", cluster.logs()))
    return report


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """SIGTERM (a CI timeout, `timeout`, `kill`) ends the run as Ctrl-C does: the fixtures' teardown still
    stops every process by its PID and removes every network namespace, where the default action skips it."""
    signal.signal(signal.SIGTERM, _interrupt)
    reclaim_stale()


def pytest_sessionfinish(session: pytest.Session) -> None:
    reclaim_stale()  # a namespace whose owner died during the run (a test's own subprocess, killed)
