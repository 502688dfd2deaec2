"""`dra-capacity bind` follows the served cluster's release at runtime (kubeio/serverversion.py,
binder/controller.py `switch`): one of 1.38's allocator differences (resourceapi/releases.py `Allocation`)
flips when the API double's `/version` moves under the running binder.

A committed claim holds a negative `consumedCapacity` (1.37's API server accepts it). kube-scheduler v1.38's
PreFilter cannot gather the allocated state then and fails every pod that needs an allocation
(`negative_consumed_fails_prefilter`); 1.37 sums the amount and places the pod. The control plane is rolled
back from v1.38.0-beta.0 to v1.37.2: the lowest release answered drops at once, and the waiting pod binds."""

from __future__ import annotations

import subprocess
import threading
import urllib.request
from typing import Any

from support.binder_harness import bind_argv, bound, events, seed_cluster, wait_for
from support.gpu_cluster import CLASS, DRIVER, pod
from support.ports import free_port
from support.server_harness import metric_sample
from support.waiting import stop_process


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode()


NEGATIVE = (
    "gather allocation state: claim default/other-writer, device gpu.nvidia.com/gpu-node-1/gpu-0: consumed "
    'capacity "shares" must not be negative, got -1'
)


def _negative_claim() -> dict[str, Any]:
    """Another writer's claim on gpu-node-1's gpu-0, with a negative `consumedCapacity`."""
    selector = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-1"]}]}
        ]
    }
    result = {
        "request": "r",
        "driver": DRIVER,
        "pool": "gpu-node-1",
        "device": "gpu-0",
        "shareID": "00000000-0000-4000-8000-000000000001",
        "consumedCapacity": {"shares": "-1"},
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "other-writer", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": CLASS}}]}},
        "status": {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}},
    }


def test_bind_places_by_the_release_the_api_servers_report_now(kube_api: Any) -> None:
    kube_api.serve_versions("v1.38.0-beta.0")
    seed_cluster(kube_api, nodes=1, gpus=1, shares=4)
    kube_api.seed(_negative_claim())
    port = free_port()
    argv = bind_argv(kube_api, f"127.0.0.1:{port}", "--server-version-interval", "0.05")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    assert proc.stderr is not None
    stream = proc.stderr
    threading.Thread(target=lambda: lines.extend(iter(stream.readline, "")), daemon=True).start()
    try:
        kube_api.seed(pod("web-0"))
        failed = wait_for(
            "FailedScheduling on 1.38", lambda: events(kube_api, "FailedScheduling"), timeout=60
        )
        assert NEGATIVE in failed[0]["message"], failed[0]["message"]
        assert not bound(kube_api)
        metrics = _metrics(port)
        assert metric_sample(metrics, "dra_capacity_binder_kubernetes_release", release="1.38") == 1

        kube_api.serve_versions("v1.37.2")  # rolled back: 1.37 sums the negative amount
        wait_for("web-0 bound on 1.37", lambda: bound(kube_api), timeout=30)
        assert any("switched to Kubernetes 1.37" in line for line in lines)
        metrics = _metrics(port)
        assert metric_sample(metrics, "dra_capacity_binder_kubernetes_release", release="1.37") == 1
        assert metric_sample(metrics, "dra_capacity_binder_kubernetes_release_changes_total") == 1
    finally:
        stop_process(proc, 20)
