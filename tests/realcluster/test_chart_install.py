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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster.cluster import ROOT, Cluster, ClusterConfig
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
    with Cluster.start(workdir / "cluster", ClusterConfig(nodes=2, gpus_per_node=4, shares=8)) as cluster:
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
    # A `url:` webhook configuration named to `certs` is skipped, and said so.
    url_config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "helmreal-url"},
        "webhooks": [
            {
                "name": "url.helmreal.dra-capacity.io",
                "clientConfig": {"url": "https://127.0.0.1:9/validate"},
                "rules": [
                    {
                        "apiGroups": ["example.com"],
                        "apiVersions": ["v1"],
                        "resources": ["nothings"],
                        "operations": ["CREATE"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Ignore",
            }
        ],
    }
    cluster.create(url_config)
    # `certs init` on the installed release: the controller already made the CA; init says what it manages
    # and what it skips.
    init = subprocess.run(
        [str(CLI), "certs", "init", *common, "--webhook-config", "validating/helmreal-url"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert init.returncode == 0, init.stderr
    said = init.stdout + init.stderr
    print(f"\ncerts init:\n{said}")
    assert (
        f"validatingwebhookconfiguration/{WEBHOOK}" in said
        and f"mutatingwebhookconfiguration/{ROUTING}" in said
    )
    assert (
        "skips validatingwebhookconfiguration/helmreal-url webhook url.helmreal.dra-capacity.io: "
        "it calls url https://127.0.0.1:9/validate" in said
    ), said
    cluster.request(
        "DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/helmreal-url"
    )
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


# ---- every rule the product needs: remove each in turn ---------------------------------------------------

SHARED_CLASS = "helmreal-gpu-shares"
ROUTED_NS = "helmreal-routed"
# Rules no scenario here exercises, each kept for a reason (docs/install.md "RBAC: what each rule is for").
UNUSED_RULES = {
    (
        f"ClusterRole/{BINDER}",
        "events: create, patch",
    ): "FailedScheduling and missed-routing Events: the scenario binds",
    ("ClusterRole/dra-capacity-pod-routing", "deviceclasses: get, list, watch"): (
        "the same account reads DeviceClasses through ClusterRole/dra-capacity-webhook (the warnings)"
    ),
    ("Role/dra-capacity-webhook-certs", "secrets: create"): "first install only: the Secret exists here",
    ("Role/dra-capacity-webhook-certs", "leases: create"): "first install only: the Lease exists here",
    ("Role/dra-capacity-webhook-certs", "endpointslices: list"): "CA rotation only (the rotation test)",
}


def _rule_key(rule: dict[str, Any]) -> str:
    names = f" {rule['resourceNames']}" if rule.get("resourceNames") else ""
    return f"{','.join(rule['resources'])}{names}: {', '.join(rule['verbs'])}"


def _chart_roles(env: Env) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind/name, API path, object) of every Role and ClusterRole the release installed, hooks aside."""
    out = []
    for kind, path in (
        ("ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
        ("Role", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles"),
    ):
        body = env.get(f"{path}?labelSelector=app.kubernetes.io/instance%3D{REL}") or {}
        for obj in body.get("items", []):
            out.append((f"{kind}/{obj['metadata']['name']}", f"{path}/{obj['metadata']['name']}", obj))
    return out


def _restart(env: Env, component: str) -> None:
    env.cluster.kubectl(
        "delete",
        "pods",
        "-n",
        NS,
        "-l",
        f"app.kubernetes.io/component={component}",
        "--grace-period=1",
        "--wait=false",
    )


def _log_sizes(env: Env) -> dict[str, int]:
    return {k: len(v) for k, v in env.runner.container_logs().items()}


def _new_denials(env: Env, sizes: dict[str, int]) -> list[str]:
    return [
        f"{k}: {line[:200]}"
        for k, v in env.runner.container_logs().items()
        for line in v[sizes.get(k, 0) :].splitlines()
        if DENIALS.search(line)
    ]


def _binder_leads(env: Env) -> bool:
    lease = env.get(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{BINDER}") or {}
    holder = str(lease.get("spec", {}).get("holderIdentity") or "")
    pods = env.get(f"/api/v1/namespaces/{NS}/pods?labelSelector=app.kubernetes.io/component%3Dbinder") or {}
    current = [
        p["metadata"]["name"] for p in pods.get("items", []) if not p["metadata"].get("deletionTimestamp")
    ]
    return any(holder.startswith(f"{name}_") for name in current)


def _scenario(env: Env, tag: str, sizes: dict[str, int]) -> str | None:
    """The product's work under the current RBAC: the webhook and certs controller become ready and admit a
    DeviceClass through the API server, pod routing sends a pod to the binder, the binder binds it. None when
    all of it happened, else what did not."""
    cluster = env.cluster

    def denied() -> str | None:  # a 403 ends the scenario at once
        found = _new_denials(env, sizes)
        return f"403: {found[0]}" if found else None

    def ready(component: str) -> bool:
        d = env.get(f"/apis/apps/v1/namespaces/{NS}/deployments/dra-capacity-{component}") or {}
        st = d.get("status", {})
        return bool(st.get("readyReplicas") == st.get("replicas") == 1 and st.get("updatedReplicas") == 1)

    deadline = time.monotonic() + 60
    while not (ready("webhook") and ready("binder") and len(_ready_endpoints(env, WEBHOOK)) == 1):
        if time.monotonic() > deadline:
            return "the webhook or the binder did not become ready"
        if denial := denied():
            return denial
        time.sleep(0.5)
    # A restarted binder waits for the old leader's Lease to expire: wait for a leader among the current pods.
    deadline = time.monotonic() + 90
    while not _binder_leads(env):
        if time.monotonic() > deadline:
            return "no current binder pod holds the Lease"
        if denial := denied():
            return denial
        time.sleep(0.5)
    status, body = cluster.request(
        "POST",
        "/apis/resource.k8s.io/v1/deviceclasses",
        _device_class(f"hr-{tag}", {"gpu.example.com/shares": "1"}),
    )
    if status != 201:
        return f"DeviceClass create: {status} {body}"
    cluster.request("DELETE", f"/apis/resource.k8s.io/v1/deviceclasses/hr-{tag}")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"bind-{tag}", "namespace": ROUTED_NS},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "example.com/cuda:1",
                    "resources": {"limits": {"nvidia.com/gpu.shared": "1"}},
                }
            ],
            "tolerations": [KWOK_TOLERATION],
        },
    }
    try:
        return _bind(env, pod, tag, denied)
    finally:  # bound or not: its claim's shares go back for the next rule
        cluster.request("DELETE", f"/api/v1/namespaces/{ROUTED_NS}/pods/bind-{tag}")


def _bind(env: Env, pod: dict[str, Any], tag: str, denied: Callable[[], str | None]) -> str | None:
    cluster = env.cluster
    status, body = cluster.request("POST", f"/api/v1/namespaces/{ROUTED_NS}/pods", pod)
    if status != 201:
        return f"Pod create: {status} {body}"
    if body["spec"].get("schedulerName") != "dra-capacity":
        return f"the pod was not routed to the binder (schedulerName {body['spec'].get('schedulerName')})"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = env.get(f"/api/v1/namespaces/{ROUTED_NS}/pods/bind-{tag}") or {}
        if got.get("spec", {}).get("nodeName"):
            return denied()
        if denial := denied():
            return denial
        time.sleep(0.5)
    return "the binder did not bind the pod"


def test_each_rule_the_product_needs_fails_a_scenario_when_removed(env: Env) -> None:
    """One cluster, one release (one replica of each Deployment, to bound the cost): for each rule of each
    Role and ClusterRole of the chart, put the role back without it, restart the pods of the account it is
    bound to, and run the scenario. A needed rule shows as a 403 in a product log or a failed scenario; the
    rules that show neither must be exactly `UNUSED_RULES`, each with its reason."""
    cluster = env.cluster
    if subprocess.run(
        [str(HELM), "--kubeconfig", str(cluster.kubeconfig_path), "status", REL, "-n", NS],
        capture_output=True,
    ).returncode:
        _install(env)  # run alone
    env.helm(
        "upgrade", REL, str(CHART), "-n", NS, "--wait", "--timeout", "3m", "--reuse-values",
        "--set", "webhook.replicaCount=1", "--set", "binder.replicaCount=1",
    )  # fmt: skip
    cluster.kubectl("create", "namespace", ROUTED_NS)
    cluster.kubectl("label", "namespace", ROUTED_NS, "dra-capacity.io/pod-routing=enabled")
    shared = _device_class(SHARED_CLASS, {"shares": "1"})
    shared["spec"]["extendedResourceName"] = "nvidia.com/gpu.shared"
    cluster.create(shared)
    # A class no published device can serve (no device has that capacity): each webhook start sends an Event.
    status, _ = cluster.request(
        "POST",
        "/apis/resource.k8s.io/v1/deviceclasses",
        _device_class("helmreal-unservable", {"gpu.example.com/shares": "1"}),
    )
    assert status in (201, 409)
    sizes = _log_sizes(env)
    assert _scenario(env, "baseline", sizes) is None
    assert _new_denials(env, sizes) == []

    unused: list[tuple[str, str]] = []
    needed: dict[tuple[str, str], str] = {}
    for n, (ref, path, role) in enumerate(_chart_roles(env)):
        subjects = (
            env.get(
                path.replace("/roles/", "/rolebindings/").replace("/clusterroles/", "/clusterrolebindings/")
            )
            or {}
        ).get("subjects", [])
        components = {"binder" if s["name"] == BINDER else "webhook" for s in subjects}
        for i, rule in enumerate(role["rules"]):
            key = (ref, _rule_key(rule))
            reduced = {**role, "rules": [r for j, r in enumerate(role["rules"]) if j != i]}
            reduced["metadata"] = {
                k: v
                for k, v in role["metadata"].items()
                if k in ("name", "namespace", "labels", "annotations")
            }
            status, body = cluster.request("PUT", path, reduced)
            assert status == 200, body
            sizes = _log_sizes(env)
            for component in sorted(components):
                _restart(env, component)
            time.sleep(2)
            failure = _scenario(env, f"{n}-{i}", sizes)
            denials = _new_denials(env, sizes)
            status, body = cluster.request("PUT", path, {**reduced, "rules": role["rules"]})
            assert status == 200, body
            if failure or denials:
                needed[key] = failure or denials[0]
            else:
                unused.append(key)
            for component in sorted(components):
                _restart(env, component)
            time.sleep(2)
    report = "\n".join(
        [*(f"needed  {k}: {v[:160]}" for k, v in needed.items()), *(f"unused  {k}" for k in unused)]
    )
    print("\n" + report)
    assert needed, report
    assert sorted(unused) == sorted(UNUSED_RULES), report
