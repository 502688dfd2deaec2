"""The harness against itself: the real control plane starts, authorizes, admits through a webhook served from
the network namespace, and schedules a KEP-5004 extended-resource pod with upstream's own DRA code."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.cluster import Cluster, ClusterConfig
from localcluster.objects import gpu_slice

pytestmark = pytest.mark.realcluster

HERE = Path(__file__).resolve().parent


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_starts_under_20_seconds(real_cluster: Cluster) -> None:
    print(f"realcluster start-up to ready: {real_cluster.startup_seconds:.1f} s")
    assert real_cluster.version.startswith("v1.37.")
    assert 0 < real_cluster.startup_seconds < 20
    status, body = real_cluster.request("GET", "/version")
    assert status == 200 and body["gitVersion"] == real_cluster.version


def test_server_side_dry_run_apply_of_a_device_class(real_cluster: Cluster) -> None:
    name = unique("dry-run")
    manifest = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]},
    }
    done = real_cluster.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input=json.dumps(manifest)
    )
    assert done.stdout.strip() == f"deviceclass.resource.k8s.io/{name} serverside-applied (server dry run)"
    status, _ = real_cluster.request("GET", f"/apis/resource.k8s.io/v1/deviceclasses/{name}")
    assert status == 404  # a dry run stores nothing


def test_a_service_account_without_rights_gets_a_real_rbac_403(real_cluster: Cluster, tmp_path: Path) -> None:
    namespace, account = unique("rbac"), "nobody"
    kubeconfig = real_cluster.service_account_kubeconfig(namespace, account, tmp_path / "sa.kubeconfig")
    status, body = real_cluster.request(
        "GET",
        "/apis/resource.k8s.io/v1/deviceclasses",
        token=real_cluster.service_account_token(namespace, account),
    )
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert (
        f'User "system:serviceaccount:{namespace}:{account}" cannot list resource "deviceclasses"'
        in body["message"]
    )
    denied = real_cluster.kubectl("get", "deviceclasses", kubeconfig=kubeconfig, check=False)
    assert denied.returncode != 0 and "Forbidden" in denied.stderr

    # The same kubeconfig succeeds once RBAC grants it: the 403 was authorization, not authentication.
    real_cluster.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": namespace},
            "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses"], "verbs": ["list"]}],
        }
    )
    real_cluster.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": namespace},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }
    )
    real_cluster.wait_for(
        "the binding to take effect",
        lambda: (
            real_cluster.kubectl("get", "deviceclasses", kubeconfig=kubeconfig, check=False).returncode == 0
        ),
        timeout=20,
    )


def test_a_resource_slice_is_created_and_listed(real_cluster: Cluster) -> None:
    driver = f"{unique('gpu')}.example.com"
    created = real_cluster.create(gpu_slice(real_cluster.node_names[0], gpus=3, shares=None, driver=driver))
    assert created["metadata"]["uid"]
    status, body = real_cluster.request(
        "GET", f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3D{driver}"
    )
    assert status == 200
    assert [s["metadata"]["name"] for s in body["items"]] == [created["metadata"]["name"]]
    assert [d["name"] for d in body["items"][0]["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]
    # The harness's own NVIDIA-shaped slices are there too, one per fake node.
    status, body = real_cluster.request("GET", "/apis/resource.k8s.io/v1/resourceslices")
    nodes = {s["spec"].get("nodeName") for s in body["items"] if s["spec"]["driver"] == "gpu.nvidia.com"}
    assert nodes == set(real_cluster.node_names)


@contextlib.contextmanager
def deny_webhook(
    cluster: Cluster, tmp_path: Path, selector_service: bool = False
) -> Iterator[tuple[str, Path]]:
    """The test webhook running inside the network namespace, registered through Service `deny`: one the
    harness points at it (`webhook_client_config`), or, with `selector_service`, an ordinary Service selecting
    a pod that kwok reports at the namespace's address (`pod_ip_annotation`), as a chart's would."""
    assert cluster.netns is not None, "this machine could not create a network namespace"
    namespace, service, port = unique("hook"), "deny", 8443
    ca, cert, key = cluster.serving_certificate([f"{service}.{namespace}.svc"], tmp_path / "tls")
    record = tmp_path / "calls.jsonl"
    record.touch()
    log = (tmp_path / "webhook.log").open("w")
    argv = [sys.executable, str(HERE / "deny_webhook.py"), f"--listen={cluster.listen_host}:{port}"]
    argv += [f"--cert={cert}", f"--key={key}", f"--record={record}"]
    server = subprocess.Popen(cluster.netns_argv(argv), stdout=log, stderr=subprocess.STDOUT)
    name = unique("realcluster-deny")
    try:
        cluster.wait_for(
            "the webhook to listen", lambda: "listening" in (tmp_path / "webhook.log").read_text()
        )
        if selector_service:
            client_config = _selector_service(cluster, namespace, service, port, ca.read_bytes())
        else:
            client_config = cluster.webhook_client_config(
                namespace, service, port, "/validate", ca.read_bytes()
            )
        rule = {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["configmaps"],
        }
        cluster.create(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": name},
                "webhooks": [
                    {
                        "name": "deny.realcluster.dra-capacity.io",
                        "clientConfig": client_config,
                        "rules": [rule],
                        "objectSelector": {"matchLabels": {"realcluster/webhook": name}},
                        "sideEffects": "None",
                        "admissionReviewVersions": ["v1"],
                        "failurePolicy": "Fail",
                        "timeoutSeconds": 10,
                    }
                ],
            }
        )
        yield name, record
    finally:
        cluster.request(
            "DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{name}"
        )
        server.kill()
        server.wait()
        log.close()


def _selector_service(cluster: Cluster, namespace: str, service: str, port: int, ca: bytes) -> dict[str, Any]:
    """A chart-style Service and the pod it selects; the EndpointSlice controller writes the endpoints."""
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    labels = {"app": service}
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {"selector": labels, "ports": [{"name": "https", "port": 443, "targetPort": "https"}]},
        }
    )
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{service}-0",
                "namespace": namespace,
                "labels": labels,
                "annotations": cluster.pod_ip_annotation(),
            },
            "spec": {
                "containers": [
                    {"name": "webhook", "image": "x", "ports": [{"name": "https", "containerPort": port}]}
                ]
            },
        }
    )

    def endpoints() -> bool:
        path = f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices?labelSelector="
        body = _get(cluster, path + f"kubernetes.io%2Fservice-name%3D{service}")
        return any(
            e["addresses"] == [cluster.listen_host] and e["conditions"].get("ready")
            for s in body["items"]
            for e in s.get("endpoints") or []
        )

    cluster.wait_for("the EndpointSlice controller to point the Service at the pod", endpoints, timeout=60)
    return {
        "service": {"namespace": namespace, "name": service, "port": 443, "path": "/validate"},
        "caBundle": base64.b64encode(ca).decode(),
    }


@pytest.mark.parametrize(
    "selector_service", [False, True], ids=["harness-endpointslice", "chart-style-service"]
)
def test_a_webhook_in_the_network_namespace_is_called_through_a_service(
    real_cluster: Cluster, tmp_path: Path, selector_service: bool
) -> None:
    with deny_webhook(real_cluster, tmp_path, selector_service) as (name, record):

        def configmap(deny: bool) -> dict[str, Any]:
            labels = {"realcluster/webhook": name, **({"realcluster/deny": "yes"} if deny else {})}
            return {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": unique("cm"), "labels": labels},
            }

        # A new configuration takes a moment to reach the API server's webhook informer: retry.
        def allowed() -> bool:
            status, _ = real_cluster.request(
                "POST", "/api/v1/namespaces/default/configmaps", configmap(False)
            )
            return status == 201 and record.read_text() != ""

        real_cluster.wait_for("the webhook's first call", allowed, timeout=30, interval=0.5)
        status, body = real_cluster.request("POST", "/api/v1/namespaces/default/configmaps", configmap(True))
        assert status == 403
        assert body["message"] == (
            'admission webhook "deny.realcluster.dra-capacity.io" denied the request: '
            "denied by the realcluster test webhook"
        )
        calls = [json.loads(line) for line in record.read_text().splitlines()]
        assert calls[-1]["path"] == "/validate?timeout=10s" and calls[-1]["kind"]["kind"] == "ConfigMap"


def _get(cluster: Cluster, path: str) -> dict[str, Any]:
    status, body = cluster.request("GET", path)
    assert status == 200, body
    return dict(body)


def test_the_real_scheduler_binds_an_extended_resource_pod_and_deleting_it_releases_the_claim(
    real_cluster: Cluster,
) -> None:
    """KEP-5004: a DeviceClass names `example.com/gpu`; a pod asks `example.com/gpu: 1`; kube-scheduler
    allocates a whole device and creates the claim, kwok runs the pod, and deleting the pod releases it."""
    driver = f"{unique('whole')}.example.com"
    cls = unique("example-gpu")
    node = real_cluster.node_names[0]
    real_cluster.create(gpu_slice(node, gpus=1, shares=None, driver=driver))
    real_cluster.create(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": cls},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}],
                "extendedResourceName": "example.com/gpu",
            },
        }
    )
    pod_name = unique("gpu-pod")
    real_cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": "default"},
            "spec": {
                "containers": [
                    {
                        "name": "cuda",
                        "image": "registry.example.com/cuda:12",
                        "resources": {"limits": {"example.com/gpu": "1"}},
                    }
                ],
                "nodeSelector": {"kubernetes.io/hostname": node},
            },
        }
    )
    pod_path = f"/api/v1/namespaces/default/pods/{pod_name}"
    pod = real_cluster.wait_for(
        "the pod Running",
        lambda: (p := _get(real_cluster, pod_path)).get("status", {}).get("phase") == "Running" and p,
        timeout=60,
        interval=0.25,
    )
    assert pod["spec"]["nodeName"] == node
    claim_status = pod["status"]["extendedResourceClaimStatus"]
    claim_name = claim_status["resourceClaimName"]
    assert claim_status["requestMappings"] == [
        {"containerName": "cuda", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    ]
    claim = _get(real_cluster, f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{claim_name}")
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["pool"], r["device"]) for r in results] == [(driver, node, "gpu-0")]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == [pod_name]
    assert claim["metadata"]["ownerReferences"][0]["name"] == pod_name

    status, _ = real_cluster.request("DELETE", pod_path)
    assert status == 200
    real_cluster.wait_for("the pod gone", lambda: real_cluster.request("GET", pod_path)[0] == 404, timeout=60)
    claim_path = f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{claim_name}"
    real_cluster.wait_for(
        "the claim released",
        lambda: real_cluster.request("GET", claim_path)[0] == 404,
        timeout=60,
        interval=0.25,
    )


def test_two_harnesses_run_at_once(real_cluster_factory: Callable[..., Cluster]) -> None:
    small = ClusterConfig(nodes=1, gpus_per_node=1)
    first, second = real_cluster_factory(small), real_cluster_factory(small)
    print(f"two more clusters ready in {first.startup_seconds:.1f} s and {second.startup_seconds:.1f} s")
    assert first.url != second.url
    assert first.netns is not None and second.netns is not None
    assert first.netns.name != second.netns.name and first.listen_host != second.listen_host
    name = unique("only-in-first")
    first.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    assert first.request("GET", f"/api/v1/namespaces/default/configmaps/{name}")[0] == 200
    assert second.request("GET", f"/api/v1/namespaces/default/configmaps/{name}")[0] == 404
    nodes = yaml.safe_load(second.kubectl("get", "nodes", "-o", "yaml").stdout)
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["kwok-node-0"]


def test_stop_ends_every_process_and_removes_the_namespace(
    real_cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = real_cluster_factory(ClusterConfig(nodes=1, gpus_per_node=0))
    pids = [p.pid for p in cluster.processes]
    assert len(pids) == 5
    assert cluster.netns is not None
    netns = cluster.netns.name
    cluster.stop()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.1)
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert netns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_kwok_runs_pods_and_completes_job_and_helm_test_pods(real_cluster: Cluster) -> None:
    """The lifecycle agent: a plain pod Running with an IP; a Job's pod and a `helm test` pod Succeeded (so
    hook Jobs and `helm test` finish); a deleted running pod goes away."""
    namespace = unique("life")
    real_cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    container = [{"name": "c", "image": "registry.example.com/tool:1"}]

    def pod(name: str, **meta: Any) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, **meta},
            "spec": {"containers": container, "restartPolicy": "Never"},
        }

    real_cluster.create(pod("plain"))
    real_cluster.create(pod("helm-test", annotations={"helm.sh/hook": "test"}))
    real_cluster.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "hook", "namespace": namespace},
            "spec": {"template": {"spec": {"containers": container, "restartPolicy": "Never"}}},
        }
    )
    base = f"/api/v1/namespaces/{namespace}/pods"
    plain = real_cluster.wait_for(
        "the plain pod Running",
        lambda: (p := _get(real_cluster, f"{base}/plain"))["status"].get("phase") == "Running" and p,
        timeout=60,
        interval=0.25,
    )
    assert plain["status"]["podIP"] and plain["spec"]["nodeName"] in real_cluster.node_names
    real_cluster.wait_for(
        "the helm test pod Succeeded",
        lambda: _get(real_cluster, f"{base}/helm-test")["status"].get("phase") == "Succeeded",
        timeout=60,
        interval=0.25,
    )
    real_cluster.wait_for(
        "the Job complete",
        lambda: (
            _get(real_cluster, f"/apis/batch/v1/namespaces/{namespace}/jobs/hook")
            .get("status", {})
            .get("succeeded")
            == 1
        ),
        timeout=60,
        interval=0.25,
    )
    assert real_cluster.request("DELETE", f"{base}/plain")[0] == 200
    real_cluster.wait_for(
        "the deleted pod gone", lambda: real_cluster.request("GET", f"{base}/plain")[0] == 404, timeout=60
    )


_WAITING_TEST = """
import json, os, time

def test_wait(real_cluster):
    pids = [p.pid for p in real_cluster.processes]
    with open(os.environ["STATE"] + ".tmp", "w") as out:
        json.dump({"pids": pids, "netns": real_cluster.netns.name}, out)
    os.rename(os.environ["STATE"] + ".tmp", os.environ["STATE"])
    time.sleep(600)
"""


def _gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.1)
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def test_a_run_ended_by_sigterm_still_stops_every_process_and_removes_its_namespace(tmp_path: Path) -> None:
    """A CI timeout or `kill` sends SIGTERM: the run's teardown must still end each process by its PID and
    delete the network namespace (the default SIGTERM action skipped teardown and left both behind)."""
    (tmp_path / "test_waiting.py").write_text(_WAITING_TEST)
    state = tmp_path / "state.json"
    root = HERE.parents[1]
    env = {
        **os.environ,
        "STATE": str(state),
        "PYTHONPATH": f"{root / 'tests'}:{root}",
    }
    argv = [sys.executable, "-m", "pytest", str(tmp_path / "test_waiting.py"), "-p", "realcluster.fixtures"]
    argv += ["-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", "/dev/null"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not state.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert state.exists(), proc.communicate(timeout=30)[0] if proc.poll() is not None else "no cluster"
        started = json.loads(state.read_text())
        proc.terminate()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not _gone(started["pids"])
    assert (
        started["netns"] not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    )
