"""How every command reaches a cluster: one resolution of the cluster configuration.

`--kubeconfig PATH [--context NAME]` wins. Command-line tools (`simulate`) then resolve as kubectl does:
`$KUBECONFIG`, else `~/.kube/config` when present, else the pod's in-cluster service account. Servers
(`serve`, `bind`, `certs controller`) use only an explicit `--kubeconfig` or the in-cluster config, so a
developer's kubeconfig is never picked up by accident.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


class ClusterConfigError(ValueError):
    """No usable cluster configuration (one line, naming the file or the missing environment)."""


def in_cluster() -> bool:
    """True inside a pod with a service account (the in-cluster config's own test)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def api_client(
    kubeconfig: str | None = None, context: str | None = None, *, kubectl_defaults: bool = False
) -> Any:
    """A `kubernetes.client.ApiClient` for the resolved configuration; raises ClusterConfigError."""
    from kubernetes import client
    from kubernetes import config as kube_config
    from kubernetes.config.config_exception import ConfigException

    config: Any = kube_config  # untyped package
    path = kubeconfig or (_default_kubeconfig() if kubectl_defaults else None)
    try:
        if path is not None:
            return config.new_client_from_config(config_file=path, context=context)
        if context:
            raise ClusterConfigError(
                f"--context {context}: no kubeconfig (give --kubeconfig or set KUBECONFIG)"
            )
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
        return client.ApiClient(configuration)
    except ConfigException as exc:
        where = path or "the in-cluster configuration"
        raise ClusterConfigError(f"cannot load cluster configuration from {where}: {exc}") from None
    except OSError as exc:
        raise ClusterConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _default_kubeconfig() -> str | None:
    env = os.environ.get("KUBECONFIG", "")
    for candidate in env.split(os.pathsep) if env else []:
        if candidate and Path(candidate).exists():
            return candidate
    home = Path.home() / ".kube" / "config"
    return str(home) if home.exists() else None
