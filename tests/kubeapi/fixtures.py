"""pytest fixtures for the kube-apiserver TEST DOUBLE (registered by tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .double import KubeAPIServer


@pytest.fixture
def kube_api(tmp_path: Path) -> Iterator[KubeAPIServer]:
    """A fresh double per test, serving on a free loopback port; its kubeconfig is
    `kube_api.kubeconfig_path`."""
    with KubeAPIServer(workdir=tmp_path / "kubeapi") as server:
        yield server


@pytest.fixture
def kube_client(kube_api: KubeAPIServer) -> Iterator[Any]:
    """A `kubernetes.client.ApiClient` for `kube_api`."""
    client = kube_api.api_client()
    try:
        yield client
    finally:
        client.close()
