"""Test-suite wide setup: the kube-apiserver test double's fixtures (`kube_api`, `kube_client`).

`tests/` is on the path through pytest's `pythonpath` (pyproject.toml): tests import `kubeapi` and
`support.<module>`."""

from __future__ import annotations

from kubeapi.fixtures import kube_api, kube_client

__all__ = ["kube_api", "kube_client"]

# The real control plane's fixtures (`real_cluster`, `real_cluster_factory`) and its `realcluster` marker.
pytest_plugins = ["realcluster.fixtures"]

# Tests that wait on purpose (lease expiries, CA rotations, timeouts, floods; 5 to 35 s each) carry
# `@pytest.mark.slow` (or a module's `pytestmark`) themselves: `make quick` leaves them out, `make test` runs
# them (docs/testing.md).
