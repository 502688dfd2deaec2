"""How every command reaches a cluster: one resolution of the cluster configuration, to one `Kube`.

`--kubeconfig PATH [--context NAME]` wins. Command-line tools (`simulate`, `certs`) then resolve as kubectl
does: `$KUBECONFIG`, else `~/.kube/config` when present, else the pod's in-cluster service account. Servers
(`serve`, `bind`, `certs controller`) use only an explicit `--kubeconfig` or the in-cluster config, so a
developer's kubeconfig is never picked up by accident.

Every failure to load one (a missing file, a bad context, no service account) is a `ClusterConfigError`
naming the file or what is missing; the client's own exceptions never leave this module. The client is
imported on first use (`dra-capacity --help` does not load it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubeio.kube import Kube


class ClusterConfigError(ValueError):
    """No usable cluster configuration (one line, naming the file or the missing environment)."""


def in_cluster() -> bool:
    """True inside a pod with a service account (the in-cluster config's own test)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def connect(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    kubectl_defaults: bool = False,
    pool_size: int = 32,
) -> Kube:
    """A `Kube` for the resolved configuration (its caller closes it); raises ClusterConfigError.
    `pool_size`: connections kept open (each watch holds one)."""
    from kubeio.kube import Kube

    return Kube(configuration(kubeconfig, context, kubectl_defaults=kubectl_defaults), pool_size)


def configuration(
    kubeconfig: str | None = None, context: str | None = None, *, kubectl_defaults: bool = False
) -> Any:
    """The client configuration (server, TLS, credentials) resolved as the module docstring says."""
    from kubernetes import client
    from kubernetes import config as kube_config
    from kubernetes.config.config_exception import ConfigException

    path = kubeconfig or (_default_kubeconfig() if kubectl_defaults else None)
    loader: Any = kube_config  # untyped package
    resolved = client.Configuration()
    try:
        if path is not None:
            loader.load_kube_config(config_file=path, context=context, client_configuration=resolved)
            return resolved
        if context:
            raise ClusterConfigError(
                f"--context {context}: no kubeconfig (give --kubeconfig or set KUBECONFIG)"
            )
        loader.load_incluster_config(client_configuration=resolved)
        return resolved
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
