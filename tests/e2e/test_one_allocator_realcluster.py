"""One allocator per device, on the real control plane (v1.37): with the chart's NoSchedule DeviceTaintRule
on the devices the binder serves (`binder.servedDevices`, applied by localcluster.install), the real
kube-scheduler allocates none of them in a mixed workload, while the real `dra-capacity bind` places the
routed pods on shares of them. The mix, made through the real `/mutate-pods` of `dra-capacity serve`
(routing default: all namespaces but kube-system and the release namespace):

* routed pods (`nvidia.com/gpu.shared: 1`), bound by the binder;
* a routed pod the binder refuses (a gcePersistentDisk volume): it waits, routed, with an Event naming it;
* a pod of a namespace labelled out of routing: it keeps the default scheduler, waits, and the binder's
  routing audit sends it `NotOptedInToCapacityBinder`;
* a pod with a ResourceClaim of its own on the same devices, for the default scheduler: it waits.

The routing audit's `dra_capacity_binder_foreign_allocations` gauge is then shown to name a claim whose
allocation the test writes itself, as another scheduler would. Negative control, last: with the
DeviceTaintRule deleted, kube-scheduler does allocate a served device, the check below sees it, and so does
the gauge.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.real_cluster import Product, installed_product, wait_default_account

from localcluster.cluster import Cluster, ClusterConfig
from localcluster.install import (
    SCHEDULER_NAME,
    Installed,
    shared_gpu_class,
    wait_routed,
)
from localcluster.objects import make_claim, make_pod
from resourceapi.routing import SERVED_TAINT_KEY

pytestmark = pytest.mark.realcluster

DRIVER = "gpu.nvidia.com"  # the chart's default binder.servedDevices
RESOURCE = "nvidia.com/gpu.shared"
CLASS = "gpu-shared"
ROUTED, OPTED_OUT = "mixed", "batch"
IMAGE = "registry.k8s.io/pause:3.10"
RES = "/apis/resource.k8s.io/v1"
GAUGE = "dra_capacity_binder_foreign_allocations"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Product]:
    workdir = tmp_path_factory.mktemp("one-allocator")
    with installed_product(workdir, ClusterConfig(nodes=2, gpus_per_node=2, netns=False)) as product:
        cluster = product.cluster
        cluster.create(shared_gpu_class(CLASS))
        for ns, labels in ((ROUTED, {}), (OPTED_OUT, {"dra-capacity.io/pod-routing": "disabled"})):
            cluster.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
            )
        wait_routed(cluster, ROUTED)
        for ns in (ROUTED, OPTED_OUT):
            wait_default_account(cluster, ns)
        yield product


def _get(cluster: Cluster, path: str) -> Any:
    status, body = cluster.request("GET", path)
    return body if status == 200 else None


def _gpu_pod(name: str, ns: str, **spec: Any) -> dict[str, Any]:
    return make_pod(name).namespace(ns).container("main", IMAGE).limit(RESOURCE, 1).spec(**spec).obj()


def _claim_pod(name: str, ns: str, claim: str) -> dict[str, Any]:
    """A pod for the default scheduler with a ResourceClaim of its own (no extended resource: not routed)."""
    built = make_pod(name).namespace(ns).container("main", IMAGE)
    built = built.spec(resourceClaims=[{"name": "gpu", "resourceClaimName": claim}])
    pod = built.obj()
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return pod


def _pod(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    body = _get(cluster, f"/api/v1/namespaces/{ns}/pods/{name}")
    assert body is not None, f"pod {ns}/{name} is gone"
    return dict(body)


def _events(cluster: Cluster, ns: str, pod: str, reason: str) -> list[dict[str, Any]]:
    body = _get(cluster, f"/api/v1/namespaces/{ns}/events") or {}
    return [
        e
        for e in body.get("items", [])
        if e.get("reason") == reason and e["involvedObject"].get("name") == pod
    ]


def _served_devices(cluster: Cluster) -> set[tuple[str, str, str]]:
    """(driver, pool, device) of every device the DeviceTaintRule's selector (driver gpu.nvidia.com) takes."""
    out = set()
    for s in (_get(cluster, f"{RES}/resourceslices") or {}).get("items", []):
        if s["spec"]["driver"] == DRIVER:
            out |= {(DRIVER, s["spec"]["pool"]["name"], d["name"]) for d in s["spec"].get("devices", [])}
    return out


def kube_scheduler_allocations(cluster: Cluster, ignore: frozenset[str] = frozenset()) -> list[str]:
    """Every allocated claim holding a served device that is reserved for a pod the binder does not schedule
    (so kube-scheduler allocated it), as `ns/claim device`; claims named in `ignore` left out. Judged from
    the pods' scheduler names, not from the tolerations the binder's audit reads."""
    served = _served_devices(cluster)
    out: list[str] = []
    for claim in (_get(cluster, f"{RES}/resourceclaims") or {}).get("items", []):
        meta, status = claim["metadata"], claim.get("status") or {}
        allocation = status.get("allocation")
        if allocation is None or meta["name"] in ignore:
            continue
        schedulers = {
            (_get(cluster, f"/api/v1/namespaces/{meta['namespace']}/pods/{r['name']}") or {})
            .get("spec", {})
            .get("schedulerName")
            for r in status.get("reservedFor") or []
            if r.get("resource") == "pods"
        }
        if schedulers <= {SCHEDULER_NAME}:
            continue
        for r in allocation["devices"]["results"]:
            if (r["driver"], r["pool"], r["device"]) in served:
                out.append(f"{meta['namespace']}/{meta['name']} {r['driver']}/{r['pool']}/{r['device']}")
    return out


def _gauge(installed: Installed) -> dict[tuple[str, str, str, str], float]:
    """The gauge's samples: (namespace, pod, claim, device) -> value."""
    out = {}
    for line in installed.metrics().splitlines():
        if not line.startswith(GAUGE + "{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
        out[(labels["namespace"], labels["pod"], labels["claim"], labels["device"])] = float(line.split()[-1])
    return out


def _unschedulable(cluster: Cluster, ns: str, name: str) -> str:
    """kube-scheduler's PodScheduled=False message once it has one, else ""."""
    for c in _pod(cluster, ns, name).get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
            return str(c.get("message", ""))
    return ""


def test_kube_scheduler_allocates_none_of_the_binder_s_devices(mixed: Product) -> None:
    cluster = mixed.cluster
    rules = (_get(cluster, f"{RES}/devicetaintrules") or {}).get("items", [])
    assert [r["spec"]["taint"]["key"] for r in rules] == [SERVED_TAINT_KEY]
    routed = [cluster.create(_gpu_pod(f"web-{i}", ROUTED)) for i in range(3)]
    refused = cluster.create(
        _gpu_pod("cached", ROUTED, volumes=[{"name": "models", "gcePersistentDisk": {"pdName": "models"}}])
    )
    held = cluster.create(_gpu_pod("held", OPTED_OUT))
    cluster.create(make_claim("own").namespace(OPTED_OUT).request("gpu", CLASS).obj())
    own = cluster.create(_claim_pod("own-claim", OPTED_OUT, "own"))
    plain = cluster.create(make_pod("plain").namespace(OPTED_OUT).container("main", IMAGE).obj())
    assert {p["spec"]["schedulerName"] for p in (*routed, refused)} == {SCHEDULER_NAME}
    assert {p["spec"]["schedulerName"] for p in (held, own, plain)} == {"default-scheduler"}

    for p in routed:
        name = p["metadata"]["name"]
        cluster.wait_for(
            f"{name} bound", lambda name=name: _pod(cluster, ROUTED, name)["spec"].get("nodeName"), 60
        )
    cluster.wait_for(
        "plain bound by kube-scheduler", lambda: _pod(cluster, OPTED_OUT, "plain")["spec"].get("nodeName"), 60
    )
    # the binder's claims are on served devices: the taint does not keep the binder off them
    served = _served_devices(cluster)
    for p in routed:
        claim_name = _pod(cluster, ROUTED, p["metadata"]["name"])["status"]["extendedResourceClaimStatus"][
            "resourceClaimName"
        ]
        claim = _get(cluster, f"{RES}/namespaces/{ROUTED}/resourceclaims/{claim_name}")
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"], result["device"]) in served
    [event] = cluster.wait_for(
        "refused pod's Event", lambda: _events(cluster, ROUTED, "cached", "FailedScheduling"), 60
    )
    assert "gcePersistentDisk volume models" in event["message"], event["message"]
    [event] = cluster.wait_for(
        "NotOptedIn Event", lambda: _events(cluster, OPTED_OUT, "held", "NotOptedInToCapacityBinder"), 60
    )
    assert "namespace 'batch' is labelled dra-capacity.io/pod-routing=disabled" in event["message"]
    # kube-scheduler tried both of its pods and found no device it may allocate
    for name in ("held", "own-claim"):
        message = cluster.wait_for(
            f"{name} unschedulable", lambda name=name: _unschedulable(cluster, OPTED_OUT, name), 60
        )
        assert "2 cannot allocate all claims" in message, message
    time.sleep(2)  # a late retry would have bound them by now
    for ns, name in ((ROUTED, "cached"), (OPTED_OUT, "held"), (OPTED_OUT, "own-claim")):
        assert not _pod(cluster, ns, name)["spec"].get("nodeName"), f"{ns}/{name} was bound"
    assert kube_scheduler_allocations(cluster) == []
    assert _gauge(mixed.installed) == {}


def test_the_audit_s_gauge_names_an_allocation_another_scheduler_wrote(mixed: Product) -> None:
    cluster = mixed.cluster
    claim = cluster.create(make_claim("forced").namespace(OPTED_OUT).request("gpu", CLASS).obj())
    pod = cluster.create(_claim_pod("forced", OPTED_OUT, "forced"))
    s = next(
        s
        for s in (_get(cluster, f"{RES}/resourceslices") or {}).get("items", [])
        if s["spec"]["driver"] == DRIVER and s["spec"].get("nodeName") == "kwok-node-1"
    )
    pool, device = s["spec"]["pool"]["name"], s["spec"]["devices"][-1]["name"]
    # what another scheduler would write: an allocation on a served device, the claim reserved for its pod
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "gpu",
                        "driver": DRIVER,
                        "pool": pool,
                        "device": device,
                        "shareID": "6d1b9f1e-0a43-4c57-9a3c-3f2b7c1d0e55",
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["kwok-node-1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "forced", "uid": pod["metadata"]["uid"]}],
    }
    status, body = cluster.request("PUT", f"{RES}/namespaces/{OPTED_OUT}/resourceclaims/forced/status", claim)
    assert status == 200, body
    label = (OPTED_OUT, "forced", "forced", f"{DRIVER}/{pool}/{device}")
    gauge = cluster.wait_for("the gauge", lambda: _gauge(mixed.installed) or None, 30)
    assert gauge == {label: 1.0}
    [event] = cluster.wait_for(
        "the audit's Event",
        lambda: _events(cluster, OPTED_OUT, "forced", "DeviceAllocatedByAnotherScheduler"),
        30,
    )
    assert f"{DRIVER}/{pool}/{device}" in event["message"] and "another scheduler" in event["message"]
    # the claim gone, the sample goes
    for path in (
        f"/api/v1/namespaces/{OPTED_OUT}/pods/forced",
        f"{RES}/namespaces/{OPTED_OUT}/resourceclaims/forced",
    ):
        status, body = cluster.request("DELETE", path, {"gracePeriodSeconds": 0})
        assert status in (200, 202), body
    cluster.wait_for("the gauge emptied", lambda: _gauge(mixed.installed) == {}, 30)


def test_negative_control_without_the_rule_kube_scheduler_allocates_a_served_device(mixed: Product) -> None:
    """The check of the first test can fail: with the DeviceTaintRule deleted, kube-scheduler allocates a
    served device both for an extended-resource pod that is not routed and for a pod's own claim."""
    cluster = mixed.cluster
    for rule in (_get(cluster, f"{RES}/devicetaintrules") or {}).get("items", []):
        status, body = cluster.request("DELETE", f"{RES}/devicetaintrules/{rule['metadata']['name']}")
        assert status in (200, 202), body
    cluster.wait_for("no rule", lambda: not (_get(cluster, f"{RES}/devicetaintrules") or {}).get("items"), 30)
    time.sleep(2)  # kube-scheduler's informer sees the deletion (it registers no event for the rule)
    cluster.create(_gpu_pod("after", OPTED_OUT))
    cluster.create(make_claim("own-after").namespace(OPTED_OUT).request("gpu", CLASS).obj())
    cluster.create(_claim_pod("own-after", OPTED_OUT, "own-after"))
    for name in ("after", "own-after"):
        cluster.wait_for(
            f"{name} bound by kube-scheduler",
            lambda name=name: _pod(cluster, OPTED_OUT, name)["spec"].get("nodeName"),
            60,
        )
    found = kube_scheduler_allocations(cluster)
    assert any(f.startswith(f"{OPTED_OUT}/own-after ") for f in found), found
    assert any(f.startswith(f"{OPTED_OUT}/after-extended-resources-") for f in found), found
    gauge = cluster.wait_for(
        "the gauge", lambda: (lambda g: g if len(g) >= 2 else None)(_gauge(mixed.installed)), 30
    )
    assert {pod for (_, pod, _, _) in gauge} >= {"after", "own-after"}, gauge
