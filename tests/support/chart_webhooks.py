"""The product's webhooks registered on a real kube-apiserver (tests/realcluster), as the chart renders them.

`dra-capacity serve` runs on the host inside the cluster's network namespace with a self-signed certificate
naming the chart's webhook Service; the harness points that Service at it (`expose`), and the chart's own
webhook configurations (`helm template`, the real helm) are applied with the serve's CA as `caBundle`. The
same port and TLS directory are reused on restart, so the registered configurations stay valid across
restarts.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localcluster.cluster import Cluster
from support.chart_render import CHART, helm

RELEASE, NAMESPACE = "dra", "dra-capacity"
SERVICE = f"{RELEASE}-dra-capacity-webhook"
DRA_CAPACITY = str(Path(sys.executable).parent / "dra-capacity")
RBAC_PROBES = {  # one read each component's chart RBAC grants
    "binder": "/api/v1/namespaces?limit=1",
    "webhook": "/apis/resource.k8s.io/v1/resourceslices?limit=1",
}


class ServedWebhook:
    """One `dra-capacity serve` in the cluster's network namespace; its JSON log lines go to `log`. With
    `kubeconfig` it reads the cluster (the warnings about what it publishes) as that identity."""

    def __init__(
        self, cluster: Cluster, workdir: Path, port: int = 8443, kubeconfig: Path | None = None
    ) -> None:
        self.cluster, self.port, self.kubeconfig = cluster, port, kubeconfig
        self.tls = workdir / "tls"
        self.log = workdir / "serve.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.args: tuple[str, ...] = ()

    def start(self, *args: str) -> None:
        """Start with `args` after the fixed ones, and wait for /readyz."""
        assert self.proc is None
        self.args = args
        argv = [
            DRA_CAPACITY,
            "serve",
            "--self-signed",
            "--tls-dir",
            str(self.tls),
            "--dns-name",
            f"{SERVICE}.{NAMESPACE}.svc",
            "--listen",
            f"{self.cluster.listen_host}:{self.port}",
            "--workers",
            "1",
            "--worker-kind",
            "thread",
            *(("--kubeconfig", str(self.kubeconfig)) if self.kubeconfig else ()),
            *args,
        ]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.cluster.netns_argv(argv), stdout=log, stderr=log)
        deadline = time.monotonic() + 60
        while not self._ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}: {self.log.read_text()[-3000:]}")
            assert time.monotonic() < deadline, f"serve never became ready: {self.log.read_text()[-3000:]}"
            time.sleep(0.1)

    def _ready(self) -> bool:
        if not (self.tls / "ca.crt").exists():
            return False
        ctx = ssl.create_default_context(cafile=str(self.tls / "ca.crt"))
        ctx.check_hostname = False
        url = f"https://{self.cluster.listen_host}:{self.port}/readyz"
        try:
            with urllib.request.urlopen(url, context=ctx, timeout=5) as resp:
                return bool(resp.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self, *args: str) -> None:
        self.stop()
        self.start(*args)

    def decisions(self) -> list[dict[str, Any]]:
        """Every `admission decision` line logged so far."""
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("msg", entry.get("message")) == "admission decision":
                    out.append(entry)
        return out

    @property
    def ca_pem(self) -> bytes:
        return (self.tls / "ca.crt").read_bytes()


def helm_template(*args: str) -> str:
    """`helm template` of the chart as release RELEASE in NAMESPACE, with `args`: the manifests."""
    argv = [helm(), "template", RELEASE, str(CHART), "--namespace", NAMESPACE, *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout


def chart_webhook_configurations(ca_pem: bytes, *, pod_routing: bool = False) -> str:
    """The chart's webhook configurations (`templates/webhooks.yaml`) with `ca_pem` as caBundle."""
    ca_bundle = base64.b64encode(ca_pem).decode()
    return helm_template(
        "--set",
        "tls.mode=secret",
        "--set",
        "tls.secretName=dra-capacity-tls",
        "--set",
        f"tls.caBundle={ca_bundle}",
        "--set",
        f"webhook.podRouting.enabled={str(pod_routing).lower()}",
        "--show-only",
        "templates/webhooks.yaml",
    )


def chart_kubeconfig(cluster: Cluster, component: str) -> Path:
    """The chart's ServiceAccount and RBAC of `component` (`binder` or `webhook`; `helm template`, applied),
    and a kubeconfig that authenticates as that account: the process then runs with exactly the chart's
    rules."""
    rendered = helm_template(
        "--show-only", "templates/serviceaccounts.yaml", "--show-only", f"templates/rbac-{component}.yaml"
    )
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    cluster.kubectl("apply", "-f", "-", input=rendered)
    account = f"{RELEASE}-dra-capacity-{component}"
    # RBAC takes effect once the authorizer's informers have it: wait, so no 403 of that moment is logged.
    token = cluster.service_account_token(NAMESPACE, account, create=False)
    cluster.wait_for(
        f"the chart's RBAC for {account}",
        lambda: cluster.request("GET", RBAC_PROBES[component], token=token)[0] == 200,
        timeout=30,
    )
    return cluster.service_account_kubeconfig(NAMESPACE, account, create=False)


def register(cluster: Cluster, served: ServedWebhook, *, pod_routing: bool = False) -> list[str]:
    """Point the chart's Service at `served` and apply the chart's webhook configurations; returns kubectl's
    lines."""
    cluster.expose(NAMESPACE, SERVICE, served.port)
    done = cluster.kubectl(
        "apply", "-f", "-", input=chart_webhook_configurations(served.ca_pem, pod_routing=pod_routing)
    )
    return done.stdout.splitlines()


def unregister(cluster: Cluster, names: Sequence[str] = (SERVICE,)) -> None:
    for name in names:
        cluster.kubectl("delete", "mutatingwebhookconfiguration", name, "--ignore-not-found", check=False)
        cluster.kubectl("delete", "validatingwebhookconfiguration", name, "--ignore-not-found", check=False)
