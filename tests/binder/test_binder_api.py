"""The binder against the kube-apiserver test double over real HTTPS: the bind sequence, every field the
kubelet reads, conflicts and lost answers, unschedulable pods, crash recovery at each step, the routing
audit."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from support.binder_harness import (
    assert_kubelet_view,
    bound,
    check_invariants,
    events,
    extended_claims,
    pods,
    running_binder,
    seed_cluster,
    successful_bindings,
    wait_for,
)
from support.gpu_cluster import RESOURCE, device_class, gpu_slice, node, pod

from binder.controller import STEPS, Stopped
from localcluster.install import opted_in_namespace


def _one_pod_on_one_node(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(pod("web-0"))


def _seed_web_pods(kube_api: Any, count: int) -> None:
    """Pods web-0, web-1, ... asking for one share each."""
    for i in range(count):
        kube_api.seed(pod(f"web-{i}"))


def _bound_with_one_claim(kube_api: Any, what: str) -> None:
    """Run the binder until the pod is bound and one extended claim is left (`what`), then check the kubelet
    view and the invariants."""
    with running_binder(kube_api):
        wait_for("bound", lambda: bound(kube_api))
        wait_for(what, lambda: len(extended_claims(kube_api)) == 1)
    assert_kubelet_view(kube_api, bound(kube_api)[0])
    check_invariants(kube_api)


def _assert_one_claim_and_the_kubelet_view(kube_api: Any) -> None:
    """The bound pod has one extended claim and the kubelet sees its allocation."""
    assert len(extended_claims(kube_api)) == 1
    assert_kubelet_view(kube_api, bound(kube_api)[0])


def test_pods_are_bound_with_a_share_each(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=2, gpus=1, shares=4)
    _seed_web_pods(kube_api, 6)
    with running_binder(kube_api):
        wait_for("6 pods bound", lambda: len(bound(kube_api)) == 6)
    for p in bound(kube_api):
        assert_kubelet_view(kube_api, p)
    placed = sorted(p["spec"]["nodeName"] for p in bound(kube_api))
    assert placed == ["gpu-node-1"] * 4 + ["gpu-node-2"] * 2  # binpack: fill the first GPU
    assert len(events(kube_api, "Scheduled")) == 6
    check_invariants(kube_api)


def test_the_writes_follow_upstreams_order(kube_api: Any) -> None:
    _one_pod_on_one_node(kube_api)
    kube_api.clear_requests()
    with running_binder(kube_api):
        wait_for("bound", lambda: bound(kube_api))
    writes = [
        (r.verb, r.resource, r.subresource)
        for r in kube_api.requests
        if r.verb in ("create", "update", "patch", "delete") and r.resource != "events"
    ]
    assert writes == [
        ("create", "resourceclaims.resource.k8s.io", ""),
        ("update", "resourceclaims.resource.k8s.io", "status"),
        ("patch", "pods", "status"),
        ("create", "pods", "binding"),
    ]


def test_annotation_carrier_is_honored(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1, carrier="annotation")
    kube_api.seed(pod("web-0"))
    with running_binder(kube_api):
        wait_for("bound", lambda: bound(kube_api))
    assert_kubelet_view(kube_api, bound(kube_api)[0])


def test_pods_of_other_schedulers_are_not_touched(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(pod("other", scheduler="default-scheduler"))
    kube_api.seed(pod("mine"))
    with running_binder(kube_api, audit_routing=False):
        wait_for("bound", lambda: bound(kube_api))
    assert [p["metadata"]["name"] for p in bound(kube_api)] == ["mine"]


# --- conflicts and lost answers -----------------------------------------------------------------------------


def test_conflict_on_the_claim_status_write_is_retried_after_a_get(kube_api: Any) -> None:
    _one_pod_on_one_node(kube_api)
    fault = kube_api.faults.fail("update", "resourceclaims", 409, subresource="status", times=2)
    with running_binder(kube_api) as binder:
        wait_for("bound", lambda: bound(kube_api))
        assert binder.metrics.conflicts.labels("update-claim-status")._value.get() == 2
    assert fault.fired == 2
    _assert_one_claim_and_the_kubelet_view(kube_api)
    check_invariants(kube_api)


def test_lost_answer_of_the_status_write_is_recognized_as_our_own(kube_api: Any) -> None:
    _one_pod_on_one_node(kube_api)
    kube_api.faults.fail("update", "resourceclaims", 503, subresource="status", after=True)
    with running_binder(kube_api):
        wait_for("bound", lambda: bound(kube_api))
    _assert_one_claim_and_the_kubelet_view(kube_api)


@pytest.mark.parametrize("code", [409, 500])
def test_failed_pod_status_patch_deletes_the_claim_and_retries(kube_api: Any, code: int) -> None:
    _one_pod_on_one_node(kube_api)
    kube_api.faults.fail("patch", "pods", code, subresource="status", times=1 if code == 409 else 5)
    _bound_with_one_claim(kube_api, "one claim left")


def test_lost_answer_of_the_binding_is_recognized(kube_api: Any) -> None:
    _one_pod_on_one_node(kube_api)
    kube_api.faults.fail("create", "pods", 503, subresource="binding", after=True)
    with running_binder(kube_api):
        wait_for("bound", lambda: bound(kube_api))
        wait_for("Scheduled event", lambda: events(kube_api, "Scheduled"))
    _assert_one_claim_and_the_kubelet_view(kube_api)


def test_lost_answer_of_the_claim_create_never_leaves_two_claims(kube_api: Any) -> None:
    _one_pod_on_one_node(kube_api)
    kube_api.faults.fail("create", "resourceclaims", 503, after=True)
    _bound_with_one_claim(kube_api, "one claim")


def test_refused_binding_is_retried_with_the_claim_the_pod_already_names(kube_api: Any) -> None:
    _one_pod_on_one_node(kube_api)
    kube_api.faults.fail("create", "pods", 403, subresource="binding", times=1)
    with running_binder(kube_api) as binder:
        wait_for("bound", lambda: bound(kube_api))
        wait_for("resumed", lambda: binder.metrics.recovered._value.get() == 1)
    assert len(kube_api.requests_for("create", "resourceclaims")) == 1
    [failed] = [e for e in events(kube_api, "FailedScheduling") if "binding rejected" in e["message"]]
    assert failed["type"] == "Warning"
    check_invariants(kube_api)


# --- unschedulable pods -------------------------------------------------------------------------------------


def test_unschedulable_pod_gets_event_and_condition_and_binds_when_capacity_frees(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1, gpus=1, shares=2)
    _seed_web_pods(kube_api, 3)
    with running_binder(kube_api):
        wait_for("2 bound", lambda: len(bound(kube_api)) == 2)
        waiting = wait_for(
            "condition",
            lambda: [
                p
                for p in pods(kube_api)
                if any(
                    c.get("reason") == "Unschedulable" for c in p.get("status", {}).get("conditions") or []
                )
            ],
        )
        assert [p["metadata"]["name"] for p in waiting] == ["web-2"]
        [cond] = [c for c in waiting[0]["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert cond["status"] == "False"
        assert cond["message"] == "0/1 nodes are available: 1 cannot allocate all claims."
        [event] = wait_for("event", lambda: events(kube_api, "FailedScheduling"))
        # upstream's summary is the Event's first line (and the condition's whole message); the rest names
        # the requirement (binder/diagnosis.py)
        assert event["type"] == "Warning" and event["message"].split("\n")[0] == cond["message"]
        assert "the one matching device is full (2/2 shares used)" in event["message"]
        assert event["involvedObject"]["name"] == "web-2"
        # web-0 goes away: the double's garbage collector and resourceclaim controller release its claim
        victim = kube_api.get("pods", "web-0")
        claim_name = victim["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
        kube_api.delete("pods", "web-0", grace_period_seconds=0)
        wait_for("claim released", lambda: kube_api.get("resourceclaims", claim_name) is None)
        wait_for("web-2 bound", lambda: kube_api.get("pods", "web-2")["spec"].get("nodeName"))
    check_invariants(kube_api)


def test_unschedulable_pods_leave_the_binder_idle(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1, gpus=1, shares=1)
    kube_api.seed(pod("holder"))
    for i in range(50):
        kube_api.seed(pod(f"wait-{i:02d}"))
    with running_binder(kube_api) as binder:
        wait_for("50 conditions", lambda: len(events(kube_api, "FailedScheduling")) >= 50, timeout=30)
        wait_for("queue settled", lambda: binder.queue.counts()["unschedulable"] == 50)
        attempts = binder.metrics.attempts.labels("unschedulable")._value.get()
        kube_api.clear_requests()
        import time

        time.sleep(2.0)
        assert binder.metrics.attempts.labels("unschedulable")._value.get() == attempts
        writes = [r for r in kube_api.requests if r.verb not in ("get", "list", "watch")]
        assert writes == []


def test_pod_with_unsupported_features_is_reported(kube_api: Any) -> None:
    """A pod naming the binder itself but using an in-tree disk (VolumeRestrictions' disk conflicts, not
    modelled): never placed, reported."""
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(pod("web-0", volumes=[{"name": "data", "gcePersistentDisk": {"pdName": "data"}}]))
    with running_binder(kube_api):
        [event] = wait_for("event", lambda: events(kube_api, "FailedScheduling"))
    assert "gcePersistentDisk volume data" in event["message"]
    assert not bound(kube_api)


def _anti_affinity(app: str) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def _seed_running_then_anti_affine(kube_api: Any) -> None:
    """A running pod `old-0` labelled app=rdma on gpu-node-1 (no GPU), and `rdma-0`, anti-affine to it."""
    running = pod("old-0", labels={"app": "rdma"}, scheduler="default-scheduler")
    running["spec"]["nodeName"] = "gpu-node-1"
    running["spec"]["containers"][0]["resources"] = {}
    kube_api.seed(running)
    kube_api.seed(pod("rdma-0", labels={"app": "rdma"}, affinity=_anti_affinity("rdma")))


def test_required_anti_affinity_spreads_a_statefulset_over_nodes(kube_api: Any) -> None:
    """InterPodAffinity (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go): replicas that must
    not share a hostname land on distinct nodes, although one node's GPU has shares for all of them; the
    replica for which no node is left is unschedulable, with the filter's reason."""
    seed_cluster(kube_api, nodes=3, gpus=1, shares=4)
    for i in range(4):
        kube_api.seed(pod(f"rdma-{i}", labels={"app": "rdma"}, affinity=_anti_affinity("rdma")))
    with running_binder(kube_api):
        wait_for("3 bound", lambda: len(bound(kube_api)) == 3)
        [event] = wait_for("event", lambda: events(kube_api, "FailedScheduling"))
    assert len({p["spec"]["nodeName"] for p in bound(kube_api)}) == 3
    assert "didn't match pod anti-affinity rules" in event["message"]
    check_invariants(kube_api)


def test_anti_affinity_counts_pods_already_running(kube_api: Any) -> None:
    """Existing pods count: a running pod with the label keeps the new replica off its node."""
    seed_cluster(kube_api, nodes=2, gpus=1, shares=4)
    _seed_running_then_anti_affine(kube_api)
    with running_binder(kube_api):
        [placed] = wait_for(
            "bound", lambda: [p for p in bound(kube_api) if p["metadata"]["name"] == "rdma-0"]
        )
    assert placed["spec"]["nodeName"] == "gpu-node-2"


def test_a_label_change_on_a_running_pod_retries_an_anti_affine_pod(kube_api: Any) -> None:
    """An assigned pod's label update is an event for InterPodAffinity's queueing hint: the pod it kept off
    the only node is tried again, and placed."""
    seed_cluster(kube_api, nodes=1, gpus=1, shares=4)
    _seed_running_then_anti_affine(kube_api)
    with running_binder(kube_api):
        wait_for("event", lambda: events(kube_api, "FailedScheduling"))
        assert not [p for p in bound(kube_api) if p["metadata"]["name"] == "rdma-0"]
        current = kube_api.get("pods", "old-0")
        assert current is not None
        current["metadata"]["labels"] = {"app": "retired"}
        kube_api.update(current)
        wait_for("bound", lambda: [p for p in bound(kube_api) if p["metadata"]["name"] == "rdma-0"])


def test_topology_spread_do_not_schedule_is_honoured(kube_api: Any) -> None:
    """PodTopologySpread (pkg/scheduler/framework/plugins/podtopologyspread/filtering.go), maxSkew 1 over
    zones: four pods on two zones go two and two, although the first zone's node could hold all four."""
    kube_api.seed(device_class())
    for name, zone in (("gpu-node-1", "a"), ("gpu-node-2", "b")):
        n = node(name)
        n["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone
        kube_api.seed(n)
        kube_api.seed(gpu_slice(name, gpus=1, shares=4))
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    for i in range(4):
        kube_api.seed(pod(f"web-{i}", labels={"app": "web"}, topologySpreadConstraints=spread))
    with running_binder(kube_api, strategy="binpack"):
        wait_for("4 bound", lambda: len(bound(kube_api)) == 4)
    nodes = Counter(p["spec"]["nodeName"] for p in bound(kube_api))
    assert nodes == Counter({"gpu-node-1": 2, "gpu-node-2": 2})
    check_invariants(kube_api)


def test_a_gated_pod_waits_silently_and_is_placed_once_its_gates_are_removed(kube_api: Any) -> None:
    """SchedulingGates (pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go) keeps a gated pod
    out of the queue: no claim, no Event, no condition write of ours; it holds no capacity, so the ungated pod
    gets the only share; once its gates are gone it is placed."""
    seed_cluster(kube_api, nodes=1, gpus=1, shares=1)
    kube_api.seed(pod("gated", schedulingGates=[{"name": "example.com/quota"}]))
    kube_api.seed(pod("free"))
    with running_binder(kube_api) as binder:
        wait_for("free bound", lambda: [p["metadata"]["name"] for p in bound(kube_api)] == ["free"])
        wait_for("settled", lambda: binder.settled(binder.pending_keys()))
        assert events(kube_api, "FailedScheduling") == []
        [gated] = [p for p in pods(kube_api) if p["metadata"]["name"] == "gated"]
        [cond] = gated["status"]["conditions"]
        assert cond["reason"] == "SchedulingGated"
        assert len(extended_claims(kube_api)) == 1
        kube_api.delete("pods", "free", grace_period_seconds=0)
        current = kube_api.get("pods", "gated")
        assert current is not None
        del current["spec"]["schedulingGates"]
        kube_api.update(current)
        wait_for("gated bound", lambda: [p["metadata"]["name"] for p in bound(kube_api)] == ["gated"])
    check_invariants(kube_api)


# --- crash recovery -----------------------------------------------------------------------------------------


class Kill:
    """A crash hook: kills the binder (as a process kill would: no cleanup) at `step` for the first pod."""

    def __init__(self, step: str) -> None:
        self.step = step
        self.binder: Any = None
        self.fired = 0

    def __call__(self, step: str, pod_obj: dict[str, Any]) -> None:
        if step == self.step and not self.fired:
            self.fired += 1
            self.binder.kill()
            raise Stopped()


@pytest.mark.parametrize("step", STEPS)
def test_restart_after_a_kill_at_each_step(kube_api: Any, step: str) -> None:
    seed_cluster(kube_api, nodes=1, gpus=1, shares=4)
    _seed_web_pods(kube_api, 3)
    kill = Kill(step)
    with running_binder(kube_api, hook=kill, bind_workers=1) as first:
        kill.binder = first
        wait_for("killed", lambda: kill.fired)
    with running_binder(kube_api):
        wait_for("3 bound", lambda: len(bound(kube_api)) == 3)
        wait_for("3 claims", lambda: len(extended_claims(kube_api)) == 3)
    for p in bound(kube_api):
        assert_kubelet_view(kube_api, p)
    check_invariants(kube_api)


def test_resumes_an_allocated_claim_instead_of_allocating_again(kube_api: Any) -> None:
    _one_pod_on_one_node(kube_api)
    kill = Kill("claim-allocated")
    with running_binder(kube_api, hook=kill) as first:
        kill.binder = first
        wait_for("killed", lambda: kill.fired)
    [before] = extended_claims(kube_api)
    with running_binder(kube_api) as second:
        wait_for("bound", lambda: bound(kube_api))
        wait_for("resumed", lambda: second.metrics.recovered._value.get() == 1)
    [after] = extended_claims(kube_api)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert successful_bindings(kube_api)[("default", "web-0")] == 1


# --- the routing audit --------------------------------------------------------------------------------------


def test_pods_that_missed_routing_get_a_warning_event(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(opted_in_namespace("inference"))
    kube_api.seed(pod("missed", "inference", scheduler=None))
    kube_api.seed(pod("not-opted-in", "default", scheduler=None))
    with running_binder(kube_api) as binder:
        [event] = wait_for("event", lambda: events(kube_api, "NotRoutedToCapacityBinder", "inference"))
        assert binder.metrics.not_routed._value.get() == 1
    assert event["type"] == "Warning" and RESOURCE in event["message"]
    assert not events(kube_api, "NotRoutedToCapacityBinder", "default")


def test_pods_naming_another_scheduler_get_a_warning_event(kube_api: Any) -> None:
    """Volcano or JupyterHub's user-scheduler serves the resource without the class's capacity (issue 38)."""
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(opted_in_namespace("inference"))
    kube_api.seed(pod("gang", "inference", scheduler="volcano"))
    kube_api.seed(pod("notebook", "default", scheduler="user-scheduler"))
    with running_binder(kube_api) as binder:
        [event] = wait_for(
            "event", lambda: events(kube_api, "OtherSchedulerForCapacityResource", "inference")
        )
        assert binder.metrics.other_scheduler._value.get() == 1
        assert binder.metrics.not_routed._value.get() == 0
    assert event["type"] == "Warning" and "'volcano'" in event["message"] and RESOURCE in event["message"]
    assert not events(kube_api, "OtherSchedulerForCapacityResource", "default")  # not opted in


@pytest.mark.parametrize("carrier", ["field", "annotation"])
def test_an_invalid_capacity_that_escaped_admission_is_re_validated_not_shared_without_limit(
    kube_api: Any, carrier: str
) -> None:
    """Issue 28: `shares: "0"` stored past the webhook (its mutating half unreachable) once let the binder put
    every pod on one device. The binder re-validates the field and the annotation: no pod is bound, and the
    FailedScheduling event names the field."""
    dc = device_class(carrier=carrier)
    if carrier == "field":
        dc["spec"]["extendedResourceCapacityRequests"] = {"requests": {"shares": "0"}}
    else:
        dc["metadata"]["annotations"] = {
            "dra-capacity.io/extended-resource-capacity-requests": '{"requests":{"shares":"0"}}'
        }
    kube_api.seed(dc)
    kube_api.seed(node("gpu-node-1"))
    kube_api.seed(gpu_slice("gpu-node-1", gpus=1, shares=4))
    _seed_web_pods(kube_api, 3)
    with running_binder(kube_api):
        [event, *_] = wait_for("event", lambda: events(kube_api, "FailedScheduling"))
    assert 'Invalid value: "0": must be greater than zero' in event["message"]
    assert bound(kube_api) == [] and extended_claims(kube_api) == []


# --- whole-device classes (--route-whole-device-classes) ----------------------------------------------------


def _whole_device_slice(name: str, gpus: int) -> dict[str, Any]:
    s = gpu_slice(name, gpus=gpus)
    for d in s["spec"]["devices"]:
        d.pop("allowMultipleAllocations", None)
        d.get("capacity", {}).pop("shares", None)
    return s


def test_pods_of_a_class_without_capacity_requests_get_a_whole_device_each(kube_api: Any) -> None:
    kube_api.seed(device_class(carrier="none"))
    kube_api.seed(node("gpu-node-1"))
    kube_api.seed(_whole_device_slice("gpu-node-1", gpus=2))
    _seed_web_pods(kube_api, 3)
    with running_binder(kube_api, route_whole_devices=True):
        wait_for("2 pods bound", lambda: len(bound(kube_api)) == 2)
        wait_for("the third reported", lambda: events(kube_api, "FailedScheduling"))
    claims = extended_claims(kube_api)
    devices = [r["device"] for c in claims for r in c["status"]["allocation"]["devices"]["results"]]
    assert sorted(devices) == ["gpu-0", "gpu-1"]
    check_invariants(kube_api)


@pytest.mark.parametrize("whole", [False, True])
def test_the_audit_reports_whole_device_pods_only_with_the_flag(kube_api: Any, whole: bool) -> None:
    kube_api.seed(device_class(carrier="none"))
    kube_api.seed(opted_in_namespace("inference"))
    kube_api.seed(pod("missed", "inference", scheduler=None))
    kube_api.seed(pod("ours", "inference"))  # a pod the binder places, so the audit has surely run once
    kube_api.seed(node("gpu-node-1"))
    kube_api.seed(_whole_device_slice("gpu-node-1", gpus=1))
    with running_binder(kube_api, route_whole_devices=whole) as binder:
        wait_for("ours bound", lambda: bound(kube_api, "inference"))
        if whole:
            [event] = wait_for("event", lambda: events(kube_api, "NotRoutedToCapacityBinder", "inference"))
            assert "--route-whole-device-classes" in event["message"]
        assert binder.metrics.not_routed._value.get() == (1 if whole else 0)
