"""Test-suite wide setup: the kube-apiserver test double's fixtures (`kube_api`, `kube_client`).

`tests/` is on the path through pytest's `pythonpath` (pyproject.toml): tests import `kubeapi` and
`support.<module>`."""

from __future__ import annotations

from kubeapi.fixtures import kube_api, kube_client

__all__ = ["kube_api", "kube_client"]
