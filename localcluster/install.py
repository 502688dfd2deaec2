"""Install the product on a running local cluster as the chart defines it, with its processes on the host.

The chart is rendered by the real `helm template` with its default values. Its RBAC (ServiceAccounts,
ClusterRoles, Roles and their bindings), its DeviceTaintRules and its webhook configurations are applied as
rendered, except that each webhook's `clientConfig` points, through a Service of the chart's own name, into
the cluster's network namespace (`Cluster.webhook_client_config`), with the caBundle of a serving certificate
made here. Then the product runs as the chart's own identities (ServiceAccount-token kubeconfigs, so a missing
RBAC rule is a real 403): `dra-capacity serve` (the DeviceClass webhook and `/mutate-pods` routing) inside the
namespace, and `dra-capacity bind` on the host. The chart's Deployments, Services and hooks are not applied:
the processes stand in for the pods.

    installed = install_product(cluster, workdir)   # ready: both processes answer /readyz
    ...
    installed.stop()                                # SIGTERM, then SIGKILL, by PID
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .cluster import ROOT, Cluster, ClusterError, _die_with_parent, free_port

CHART = ROOT / "charts" / "dra-capacity"
RELEASE = "dra"
NAMESPACE = "dra-capacity"
SCHEDULER_NAME = "dra-capacity"
ROUTING_LABEL = "dra-capacity.io/pod-routing"
ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
# Inside the network namespace every port is free: the chart's own ports.
WEBHOOK_PORT = 8443
HEALTH_PORT = 6080


def tool(name: str) -> str:
    """A command of this virtualenv (dra-capacity, helm, kubectl), else of PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if not found:
        raise ClusterError(f"{name} not found beside {sys.executable} nor on PATH: run `make install`")
    return found


def render_chart(
    release: str = RELEASE, namespace: str = NAMESPACE, *sets: str, kube_version: str | None = None
) -> list[dict[str, Any]]:
    """`helm template` of the chart with its default values (plus `sets`): every object it renders, for
    `kube_version` (the cluster's, as `helm install` would see it: 1.36 gets no DeviceTaintRule)."""
    argv = [tool("helm"), "template", release, str(CHART), "--namespace", namespace]
    if kube_version:
        argv += ["--kube-version", kube_version]
    for s in sets:
        argv += ["--set", s]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise ClusterError(f"helm template {CHART} failed: {done.stderr.strip()}")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _is_hook(obj: dict[str, Any]) -> bool:
    return "helm.sh/hook" in (obj["metadata"].get("annotations") or {})


@dataclass
class Installed:
    """The product as installed: its objects' names and its two processes."""

    cluster: Cluster
    namespace: str
    webhook_account: str
    binder_account: str
    webhook_service: str
    webhook_configurations: list[tuple[str, str]]
    serve: subprocess.Popen[bytes]
    bind: subprocess.Popen[bytes]
    webhook_url: str
    metrics_url: str
    ca_path: Path
    logs: dict[str, Path] = field(default_factory=dict)

    @property
    def pids(self) -> list[int]:
        return [self.serve.pid, self.bind.pid]

    def alive(self) -> list[str]:
        """Names of the processes still running."""
        return [n for n, p in (("serve", self.serve), ("bind", self.bind)) if p.poll() is None]

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM both processes (by PID), SIGKILL what is left after `timeout`. Safe to call twice."""
        for proc in (self.bind, self.serve):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        for proc in (self.bind, self.serve):
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def metrics(self) -> str:
        """The binder's Prometheus text."""
        with urllib.request.urlopen(f"{self.metrics_url}/metrics", timeout=5) as resp:
            return str(resp.read().decode())


def _apply(cluster: Cluster, objects: Sequence[dict[str, Any]]) -> None:
    if objects:
        cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
        )


def _ready(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _spawn(argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # a killed sandbox or test leaves neither process behind
        )


def _wait(cluster: Cluster, what: str, check: Any, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while not check():
        if proc.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            raise ClusterError(f"{what}: the process exited {proc.returncode}; the end of {log}:\n{tail}")
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out waiting for {what} (log: {log})")
        time.sleep(0.1)


def install_product(
    cluster: Cluster,
    workdir: Path,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    serve_args: Sequence[str] = (),
    bind_args: Sequence[str] = (),
) -> Installed:
    """Apply the chart's RBAC and webhook configurations, start `serve` and `bind` as its ServiceAccounts,
    and return once both answer `/readyz`. `workdir` holds the serving certificate and the two logs."""
    objects = [o for o in render_chart(release, namespace, kube_version=cluster.version) if not _is_hook(o)]
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    _apply(cluster, [o for o in objects if o["kind"] in RBAC_KINDS])
    # one allocator per device: the chart's NoSchedule DeviceTaintRules on the devices the binder serves
    _apply(cluster, [o for o in objects if o["kind"] == "DeviceTaintRule"])
    accounts = {
        (o["metadata"].get("labels") or {}).get("app.kubernetes.io/component"): o["metadata"]["name"]
        for o in objects
        if o["kind"] == "ServiceAccount"
    }
    webhook_account, binder_account = accounts["webhook"], accounts["binder"]
    configurations = [o for o in objects if o["kind"] in WEBHOOK_KINDS]
    services = {w["clientConfig"]["service"]["name"] for o in configurations for w in o["webhooks"]}
    if len(services) != 1:
        raise ClusterError(f"the chart's webhooks call {sorted(services)}: expected one Service")
    service = services.pop()

    tls = workdir / "tls"
    ca_path, _cert, _key = cluster.serving_certificate([f"{service}.{namespace}.svc"], tls)
    kubeconfigs = workdir / "kubeconfigs"
    webhook_kubeconfig = cluster.service_account_kubeconfig(
        namespace, webhook_account, kubeconfigs / "webhook.kubeconfig", create=False
    )
    binder_kubeconfig = cluster.service_account_kubeconfig(
        namespace, binder_account, kubeconfigs / "binder.kubeconfig", create=False
    )
    logs = {"serve": workdir / "logs" / "serve.log", "bind": workdir / "logs" / "bind.log"}
    host = cluster.listen_host
    # The chart's ports are free in the namespace; on the host (the url: fallback) take free ones.
    port, health_port = (WEBHOOK_PORT, HEALTH_PORT) if cluster.netns else (free_port(), free_port())
    serve = _spawn(
        cluster.netns_argv(
            [
                tool("dra-capacity"),
                "serve",
                f"--listen={host}:{port}",
                f"--health-listen={host}:{health_port}",
                f"--tls-dir={tls}",
                f"--kubeconfig={webhook_kubeconfig}",
                f"--scheduler-name={SCHEDULER_NAME}",
                *serve_args,
            ]
        ),
        logs["serve"],
    )
    metrics_port = free_port()
    bind = _spawn(
        [
            tool("dra-capacity"),
            "bind",
            f"--kubeconfig={binder_kubeconfig}",
            f"--lease-namespace={namespace}",
            f"--scheduler-name={SCHEDULER_NAME}",
            f"--metrics-listen=127.0.0.1:{metrics_port}",
            *bind_args,
        ],
        logs["bind"],
    )
    installed = Installed(
        cluster=cluster,
        namespace=namespace,
        webhook_account=webhook_account,
        binder_account=binder_account,
        webhook_service=service,
        webhook_configurations=[(o["kind"], o["metadata"]["name"]) for o in configurations],
        serve=serve,
        bind=bind,
        webhook_url=f"https://{host}:{port}",
        metrics_url=f"http://127.0.0.1:{metrics_port}",
        ca_path=ca_path,
        logs=logs,
    )
    try:
        ca_bundle = ca_path.read_bytes()
        for config in configurations:
            for webhook in config["webhooks"]:
                path = webhook["clientConfig"]["service"].get("path", "/")
                webhook["clientConfig"] = cluster.webhook_client_config(
                    namespace, service, port, path, ca_bundle
                )
        _apply(cluster, configurations)
        _wait(
            cluster,
            "serve /readyz",
            lambda: _ready(f"http://{host}:{health_port}/readyz"),
            serve,
            logs["serve"],
        )
        _wait(cluster, "bind /readyz", lambda: _ready(f"{installed.metrics_url}/readyz"), bind, logs["bind"])
    except BaseException:
        installed.stop()
        raise
    return installed


def shared_gpu_class(
    name: str = "gpu-shared", shares: str = "1", resource: str = "nvidia.com/gpu.shared"
) -> dict[str, Any]:
    """A KEP-6406 DeviceClass: `resource: 1` is one share of a GPU of driver gpu.nvidia.com. A 1.37 API
    server does not know `spec.extendedResourceCapacityRequests`: the request travels in the annotation."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {
            "name": name,
            "annotations": {ANNOTATION: json.dumps({"requests": {"shares": shares}})},
        },
        "spec": {
            "extendedResourceName": resource,
            "selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}],
        },
    }


def opted_in_namespace(name: str) -> dict[str, Any]:
    """A namespace whose pods `/mutate-pods` routes to the binder."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {ROUTING_LABEL: "enabled"}},
    }


def wait_routed(
    cluster: Cluster, namespace: str, resource: str = "nvidia.com/gpu.shared", timeout: float = 60
) -> None:
    """Until the webhook's cache has the class and the namespace: a dry-run Pod create comes back routed."""
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "routing-probe", "namespace": namespace},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {resource: "1"}}}
            ]
        },
    }

    def routed() -> bool:
        status, body = cluster.request("POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All", probe)
        return status == 201 and body["spec"].get("schedulerName") == SCHEDULER_NAME

    cluster.wait_for(f"pod routing in namespace {namespace}", routed, timeout, interval=0.2)
