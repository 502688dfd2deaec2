"""End to end: an unchanged `nvidia.com/gpu.shared: 1` pod, created through the API, is routed by the real
`dra-capacity serve` (`/mutate-pods`, called by the API double's admission over verified HTTPS) to the real
`dra-capacity bind`, which allocates it a share and binds it. The API server is the kube-apiserver test
double; the two commands are subprocesses."""

from __future__ import annotations

import base64
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.binder_harness import (
    assert_kubelet_view,
    bind_argv,
    bound,
    events,
    kube_for,
    seed_cluster,
    wait_for,
)
from support.gpu_cluster import pod
from support.serve_process import free_port, serve_argv
from support.waiting import stop_process

from kubeio.kube import PODS, Kube

LABEL = "dra-capacity.io/pod-routing"


@pytest.fixture
def serve(kube_api: Any, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port()
    tls = tmp_path / "tls"
    proc = subprocess.Popen(
        serve_argv(port, tls, "--kubeconfig", str(kube_api.kubeconfig_path)),
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "serve.log").open("w"),
        text=True,
    )
    ctx: ssl.SSLContext | None = None

    def ready() -> bool:
        nonlocal ctx
        if not (tls / "ca.crt").exists():
            return False
        ctx = ctx or ssl.create_default_context(cafile=str(tls / "ca.crt"))
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    try:
        wait_for("serve ready", ready, timeout=60)
        ca = (tls / "ca.crt").read_bytes()
        kube_api.seed(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "dra-capacity-pod-routing"},
                "webhooks": [
                    {
                        "name": "pods.dra-capacity.io",
                        "clientConfig": {
                            "url": f"https://127.0.0.1:{port}/mutate-pods",
                            "caBundle": base64.b64encode(ca).decode(),
                        },
                        "rules": [
                            {
                                "apiGroups": [""],
                                "apiVersions": ["v1"],
                                "operations": ["CREATE"],
                                "resources": ["pods"],
                            }
                        ],
                        "namespaceSelector": {"matchLabels": {LABEL: "enabled"}},
                        "failurePolicy": "Ignore",
                        "sideEffects": "None",
                        "admissionReviewVersions": ["v1"],
                        "timeoutSeconds": 5,
                    }
                ],
            }
        )
        yield proc, port
    finally:
        stop_process(proc, 15)


@pytest.fixture
def bind(kube_api: Any, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    log = (tmp_path / "bind.log").open("w")
    proc = subprocess.Popen(
        bind_argv(kube_api, "127.0.0.1:0"),
        stdout=subprocess.DEVNULL,
        stderr=log,
        text=True,
    )
    try:
        yield proc
    finally:
        stop_process(proc, 15)
        log.close()


def create(kube: Kube, obj: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
    query = {"dryRun": "All"} if dry_run else None
    return kube.request("POST", PODS.path(obj["metadata"]["namespace"]), body=obj, query=query)


def wait_routing_warm(kube: Kube) -> None:
    """The webhook's cache fills from the API after it is ready: probe with dry-run creates until routed."""
    probe = pod("probe", "inference", scheduler=None)
    wait_for(
        "routing cache warm",
        lambda: create(kube, probe, dry_run=True)["spec"]["schedulerName"] == "dra-capacity",
    )


def routed_namespace(kube_api: Any) -> Kube:
    """Namespace `inference`, labelled for routing, and a client once the webhook's routing cache is warm."""
    kube_api.seed(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "inference", "labels": {LABEL: "enabled"}},
        }
    )
    kube = kube_for(kube_api)
    wait_routing_warm(kube)
    return kube


def test_unchanged_pod_is_routed_allocated_a_share_and_bound(kube_api: Any, serve: Any, bind: Any) -> None:
    seed_cluster(kube_api, nodes=2, gpus=1, shares=4)
    kube = routed_namespace(kube_api)
    created = [create(kube, pod(f"web-{i}", "inference", scheduler=None)) for i in range(5)]
    assert {p["spec"]["schedulerName"] for p in created} == {"dra-capacity"}
    other = create(kube, pod("elsewhere", "default", scheduler=None))
    assert other["spec"]["schedulerName"] == "default-scheduler"
    spread = create(
        kube,
        pod(
            "spread",
            "inference",
            scheduler=None,
            topologySpreadConstraints=[
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {},
                }
            ],
        ),
    )
    assert spread["spec"]["schedulerName"] == "dra-capacity"  # placement models PodTopologySpread
    alone = create(
        kube,
        pod(
            "claims-a-volume",
            "inference",
            scheduler=None,
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        ),
    )
    # changed on purpose (issue 38): routed, and waits with an Event naming the volume, rather than be left to
    # kube-scheduler, which would allocate the same devices without the class's capacity
    assert alone["spec"]["schedulerName"] == "dra-capacity"
    created.append(spread)
    wait_for("6 bound", lambda: len(bound(kube_api, "inference")) == 6, timeout=60)
    for p in bound(kube_api, "inference"):
        assert_kubelet_view(kube_api, p)
    # the pod spec is unchanged but for the scheduler name
    by_name = {p["metadata"]["name"]: p for p in bound(kube_api, "inference")}
    assert set(by_name) == {p["metadata"]["name"] for p in created}
    for before in created:
        after = by_name[before["metadata"]["name"]]
        assert before["spec"]["containers"] == after["spec"]["containers"]
        assert before["spec"].get("topologySpreadConstraints") == after["spec"].get(
            "topologySpreadConstraints"
        )


def test_pod_admitted_while_routing_is_down_is_reported(kube_api: Any, serve: Any, bind: Any) -> None:
    seed_cluster(kube_api, nodes=1)
    kube = routed_namespace(kube_api)
    proc, _ = serve
    stop_process(proc, 15)  # failurePolicy Ignore: creation goes on without routing
    missed = create(kube, pod("missed", "inference", scheduler=None))
    assert missed["spec"]["schedulerName"] == "default-scheduler"
    try:
        [event] = wait_for(
            "warning", lambda: events(kube_api, "NotRoutedToCapacityBinder", "inference"), timeout=30
        )
    except AssertionError:
        print((kube_api.workdir.parent / "bind.log").read_text()[-4000:])
        raise
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "missed"
    time.sleep(0.5)
    assert not bound(kube_api, "inference")
