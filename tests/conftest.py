"""Test-suite wide setup: `tests/` on sys.path (so any test can `import kubeapi`) and the kube-apiserver
test double's fixtures (`kube_api`, `kube_client`)."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from kubeapi.fixtures import kube_api, kube_client  # noqa: E402

__all__ = ["kube_api", "kube_client"]

# The real control plane's fixtures (`real_cluster`, `real_cluster_factory`) and its `realcluster` marker.
pytest_plugins = ["realcluster.fixtures"]
