"""The chart installed for real: `helm install/upgrade/rollback/test/uninstall` against the real
kube-apiserver, the release's own pods run by the host runner (hostrunner.py) as the chart's own
ServiceAccounts, the API server calling the webhooks through the chart's own Service and configurations.

Real RBAC is the check: every product log is scanned for a 403 after each scenario. One cluster for the
module (`make realcluster` runs serially; the tests run in file order and share the release namespace).
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from realcluster import Cluster, ClusterConfig
from realcluster.cluster import ROOT
from realcluster.hostrunner import KWOK_TOLERATION, HostRunner, taint_kwok_nodes

pytestmark = [pytest.mark.realcluster, pytest.mark.slow]

CHART = ROOT / "charts" / "dra-capacity"
HELM = ROOT / ".venv" / "bin" / "helm"
CLI = ROOT / ".venv" / "bin" / "dra-capacity"
CRDS = Path(__file__).parent / "crds" / "monitoring.coreos.com.yaml"
NS = "dra-capacity"
REL = "dra-capacity"
WEBHOOK = "dra-capacity-webhook"
ROUTING = "dra-capacity-pod-routing"
BINDER = "dra-capacity-binder"
CERTS_LEASE = "dra-capacity-webhook-certs"
SECRET = "dra-capacity-webhook-tls"
CARRIER = "dra-capacity.io/extended-resource-capacity-requests"
MONITORING = (
    "--set",
    "metrics.serviceMonitor.enabled=true",
    "--set",
    "metrics.prometheusRule.enabled=true",
    "--set",
    "grafana.dashboard.enabled=true",
)
DENIALS = re.compile(r"(?<![\w.])403(?![\w.])|[Ff]orbidden")  # not a 4.403 ms duration


@dataclass
class Env:
    cluster: Cluster
    runner: HostRunner

    def helm(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(HELM), "--kubeconfig", str(self.cluster.kubeconfig_path), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, (
            f"helm {' '.join(args)}: {done.stderr}{done.stdout}\n{self.runner_tail()}"
        )
        return done

    def runner_tail(self) -> str:
        logs = self.runner.container_logs()
        return "\n".join(f"== {k}\n" + "\n".join(v.splitlines()[-6:]) for k, v in logs.items())

    def get(self, path: str) -> dict[str, Any] | None:
        status, body = self.cluster.request("GET", path)
        return body if status == 200 else None

    def denials(self) -> list[str]:
        """Every line of every product log that reports a 403."""
        return [
            f"{name}: {line[:300]}"
            for name, text in self.runner.container_logs().items()
            for line in text.splitlines()
            if DENIALS.search(line)
        ]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    workdir = tmp_path_factory.mktemp("chart-install")
    with Cluster.start(workdir / "cluster", ClusterConfig(nodes=2, gpus_per_node=2, shares=4)) as cluster:
        taint_kwok_nodes(cluster)
        runner = HostRunner(cluster).start()
        try:
            yield Env(cluster, runner)
        finally:
            runner.stop()


def _ready_endpoints(env: Env, service: str) -> list[str]:
    _, body = env.cluster.request(
        "GET",
        f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices?labelSelector=kubernetes.io/service-name%3D{service}",
    )
    return sorted(
        ep["addresses"][0]
        for es in body.get("items", [])
        for ep in es.get("endpoints") or []
        if (ep.get("conditions") or {}).get("ready")
    )


def _webhook_configs(env: Env) -> list[str]:
    names = []
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        _, body = env.cluster.request("GET", f"/apis/admissionregistration.k8s.io/v1/{kind}")
        names += [f"{kind}/{o['metadata']['name']}" for o in body.get("items", [])]
    return names


def _device_class(name: str, requests: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "annotations": {CARRIER: json.dumps({"requests": requests})}},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]},
    }


def _apiserver_admission_metrics(env: Env) -> dict[str, float]:
    """Sums over the dra-capacity webhooks of the API server's own admission counters."""
    status, text = env.cluster.request("GET", "/metrics")
    assert status == 200, text
    sums = {"calls": 0.0, "calling_webhook_error": 0.0, "fail_open": 0.0, "rejections": 0.0}
    for line in str(text).splitlines():
        if line.startswith("#") or "dra-capacity.io" not in line:
            continue
        value = float(line.rsplit(" ", 1)[1])
        if line.startswith("apiserver_admission_webhook_admission_duration_seconds_count"):
            sums["calls"] += value
        elif line.startswith("apiserver_admission_webhook_rejection_count"):
            sums["rejections"] += value
            if 'error_type="calling_webhook_error"' in line:
                sums["calling_webhook_error"] += value
        elif line.startswith("apiserver_admission_webhook_fail_open_count"):
            sums["fail_open"] += value
    return sums


def _install(env: Env, *values: str) -> None:
    env.helm("install", REL, str(CHART), "-n", NS, "--create-namespace", "--wait", "--timeout", "3m", *values)


def test_helm_install_upgrade_test_rollback_uninstall_under_the_charts_rbac(env: Env) -> None:
    cluster = env.cluster
    cluster.kubectl("apply", "--server-side", "-f", str(CRDS))
    cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")

    # install, default values: every object accepted by the real API server (helm fails otherwise), the
    # Deployments Ready (--wait), the post-install probe Job passed through the Service.
    _install(env)
    deploys = {d: env.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{d}") for d in (WEBHOOK, BINDER)}
    for name, d in deploys.items():
        assert d is not None and d["status"].get("readyReplicas") == 2, name
    for kind, name in (
        ("policy/v1", f"poddisruptionbudgets/{WEBHOOK}"),
        ("policy/v1", f"poddisruptionbudgets/{BINDER}"),
        ("networking.k8s.io/v1", f"networkpolicies/{WEBHOOK}"),
    ):
        assert env.get(f"/apis/{kind}/namespaces/{NS}/{name}") is not None, name

    # The EndpointSlice controller built the chart's Service from the runner's pod IPs, one per replica.
    prefix = cluster.listen_host.rsplit(".", 1)[0] + "."
    eps = cluster.wait_for(
        "two webhook endpoints",
        lambda: len(_ready_endpoints(env, WEBHOOK)) == 2 and _ready_endpoints(env, WEBHOOK),
    )
    assert all(ip.startswith(prefix) for ip in eps) and len(set(eps)) == 2, eps

    # The certificate controller created the CA and injected every caBundle.
    vwc = env.get(f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{WEBHOOK}")
    mwcs = [
        env.get(f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{n}")
        for n in (WEBHOOK, ROUTING)
    ]
    for config in [vwc, *mwcs]:
        assert config is not None
        for hook in config["webhooks"]:
            assert hook["clientConfig"].get("caBundle"), hook["name"]
            assert hook["clientConfig"]["service"]["name"] == WEBHOOK  # the Service form

    # The API server calls the webhook through the Service: the annotation carrier's rule is enforced.
    bad = cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(_device_class("helmreal-bad", {"gpu.example.com/shares": "0"})),
        check=False,
    )
    assert bad.returncode != 0, bad.stdout
    assert f'metadata.annotations[{CARRIER}]: Invalid value: "0": must be greater than zero' in bad.stderr
    cluster.kubectl(
        "apply", "-f", "-", input=json.dumps(_device_class("helmreal-ok", {"gpu.example.com/shares": "1"}))
    )

    # helm test: its pod posts a review through the Service and is completed by the runner.
    env.helm("test", REL, "-n", NS, "--timeout", "90s")

    # upgrade with changed values, monitoring included (the CRDs validate the ServiceMonitor and the rule).
    env.helm(
        "upgrade", REL, str(CHART), "-n", NS, "--wait", "--timeout", "3m",
        "--set", "webhook.nativeRules=deny", "--set", "binder.strategy=spread", *MONITORING,
    )  # fmt: skip
    assert env.get(f"/apis/monitoring.coreos.com/v1/namespaces/{NS}/servicemonitors/{REL}") is not None
    assert env.get(f"/apis/monitoring.coreos.com/v1/namespaces/{NS}/prometheusrules/{REL}") is not None
    dashboards = cluster.kubectl("get", "configmap", "-A", "-l", "grafana_dashboard=1", "-o", "name").stdout
    assert dashboards.strip(), "no Grafana dashboard ConfigMap"
    webhook = env.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{WEBHOOK}")
    assert webhook is not None
    args = webhook["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--native-rules=deny" in args
    cluster.wait_for(
        "the upgraded webhook serving", lambda: len(_ready_endpoints(env, WEBHOOK)) == 2, timeout=120
    )

    # rollback to the install: the monitoring objects go, the webhook still answers.
    env.helm("rollback", REL, "1", "-n", NS, "--wait", "--timeout", "3m")
    assert env.get(f"/apis/monitoring.coreos.com/v1/namespaces/{NS}/servicemonitors/{REL}") is None
    webhook = env.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{WEBHOOK}")
    assert (
        webhook is not None
        and "--native-rules=deny" not in webhook["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    env.helm("test", REL, "-n", NS, "--timeout", "90s")

    # uninstall: the pre-delete hook removed every webhook configuration first.
    env.helm("uninstall", REL, "-n", NS, "--wait", "--timeout", "3m")
    left = [n for n in _webhook_configs(env) if "dra-capacity" in n]
    assert left == [], left
    cluster.wait_for(
        "the release's pods gone",
        lambda: not (env.get(f"/api/v1/namespaces/{NS}/pods") or {}).get("items"),
        timeout=90,
    )
    # A DeviceClass write is not locked out.
    cluster.kubectl(
        "apply", "-f", "-", input=json.dumps(_device_class("helmreal-after", {"gpu.example.com/shares": "1"}))
    )
    cleanup_log = next(v for k, v in env.runner.container_logs().items() if "-cleanup-" in k)
    assert f"deleted validatingwebhookconfiguration/{WEBHOOK}" in cleanup_log
    # What the product made is gone too (the hook stopped the Deployments first, so nothing recreates it).
    assert env.get(f"/api/v1/namespaces/{NS}/secrets/{SECRET}") is None
    for lease in (CERTS_LEASE, BINDER):
        assert env.get(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{lease}") is None, lease

    assert env.denials() == []


def test_certs_rotate_under_traffic_fails_no_admission(env: Env, tmp_path: Path) -> None:
    cluster = env.cluster
    _install(env)
    for n in ("helmreal-ok", "helmreal-after"):
        cluster.kubectl("delete", "deviceclass", n, "--ignore-not-found")
    cluster.kubectl("create", "namespace", "helmreal-traffic")
    cluster.kubectl("label", "namespace", "helmreal-traffic", "dra-capacity.io/pod-routing=enabled")
    common = [
        "--kubeconfig", str(cluster.kubeconfig_path), "--namespace", NS, "--secret", SECRET,
        "--service", WEBHOOK, "--webhook-config", WEBHOOK, "--webhook-config", f"mutating/{ROUTING}",
    ]  # fmt: skip
    # `certs init` on the installed release: the controller already made the CA; init says what it manages.
    init = subprocess.run([str(CLI), "certs", "init", *common], capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr
    assert f"validatingwebhookconfiguration/{WEBHOOK}" in init.stdout + init.stderr
    before_ca = (env.get(f"/api/v1/namespaces/{NS}/secrets/{SECRET}") or {})["data"]["ca.crt"]

    stop = threading.Event()
    counts = {"classes": 0, "pods": 0}
    errors: list[str] = []

    def traffic() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            name = f"helmreal-rot-{i % 5}"
            status, body = cluster.request(
                "POST",
                "/apis/resource.k8s.io/v1/deviceclasses",
                _device_class(name, {"gpu.example.com/shares": str(1 + i % 3)}),
            )
            if status == 409:
                status, body = cluster.request("DELETE", f"/apis/resource.k8s.io/v1/deviceclasses/{name}")
            elif status != 201:
                errors.append(f"DeviceClass {name}: {status} {body}")
            else:
                counts["classes"] += 1
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p-{i}", "namespace": "helmreal-traffic"},
                "spec": {
                    "containers": [{"name": "c", "image": "example.com/pause:1"}],
                    "tolerations": [KWOK_TOLERATION],
                    "nodeSelector": {"type": "kwok"},
                },
            }
            status, body = cluster.request("POST", "/api/v1/namespaces/helmreal-traffic/pods", pod)
            if status != 201:
                errors.append(f"Pod p-{i}: {status} {body}")
            else:
                counts["pods"] += 1
                cluster.request("DELETE", f"/api/v1/namespaces/helmreal-traffic/pods/p-{i}")
            time.sleep(0.05)

    before = _apiserver_admission_metrics(env)
    worker = threading.Thread(target=traffic, daemon=True)
    worker.start()
    try:
        rotate = subprocess.run(
            [str(CLI), "certs", "rotate", *common, "--force-ca", "--propagation-delay", "5", "--wait", "240"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        time.sleep(3)  # traffic after the switch, on the new certificate
    finally:
        stop.set()
        worker.join(timeout=30)
    after = _apiserver_admission_metrics(env)
    assert rotate.returncode == 0, rotate.stdout + rotate.stderr
    after_ca = (env.get(f"/api/v1/namespaces/{NS}/secrets/{SECRET}") or {})["data"]["ca.crt"]
    assert after_ca != before_ca  # the CA did rotate
    check = subprocess.run([str(CLI), "certs", "check", *common], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert errors == []
    assert counts["classes"] > 10 and counts["pods"] > 10, counts
    assert after["calls"] - before["calls"] >= counts["classes"], (before, after)
    assert after["calling_webhook_error"] - before["calling_webhook_error"] == 0, (before, after)
    assert after["fail_open"] - before["fail_open"] == 0, (before, after)
    assert env.denials() == []
    print(f"\nrotation under traffic: {counts}, API server counters before {before}, after {after}")
