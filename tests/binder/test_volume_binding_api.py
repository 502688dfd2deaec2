"""VolumeBinding's Reserve, PreBind and Unreserve in the binder, against the kube-apiserver test double: PVs
and claims written as upstream's BindPodVolumes writes them, the pod bound only once its claims are bound, the
bounded wait that holds no bind thread, and the rollback. The double runs no PV controller: each test plays
its part (`pv_controller_binds`, a stand-in labelled as one) where the scenario needs it."""

from __future__ import annotations

from typing import Any

from support.binder_harness import bound, events, running_binder, seed_cluster, wait_for
from support.gpu_cluster import pod

from localcluster.objects import ephemeral_volume, make_pv, make_pvc, make_storage_class, pvc_volume

LOCAL = "local"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def pv_controller_binds(api: Any, claim: str, pv_name: str) -> None:
    """Stand-in for kube-controller-manager's PV controller (not in the double): the claim bound to the PV
    the binder chose or a provisioner made, both phases Bound."""
    pv = api.get("persistentvolumes", pv_name, namespace="")
    api.update({**pv, "status": {"phase": "Bound"}}, subresource="status")
    pvc = api.get("persistentvolumeclaims", claim)
    pvc["spec"]["volumeName"] = pv_name
    pvc["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
    pvc = api.update(pvc)
    api.update({**pvc, "status": {"phase": "Bound"}}, subresource="status")


def _pvc_pod(name: str, claim: str) -> dict[str, Any]:
    return pod(name, volumes=[pvc_volume("cache", claim)])


def _seed_local_pv_and_pvc_pod(api: Any, pv: str, node: str) -> None:
    """The WaitForFirstConsumer class, a local PV on `node`, PVC `cache` and pod `web-0` that mounts it."""
    api.seed(make_storage_class(LOCAL))
    api.seed(make_pv(pv).storage_class(LOCAL).local_to(node).obj())
    api.seed(make_pvc("cache").storage_class(LOCAL).obj())
    api.seed(_pvc_pod("web-0", "cache"))


def _claim_ref(api: Any, pv: str) -> dict[str, Any] | None:
    obj = api.get("persistentvolumes", pv, namespace="")
    return (obj or {}).get("spec", {}).get("claimRef")


def test_wait_for_first_consumer_binds_the_local_pv_then_the_pod(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=2)
    _seed_local_pv_and_pvc_pod(kube_api, "pv-2", "gpu-node-2")
    with running_binder(kube_api):
        ref = wait_for("claimRef written", lambda: _claim_ref(kube_api, "pv-2"))
        assert (ref["namespace"], ref["name"]) == ("default", "cache")
        assert ref["uid"] == kube_api.get("persistentvolumeclaims", "cache")["metadata"]["uid"]
        pv = kube_api.get("persistentvolumes", "pv-2", namespace="")
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert bound(kube_api) == []  # PreBind waits for the PV controller
        pv_controller_binds(kube_api, "cache", "pv-2")
        [placed] = wait_for("pod bound", lambda: bound(kube_api))
    assert placed["spec"]["nodeName"] == "gpu-node-2"


def test_dynamic_provisioning_sets_selected_node_and_waits_for_the_provisioner(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=2)
    kube_api.seed(make_storage_class("fast", provisioner="csi.example.com"))
    kube_api.seed(make_pvc("cache").storage_class("fast").obj())
    kube_api.seed(_pvc_pod("web-0", "cache"))
    with running_binder(kube_api) as binder:

        def selected() -> str | None:
            pvc = kube_api.get("persistentvolumeclaims", "cache")
            return (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)

        node = wait_for("selected-node set", selected)
        # the annotation is visible a moment before the bind thread hands the pod to the poller
        wait_for("web-0 waiting", lambda: binder.volumes.pending() == {("default", "web-0")})
        # the provisioner's part: a PV on that node, then the PV controller binds it
        kube_api.seed(
            make_pv("pvc-1").storage_class("fast").node_affinity("kubernetes.io/hostname", node).obj()
        )
        pv_controller_binds(kube_api, "cache", "pvc-1")
        [placed] = wait_for("pod bound", lambda: bound(kube_api))
    assert placed["spec"]["nodeName"] == node


def test_the_wait_holds_no_bind_thread(kube_api: Any) -> None:
    """One bind thread: while the PVC pod waits for its claim, another pod is bound."""
    seed_cluster(kube_api, nodes=1, gpus=1, shares=2)
    _seed_local_pv_and_pvc_pod(kube_api, "pv-1", "gpu-node-1")
    with running_binder(kube_api, bind_workers=1) as binder:
        wait_for("claimRef written", lambda: _claim_ref(kube_api, "pv-1"))
        wait_for("web-0 waiting", lambda: binder.volumes.pending() == {("default", "web-0")})
        kube_api.seed(pod("web-1"))
        [other] = wait_for("the other pod bound", lambda: bound(kube_api))
        assert other["metadata"]["name"] == "web-1"
        assert binder.volumes.pending() == {("default", "web-0")}


def test_the_wait_is_bounded_and_rolls_back_the_share_and_the_volumes(kube_api: Any) -> None:
    """Nobody binds the claim: after bindTimeoutSeconds the attempt fails with upstream's text, and the
    volume choice and the share are released (a pod needing the only share is bound once the PVC pod can no
    longer be placed)."""
    seed_cluster(kube_api, nodes=1, gpus=1, shares=1)
    _seed_local_pv_and_pvc_pod(kube_api, "pv-1", "gpu-node-1")
    with running_binder(kube_api, bind_timeout_seconds=1.0) as binder:
        wait_for("claimRef written", lambda: _claim_ref(kube_api, "pv-1"))
        [event] = wait_for(
            "timeout reported",
            lambda: [e for e in events(kube_api, "FailedScheduling") if "deadline" in e["message"]],
            timeout=10,
        )
        assert event["message"] == (
            'binding rejected: running PreBind plugin "VolumeBinding": '
            "binding volumes: context deadline exceeded"
        )
        kube_api.delete("persistentvolumeclaims", "cache")  # its retries now stop at PreFilter
        kube_api.seed(pod("web-1"))
        [other] = wait_for("the share is free again", lambda: bound(kube_api))
        assert other["metadata"]["name"] == "web-1"
        with binder.cond:
            assert binder.volumes.pending() == set()
            assert ("default", "web-0") not in binder.ctx.assume.inflight
            assert "pv-1" not in binder.volumes.assumed_pvs


def test_a_pod_rejected_while_a_failed_bind_held_the_share_is_tried_again(kube_api: Any) -> None:
    """Upstream's handleBindingCycleError: forgetting the assumed pod is an AssignedPod/Delete event. web-0
    holds a share while PreBind waits for its volumes; its PVC is deleted, and the failure waits for the one
    bind thread (held by hold-0's Binding). web-1, rejected again meanwhile, is brought back by the forget
    alone: no informer event follows it."""
    seed_cluster(kube_api, nodes=1, gpus=1, shares=2)
    _seed_local_pv_and_pvc_pod(kube_api, "pv-1", "gpu-node-1")
    web0, web1 = ("default", "web-0"), ("default", "web-1")
    with running_binder(kube_api, bind_workers=1) as binder:
        wait_for("claimRef written", lambda: _claim_ref(kube_api, "pv-1"))
        held = kube_api.faults.hold("create", "pods", subresource="binding", name="hold-0")
        kube_api.seed(pod("hold-0"))
        wait_for("hold-0's Binding sent", held.arrived.is_set)
        kube_api.seed(pod("web-1"))
        wait_for("web-1 rejected", lambda: binder.queue.state(web1) == "unschedulable")
        first = binder.queue.attempts(web1)
        kube_api.delete("persistentvolumeclaims", "cache")  # web-0's wait fails; retries stop at PreFilter
        wait_for(  # the storage event moved web-1; it is rejected again while web-0 is still assumed
            "web-1 rejected again",
            lambda: binder.queue.attempts(web1) > first and binder.queue.state(web1) == "unschedulable",
        )
        with binder.cond:
            assert web0 in binder.ctx.assume.inflight, "precondition: web-0 is not forgotten yet"
        held.release.set()
        wait_for("web-1 bound after the forget", lambda: len(bound(kube_api)) == 2)
    assert {p["metadata"]["name"] for p in bound(kube_api)} == {"hold-0", "web-1"}


def test_a_generic_ephemeral_volume_waits_for_its_claim(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(make_storage_class(LOCAL))
    kube_api.seed(make_pv("pv-1").storage_class(LOCAL).local_to("gpu-node-1").obj())
    created = kube_api.seed(pod("web-0", volumes=[ephemeral_volume("scratch", LOCAL)]))
    with running_binder(kube_api):
        [event] = wait_for("waiting reported", lambda: events(kube_api, "FailedScheduling"))
        assert (
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "web-0-scratch"'
            in (event["message"])
        )
        # the ephemeral-volume controller's part (kube-controller-manager; not in the double)
        uid = created["metadata"]["uid"]
        kube_api.seed(make_pvc("web-0-scratch").storage_class(LOCAL).owner("Pod", "web-0", uid).obj())
        wait_for("claimRef written", lambda: _claim_ref(kube_api, "pv-1"))
        pv_controller_binds(kube_api, "web-0-scratch", "pv-1")
        [placed] = wait_for("pod bound", lambda: bound(kube_api))
    assert placed["spec"]["nodeName"] == "gpu-node-1"


def test_an_unbound_immediate_claim_leaves_the_pod_pending_with_upstreams_message(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=2)
    kube_api.seed(make_storage_class("fast", provisioner="csi.example.com", mode="Immediate"))
    kube_api.seed(make_pvc("cache").storage_class("fast").obj())
    kube_api.seed(_pvc_pod("web-0", "cache"))
    with running_binder(kube_api):
        [event] = wait_for("reported", lambda: events(kube_api, "FailedScheduling"))
    assert event["message"].startswith(
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    )
    assert bound(kube_api) == []


def test_a_conflict_on_the_claim_write_reverts_and_the_pod_is_tried_again(kube_api: Any) -> None:
    """kube-controller-manager's PV controller writes the claim too: a 409 on bindAPIUpdate's PVC update
    fails PreBind, Unreserve reverts the assumed claim, and the retry writes it at the newest version
    (upstream's binder.go `bindAPIUpdate`, `revertAssumedPVCs`)."""
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(make_storage_class("fast", provisioner="csi.example.com"))
    kube_api.seed(make_pvc("cache").storage_class("fast").obj())
    kube_api.seed(_pvc_pod("web-0", "cache"))
    conflict = kube_api.faults.fail("update", "persistentvolumeclaims", 409, name="cache")
    with running_binder(kube_api) as binder:
        wait_for("the conflict reported", lambda: events(kube_api, "FailedScheduling"), timeout=10)
        assert conflict.fired == 1

        def selected() -> str | None:
            pvc = kube_api.get("persistentvolumeclaims", "cache")
            return (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)

        node = wait_for("selected-node set on the retry", selected, timeout=30)
        wait_for("web-0 waiting", lambda: binder.volumes.pending() == {("default", "web-0")}, timeout=30)
        kube_api.seed(
            make_pv("pvc-1").storage_class("fast").node_affinity("kubernetes.io/hostname", node).obj()
        )
        pv_controller_binds(kube_api, "cache", "pvc-1")
        [placed] = wait_for("pod bound", lambda: bound(kube_api), timeout=30)
    assert placed["spec"]["nodeName"] == node
