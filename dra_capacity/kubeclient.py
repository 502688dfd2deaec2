"""How every command reaches a cluster: `--kubeconfig PATH [--context NAME]`, else the in-cluster config."""

from __future__ import annotations

import os
from typing import Any


class ClusterConfigError(ValueError):
    """No usable cluster configuration (one line, naming the file or the missing environment)."""


def in_cluster() -> bool:
    """True inside a pod with a service account (the in-cluster config's own test)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def api_client(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A `kubernetes.client.ApiClient` for the kubeconfig (and context) given, else the in-cluster config."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
        else:
            config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
    except (ConfigException, OSError) as exc:
        where = kubeconfig or "the in-cluster service account"
        raise ClusterConfigError(f"cannot load cluster configuration from {where}: {exc}") from None
    return client.ApiClient(configuration)
