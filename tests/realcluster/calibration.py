"""The surface of `kubeapi.KubeAPIServer` that the double's behavioural tests use, over a real cluster: so one
test list runs against both servers (tests/kubeapi/conftest.py) and each disagreement shows.

Fault injection, pausing, the request log, `revision` and `add_user` have no real counterpart: the tests using
them are marked `double_only` and listed in tests/kubeapi/README.md.

Between tests, `reset()` returns the cluster to the state a fresh double starts in as closely as a real one
can: every namespace a test created is deleted (and awaited), and the objects tests create in `default` and
at cluster scope are removed, finalizers included.
"""

from __future__ import annotations

import builtins
import time
import urllib.parse
from pathlib import Path
from typing import Any, Unpack

from kubeapi.double import HttpOptions, HttpResult, bearer_api_client, raw_request
from kubeapi.resources import ResourceType, for_object, lookup

from localcluster.cluster import CONTROLLERS, Cluster, ClusterConfig, ClusterError

# What the double has: no scheduler, no kubelet or kwok (a test's own nodes and pods are left alone), no
# kube-root-ca.crt ConfigMap in every namespace; the controllers it emulates run for real.
CONFIG = ClusterConfig(
    nodes=0,
    gpus_per_node=0,
    scheduler=False,
    kwok=False,
    controllers=tuple(
        c
        for c in CONTROLLERS
        if c not in ("root-ca-certificate-publisher-controller", "node-lifecycle-controller")
    ),
)

ADMIN = ("kube-system", "calibration-admin")
CONFIG_PROPAGATION_SECONDS = 1.0
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}
# What the cluster itself keeps in `default` (and must survive a reset).
KEEP = {("configmaps", "kube-root-ca.crt"), ("services", "kubernetes"), ("serviceaccounts", "default")}
NAMESPACED = (
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/secrets",
    "/api/v1/namespaces/default/serviceaccounts",
    "/api/v1/namespaces/default/events",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
    "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
)
CLUSTER_SCOPED = (
    "/api/v1/nodes",
    "/apis/resource.k8s.io/v1/deviceclasses",
    "/apis/resource.k8s.io/v1/resourceslices",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
)


class RealAPIServer:
    """A real cluster behind the double's test-facing methods. `api_client()` and `http()` authenticate as the
    harness's admin (client certificate, `kubernetes-admin` in `system:masters`, the double's admin user);
    `token` is a bearer token of a ServiceAccount bound to cluster-admin, for the tests that need one."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.kind = "real"
        self.request("POST", "/api/v1/namespaces", {"metadata": {"name": ADMIN[0]}})
        self.cluster.request(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": ADMIN[1]},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [{"kind": "ServiceAccount", "namespace": ADMIN[0], "name": ADMIN[1]}],
            },
        )
        self.token = cluster.service_account_token(*ADMIN, expiration_seconds=24 * 3600)
        self.kubeconfig_path = cluster.kubeconfig_path

    # ---- addresses ---------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.cluster.url

    @property
    def port(self) -> int:
        return int(urllib.parse.urlsplit(self.url).port or 443)

    @property
    def ca_path(self) -> Path:
        return self.cluster.ca_path

    def api_client(self, token: str | None = None) -> Any:
        """A client as the admin (or bearer `token`); it carries `config_propagation_seconds`, the time tests
        give a new webhook configuration to reach the API server's informer (the double needs none)."""
        api = self._client(token)
        api.config_propagation_seconds = CONFIG_PROPAGATION_SECONDS
        return api

    def _client(self, token: str | None) -> Any:
        if token is None:
            return self.cluster.api_client()
        return bearer_api_client(self.url, self.ca_path, token or self.token)

    def request(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return self.cluster.request(method, path, body, **kw)

    def http(self, method: str, path: str, body: Any = None, **options: Unpack[HttpOptions]) -> HttpResult:
        """One raw HTTPS request as the double's `http` makes it (bearer token, JSON)."""
        content_type = options.get("content_type", "application/json")
        token = options.get("token")
        timeout = options.get("timeout", 30.0)
        import urllib3

        pki = self.cluster.workdir / "pki"
        pool = urllib3.PoolManager(
            ca_certs=str(self.ca_path),
            cert_reqs="CERT_REQUIRED",
            cert_file=None if token else str(pki / "admin.crt"),
            key_file=None if token else str(pki / "admin.key"),
        )
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return raw_request(pool, method, self.url + path, body, headers, content_type, timeout)

    # ---- direct state access: through the API, as the admin -----------------------------------------------

    @staticmethod
    def _path(rt: ResourceType, namespace: str | None, name: str = "") -> str:
        base = rt.base_path(namespace if rt.namespaced else None)
        return f"{base}/{name}" if name else base

    def seed(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create `obj` (creating its namespace), then write its status through the status subresource."""
        rt = for_object(obj)
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default") if rt.namespaced else None
        if namespace and namespace not in SYSTEM_NAMESPACES:
            self.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        status, created = self.request("POST", self._path(rt, namespace), obj)
        if status != 201:
            raise ClusterError(f"seed {rt.kind} {meta.get('name')}: {status} {created}")
        if obj.get("status") is not None and rt.has_status:
            body = {**created, "status": obj["status"]}
            body["metadata"] = {k: v for k, v in created["metadata"].items() if k != "resourceVersion"}
            status, created = self.request(
                "PUT", self._path(rt, namespace, created["metadata"]["name"]) + "/status", body
            )
            if status != 200:
                raise ClusterError(f"seed {rt.kind} {meta.get('name')} status: {status} {created}")
        return dict(created)

    def get(self, resource: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        rt = lookup(resource)
        status, body = self.request("GET", self._path(rt, namespace, name))
        if status == 404:
            return None
        if status != 200:
            raise ClusterError(f"get {resource} {name}: {status} {body}")
        return dict(body)

    def list(self, resource: str, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        rt = lookup(resource)
        status, body = self.request("GET", self._path(rt, namespace))
        if status != 200:
            raise ClusterError(f"list {resource}: {status} {body}")
        return [{"apiVersion": rt.api_version, "kind": rt.kind, **i} for i in body["items"]]

    def delete(self, resource: str, name: str, namespace: str = "default", **options: Any) -> dict[str, Any]:
        rt = lookup(resource)
        body = {_camel(k): v for k, v in options.items()}
        status, out = self.request("DELETE", self._path(rt, namespace, name), body or None)
        if status not in (200, 202):
            raise ClusterError(f"delete {resource} {name}: {status} {out}")
        return dict(out)

    def wait_idle(self, timeout: float = 10) -> None:
        """The real controllers have no idle signal: give them a moment (tests then poll what they expect)."""
        time.sleep(0.5)

    # ---- between tests ------------------------------------------------------------------------------------

    def reset(self, timeout: float = 60.0) -> None:
        _, body = self.request("GET", "/api/v1/namespaces")
        extra = [
            n["metadata"]["name"] for n in body["items"] if n["metadata"]["name"] not in SYSTEM_NAMESPACES
        ]
        for name in extra:
            self._strip_finalizers_in(name)
            self.request("DELETE", f"/api/v1/namespaces/{name}")
        for path in (*NAMESPACED, *CLUSTER_SCOPED):
            self._clear(path)
        deadline = time.monotonic() + timeout
        while extra and time.monotonic() < deadline:
            _, body = self.request("GET", "/api/v1/namespaces")
            extra = [n["metadata"]["name"] for n in body["items"] if n["metadata"]["name"] in extra]
            time.sleep(0.1)
        if extra:
            raise ClusterError(f"namespaces {extra} still terminating after {timeout:.0f} s")

    def _strip_finalizers_in(self, namespace: str) -> None:
        for path in NAMESPACED:
            self._clear(path.replace("/namespaces/default/", f"/namespaces/{namespace}/"), delete=False)

    def _clear(self, path: str, delete: bool = True) -> None:
        status, body = self.request("GET", path)
        if status != 200:
            return
        plural = path.rsplit("/", 1)[1]
        for item in body["items"]:
            name = item["metadata"]["name"]
            if (plural, name) in KEEP:
                continue
            if item["metadata"].get("finalizers"):
                self.request(
                    "PATCH",
                    f"{path}/{name}",
                    {"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json",
                )
            if delete:
                self.request("DELETE", f"{path}/{name}", {"gracePeriodSeconds": 0})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
