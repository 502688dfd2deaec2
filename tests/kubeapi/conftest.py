"""The double's behavioural tests run against both servers: each test that uses `kube_api` or `kube_client`
runs once on the double (`[double]`) and once on a real kube-apiserver v1.37 (`[real]`, marked `realcluster`,
so `make quick` runs only the first). A test marked `double_only(reason)` (fault injection, the double's own
inspection hooks, or a disagreement kept on purpose, each listed in README.md) runs on the double only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubeapi.double import KubeAPIServer

SERVERS = ["double", pytest.param("real", marks=pytest.mark.realcluster)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kube_server" in metafunc.fixturenames:
        only_double = metafunc.definition.get_closest_marker("double_only") is not None
        metafunc.parametrize("kube_server", ["double"] if only_double else SERVERS, indirect=True)


@pytest.fixture
def kube_server(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def calibration_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real cluster for the whole list (no GPU slices), reset between tests."""
    from realcluster.calibration import CONFIG, RealAPIServer

    from localcluster.cluster import Cluster

    with Cluster.start(tmp_path_factory.mktemp("calibration"), CONFIG) as cluster:
        yield RealAPIServer(cluster)


@pytest.fixture
def kube_api(kube_server: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The double (fresh per test) or the real cluster (reset to a fresh cluster's state)."""
    if kube_server == "double":
        with KubeAPIServer(workdir=tmp_path / "kubeapi") as server:
            yield server
    else:
        real = request.getfixturevalue("calibration_server")
        real.reset()
        yield real


# `kube_client` is tests/conftest.py's (kubeapi.fixtures): it asks for `kube_api`, so here it gets this one.


@pytest.fixture
def core(kube_client: client.ApiClient) -> client.CoreV1Api:
    """The core/v1 API of `kube_client` (the double or the real server, as `kube_api`)."""
    return client.CoreV1Api(kube_client)
