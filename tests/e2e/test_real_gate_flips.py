"""KEP-6406's rollout on a real kube-apiserver v1.37.2: `DRAExtendedResourceCapacity` switched off and on
again in the webhook (`dra-capacity serve`, as the chart registers it) and in the binder (`dra-capacity
bind` on the host, as the chart's binder ServiceAccount under the chart's RBAC), each restarted at every
flip. A 1.37 server cannot hold the field, so every request travels in the annotation carrier.

The tests run in file order, one phase each, on one cluster: before and after each flip every ResourceClaim
(uid, resourceVersion, allocation) and every pod (uid, node, phase) is listed, and nothing may change.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support.chart_webhooks import ServedWebhook, chart_kubeconfig, register, unregister
from support.kubectl_cases import ANNOTATION, SEL, carrier, requests

from localcluster.cluster import KUBECTL, Cluster, ClusterConfig, free_port

pytestmark = pytest.mark.realcluster

GATE = "DRAExtendedResourceCapacity"
NS = "flips"
ERN = "example.com/gpu.shared"
SCHEDULER = "dra-capacity"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"


@dataclass
class World:
    cluster: Cluster
    served: ServedWebhook
    workdir: Path
    binder_kubeconfig: Path
    binder: subprocess.Popen[bytes] | None = None
    binder_port: int = 0
    binder_gates: str = ""
    pods: list[str] = field(default_factory=list)

    def start_binder(self, enabled: bool) -> None:
        self.binder_gates = f"{GATE}={str(enabled).lower()}"
        self.binder_port = free_port()
        with (self.workdir / "bind.log").open("ab") as log:
            self.binder = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "dra-capacity"),
                    "bind",
                    "--kubeconfig",
                    str(self.binder_kubeconfig),
                    "--scheduler-name",
                    SCHEDULER,
                    "--leader-elect=false",
                    "--feature-gates",
                    self.binder_gates,
                    "--metrics-listen",
                    f"127.0.0.1:{self.binder_port}",
                ],
                stdout=log,
                stderr=log,
            )
        self.cluster.wait_for("the binder ready", self._binder_ready, timeout=90, interval=0.25)

    def _binder_ready(self) -> bool:
        assert self.binder is not None
        if self.binder.poll() is not None:
            raise AssertionError(f"bind exited {self.binder.returncode}: {self.binder_log()[-3000:]}")
        try:
            url = f"http://127.0.0.1:{self.binder_port}/readyz"
            with urllib.request.urlopen(url, timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def stop_binder(self) -> None:
        if self.binder is None:
            return
        self.binder.terminate()
        try:
            self.binder.wait(20)
        except subprocess.TimeoutExpired:
            self.binder.kill()
            self.binder.wait()
        self.binder = None

    def binder_log(self) -> str:
        return (self.workdir / "bind.log").read_text(errors="replace")

    def flip(self, *, webhook: bool, binder: bool) -> None:
        """Restart both with the gate as given."""
        self.stop_binder()
        self.served.restart("--feature-gates", f"{GATE}={str(webhook).lower()}")
        self.start_binder(binder)

    # ---- what the cluster holds ----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Every claim (uid, resourceVersion, allocation, reservedFor) and every pod of the namespace."""
        _, claims = self.cluster.request("GET", CLAIMS)
        _, pods = self.cluster.request("GET", f"/api/v1/namespaces/{NS}/pods")
        return {
            "claims": {
                f"{c['metadata']['namespace']}/{c['metadata']['name']}": (
                    c["metadata"]["uid"],
                    c["metadata"]["resourceVersion"],
                    json.dumps(c.get("status", {}).get("allocation"), sort_keys=True),
                    json.dumps(c.get("status", {}).get("reservedFor"), sort_keys=True),
                )
                for c in claims["items"]
            },
            "pods": {
                p["metadata"]["name"]: (
                    p["metadata"]["uid"],
                    p["spec"].get("nodeName"),
                    p["status"].get("phase"),
                )
                for p in pods["items"]
            },
        }

    def kubectl(self, *args: str, manifest: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
        if manifest is not None:
            (self.workdir / "dc.yaml").write_text(json.dumps(manifest, indent=2))
        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig_path), "HOME": str(self.workdir)}
        return subprocess.run(
            [str(KUBECTL), *args], cwd=self.workdir, env=env, capture_output=True, text=True, timeout=120
        )

    def apply(self, manifest: dict[str, Any]) -> str:
        done = self.kubectl("apply", "-f", "dc.yaml", manifest=manifest)
        assert done.returncode == 0, done.stderr
        return done.stderr + done.stdout

    def annotation(self, name: str) -> str | None:
        _, body = self.cluster.request("GET", f"{CLASSES}/{name}")
        return (body["metadata"].get("annotations") or {}).get(ANNOTATION)

    def create_pod(self, name: str) -> None:
        self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": NS},
                "spec": {
                    "schedulerName": SCHEDULER,
                    "containers": [
                        {
                            "name": "cuda",
                            "image": "registry.example.com/cuda:12",
                            "resources": {"limits": {ERN: "1"}, "requests": {ERN: "1"}},
                        }
                    ],
                },
            }
        )
        self.pods.append(name)

    def pod(self, name: str) -> dict[str, Any]:
        _, body = self.cluster.request("GET", f"/api/v1/namespaces/{NS}/pods/{name}")
        return dict(body)

    def wait_running(self, name: str) -> dict[str, Any]:
        return dict(
            self.cluster.wait_for(
                f"pod {name} Running",
                lambda: (p := self.pod(name))["status"].get("phase") == "Running" and p,
                timeout=90,
                interval=0.25,
            )
        )

    def claim_of(self, pod: dict[str, Any]) -> dict[str, Any]:
        name = pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
        _, body = self.cluster.request(
            "GET", f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims/{name}"
        )
        return dict(body)

    def events_for(self, pod: str) -> list[dict[str, Any]]:
        _, body = self.cluster.request(
            "GET", f"/api/v1/namespaces/{NS}/events?fieldSelector=involvedObject.name%3D{pod}"
        )
        return list(body["items"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    config = ClusterConfig(nodes=1, gpus_per_node=1, shares=4)  # one GPU of four shares: every pod shares it
    with Cluster.start(tmp_path_factory.mktemp("realcluster"), config) as cluster:
        workdir = tmp_path_factory.mktemp("flips")
        served = ServedWebhook(cluster, workdir)
        served.start("--feature-gates", f"{GATE}=true")
        register(cluster, served)
        cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        state = World(cluster, served, workdir, chart_kubeconfig(cluster, "binder"))
        state.start_binder(True)
        try:
            yield state
        finally:
            state.stop_binder()
            unregister(cluster)
            served.stop()


def _class(name: str, value: str, ern: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    obj = carrier(name, value, ern=ern)
    if labels:
        obj["metadata"]["labels"] = labels
    return obj


def _plain(name: str, ern: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [SEL], "extendedResourceName": ern},
    }


def test_with_the_gate_on_everywhere_a_pod_gets_one_share(world: World) -> None:
    world.cluster.wait_for(
        "the webhook called",
        lambda: (
            world.kubectl("apply", "--dry-run=server", "-f", "dc.yaml", manifest=carrier("x", "0")).returncode
            == 1
        ),
        timeout=60,
        interval=0.3,
    )
    world.apply(_class("gpu-shared", requests(shares="1"), ERN))
    world.apply(_class("gpu-keep", requests(shares="1"), "example.com/keep"))
    world.apply(_class("gpu-change", requests(shares="1"), "example.com/change"))
    world.apply(_plain("gpu-plain", "example.com/plain"))
    world.create_pod("before-0")
    pod = world.wait_running("before-0")
    claim = world.claim_of(pod)
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert result["consumedCapacity"]["shares"] == "1", result  # one share of the GPU, not the whole GPU


def test_webhook_gate_off_drops_on_create_and_keeps_what_an_update_finds(world: World) -> None:
    before = world.snapshot()
    world.flip(webhook=False, binder=True)
    assert world.snapshot() == before

    # A new class: the capacity request is dropped, silently, as upstream drops a disabled field.
    out = world.apply(_class("gpu-new", requests(shares="1"), "example.com/new"))
    assert out == "deviceclass.resource.k8s.io/gpu-new created\n"
    assert world.annotation("gpu-new") is None

    # An update that keeps the stored value keeps it.
    out = world.apply(_class("gpu-keep", requests(shares="1"), "example.com/keep", labels={"team": "ml"}))
    assert out == "deviceclass.resource.k8s.io/gpu-keep configured\n"
    assert world.annotation("gpu-keep") == requests(shares="1")

    # An update that changes a stored value: the old object uses the feature, so under the standard
    # drop-on-disable pattern (docs/validation.md, DESIGN "Drop-on-disable") the new value is kept too.
    out = world.apply(_class("gpu-change", requests(shares="2"), "example.com/change"))
    assert out == "deviceclass.resource.k8s.io/gpu-change configured\n"
    assert world.annotation("gpu-change") == requests(shares="2")

    # An update that adds the request to a class that had none drops it.
    out = world.apply(_class("gpu-plain", requests(shares="1"), "example.com/plain"))
    assert out == "deviceclass.resource.k8s.io/gpu-plain configured\n"
    assert world.annotation("gpu-plain") is None

    # The binder's gate is still on: a new pod gets its share.
    world.create_pod("webhook-off-0")
    world.wait_running("webhook-off-0")


def test_binder_gate_off_refuses_to_downgrade_pods_stay_pending_with_an_event(world: World) -> None:
    before = world.snapshot()
    world.flip(webhook=False, binder=False)
    assert world.snapshot() == before

    world.create_pod("binder-off-0")
    world.create_pod("binder-off-1")
    for name in ("binder-off-0", "binder-off-1"):
        events = world.cluster.wait_for(
            f"an Event for {name}",
            lambda name=name: [e for e in world.events_for(name) if GATE in e.get("message", "")],
            timeout=60,
            interval=0.25,
        )
        assert events[0]["type"] == "Warning", events
        pod = world.pod(name)
        assert pod["status"].get("phase") == "Pending" and not pod["spec"].get("nodeName"), pod
    after = world.snapshot()
    assert after["claims"] == before["claims"], "the binder created or touched a claim with the gate off"
    assert {k: v for k, v in after["pods"].items() if k in before["pods"]} == before["pods"]


def test_gate_back_on_the_pending_pods_bind(world: World) -> None:
    before = world.snapshot()
    world.flip(webhook=True, binder=True)
    for name in ("binder-off-0", "binder-off-1"):
        pod = world.wait_running(name)
        [result] = world.claim_of(pod)["status"]["allocation"]["devices"]["results"]
        assert result["consumedCapacity"]["shares"] == "1", result
    after = world.snapshot()
    assert {k: v for k, v in after["claims"].items() if k in before["claims"]} == before["claims"]
    assert len(after["claims"]) == len(before["claims"]) + 2
    kept = {
        k: v for k, v in after["pods"].items() if k in before["pods"] and k.startswith(("before", "webhook"))
    }
    assert kept == {k: v for k, v in before["pods"].items() if k.startswith(("before", "webhook"))}
    # Four pods, one share each, on the one GPU of four shares.
    results = [
        r
        for name in world.pods
        for r in world.claim_of(world.pod(name))["status"]["allocation"]["devices"]["results"]
    ]
    assert [r["device"] for r in results] == ["gpu-0"] * 4
    assert len({r["shareID"] for r in results}) == 4
    # With the gate back on in the webhook, a new class keeps its request again.
    world.apply(_class("gpu-again", requests(shares="1"), "example.com/again"))
    assert world.annotation("gpu-again") == requests(shares="1")


def test_the_binder_needed_no_rule_the_chart_lacks(world: World) -> None:
    """It ran as the chart's ServiceAccount through every phase: not one 403 in its log."""
    log = world.binder_log()
    assert '"decision"' in log
    assert not re.search(r"HTTP 403|403 Forbidden|is forbidden", log), log
