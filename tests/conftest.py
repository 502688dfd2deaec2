"""Test-suite wide setup: the kube-apiserver test double's fixtures (`kube_api`, `kube_client`).

`tests/` is on the path through pytest's `pythonpath` (pyproject.toml): tests import `kubeapi` and
`support.<module>`."""

from __future__ import annotations

import pytest
from kubeapi.fixtures import kube_api, kube_client

__all__ = ["kube_api", "kube_client"]

# The real control plane's fixtures (`real_cluster`, `real_cluster_factory`) and its `realcluster` marker.
pytest_plugins = ["realcluster.fixtures"]

# Tests that wait on purpose (lease expiries, CA rotations, timeouts, floods) and take 5 to 35 s each: marked
# `slow`, so `make quick` leaves them out and `make test` runs them (docs/testing.md). Measured with
# `pytest --durations=60 -n 2`; a renamed test simply stops being slow-marked.
SLOW_TESTS = (
    "tests/allocator/test_allocation_errors.py::test_a_pathological_claim_times_out_on_the_node_by_default",
    "tests/binder/test_bind_cmd.py::test_a_leader_that_loses_its_lease_exits_one",
    "tests/binder/test_binder_chaos.py::test_chaos_kills_at_every_step_keep_the_invariants",
    "tests/certs/test_cluster_controller.py::",
    "tests/certs/test_rotation_serving.py::test_no_request_fails_during_a_ca_rotation",
    "tests/certs/test_cluster_commands.py::test_check_",
    "tests/charts/test_chart_runtime.py::test_the_webhook_pods_certs_sidecar_and_server_work_with_the_chart_args",
    "tests/webhook/test_hostile.py::",
    "tests/webhook/test_server_fuzz.py::",
    "tests/webhook/test_workers_shutdown.py::",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
