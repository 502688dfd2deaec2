"""Placer: predicates, allocation per feasible node, scoring, the choice and the scheduler-style summary."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from allocator.cluster import Cluster
from allocator.placement import Placement, Placer, Strategy, fit_error_message
from resourceapi.core_v1 import Node, Pod, PodStatus
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.names import generate_name
from resourceapi.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice

GATES = FeatureGates.defaults()


def _placer(
    nodes: list[Node],
    slices: list[ResourceSlice],
    classes: list[DeviceClass] | None = None,
    strategy: Strategy = "binpack",
    gates: FeatureGates = GATES,
    running: list[Pod] | None = None,
    naive: bool = False,
    allocated: list[ResourceClaim] | None = None,
) -> Placer:
    classes = classes if classes is not None else [gpu_class()]
    cluster = Cluster(gates, classes, slices, allocated or [])
    resolver = ExtendedResourceResolver(classes, gates)
    return Placer(cluster, gates, resolver, nodes, slices, running or [], strategy, naive=naive)


def _run(placer: Placer, pods: list[Pod]) -> list[Placement]:
    out = []
    for p in pods:
        placement = placer.place(p)
        placer.commit(placement)
        out.append(placement)
    return out


def _devices(p: Placement) -> list[str]:
    return [f"{r.pool}/{r.device}" for a in p.allocation if a.devices for r in (a.devices.results or [])]


def _gpu_pods(n: int, shares: int = 1) -> list[Pod]:
    return [pod(f"p{i}", {GPU_SHARED: shares}) for i in range(n)]


def test_binpack_fills_a_gpu_before_starting_the_next() -> None:
    placer = _placer([node("n1"), node("n2")], [gpu_slice("n1", 2), gpu_slice("n2", 2)])
    placed = _run(placer, _gpu_pods(5))
    assert [_devices(p) for p in placed] == [["n1/gpu-0"]] * 4 + [["n1/gpu-1"]]


def test_binpack_keeps_whole_gpus_free_on_other_nodes() -> None:
    placer = _placer([node("n1"), node("n2")], [gpu_slice("n1", 2), gpu_slice("n2", 2)])
    placed = _run(placer, _gpu_pods(8))
    assert {p.node for p in placed} == {"n1"}


def test_spread_prefers_the_node_with_the_most_capacity_left() -> None:
    placer = _placer([node("n1"), node("n2")], [gpu_slice("n1", 1), gpu_slice("n2", 1)], strategy="spread")
    assert [p.node for p in _run(placer, _gpu_pods(4))] == ["n1", "n2", "n1", "n2"]


def test_ties_go_to_the_smaller_node_name() -> None:
    placer = _placer([node("b"), node("a"), node("c")], [gpu_slice(n, 1) for n in "abc"])
    assert placer.place(_gpu_pods(1)[0]).node == "a"


def test_each_pod_sees_the_allocations_before_it() -> None:
    placer = _placer([node("n1")], [gpu_slice("n1", 1)])
    placed = _run(placer, _gpu_pods(5))
    assert [p.result for p in placed] == ["bound"] * 4 + ["unschedulable"]
    assert placed[4].reason == "0/1 nodes are available: 1 cannot allocate all claims."


def _fabric(shares: int) -> ResourceSlice:
    doc = gpu_slice("fabric", 1, shares).to_api()
    del doc["spec"]["nodeName"]
    doc["spec"]["allNodes"] = True
    return ResourceSlice.model_validate(doc)


def test_a_commit_on_a_device_every_node_sees_reaches_every_node() -> None:
    placer = _placer([node("a"), node("b")], [_fabric(2)])
    placed = _run(placer, _gpu_pods(3))
    assert [(p.result, p.node) for p in placed] == [("bound", "a"), ("bound", "a"), ("unschedulable", None)]
    assert placed[2].reason == "0/2 nodes are available: 2 cannot allocate all claims."


def test_synthesized_claim_carries_the_allocation_and_a_generated_name() -> None:
    placer = _placer([node("n1")], [gpu_slice("n1", 1)])
    placement = _run(placer, [pod("train", {GPU_SHARED: 1})])[0]
    assert placement.claim is not None
    assert re.fullmatch(
        r"train-extended-resources-[bcdfghjklmnpqrstvwxz2456789]{5}", placement.claim.metadata.name
    )
    status = placement.claim.to_api()["status"]
    assert status["reservedFor"] == [{"resource": "pods", "name": "train", "uid": "uid-train"}]
    result = status["allocation"]["devices"]["results"][0]
    assert result["consumedCapacity"] == {"shares": "1"}
    assert placement.extended_status is not None
    assert placement.extended_status.resource_claim_name == placement.claim.metadata.name


def test_commit_uses_a_given_claim_name() -> None:
    placer = _placer([node("n1")], [gpu_slice("n1", 1)])
    placement = placer.place(pod("p", {GPU_SHARED: 1}))
    placer.commit(placement, claim_name="p-extended-resources-xyz12")
    assert placement.claim is not None and placement.claim.metadata.name == "p-extended-resources-xyz12"


def test_unschedulable_reason_counts_each_cause_like_the_scheduler() -> None:
    nodes = [node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]), node("n2"), node("n3")]
    placer = _placer(nodes, [gpu_slice("n1", 1)])
    placement = placer.place(pod("p", {GPU_SHARED: 1}))
    assert placement.result == "unschedulable"
    assert placement.reason == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 cannot allocate all claims."
    )


def test_fit_error_message_sorts_count_and_reason_as_strings() -> None:
    reasons = [["b"]] * 2 + [["a"]] + [["c", "a"]] * 10
    assert fit_error_message(13, reasons) == "0/13 nodes are available: 10 c, 11 a, 2 b."


def test_no_nodes_at_all() -> None:
    assert _placer([], []).place(pod("p")).reason == "no nodes available to schedule pods"


def test_device_plugin_node_serves_the_resource_without_a_claim() -> None:
    placer = _placer([node("dp", {GPU_SHARED: "4"})], [])
    placement = _run(placer, _gpu_pods(1))[0]
    assert (placement.result, placement.node, placement.claim) == ("bound", "dp", None)


def test_device_plugin_capacity_is_fitted_against_pods_on_the_node() -> None:
    running = [pod(f"r{i}", {GPU_SHARED: 1}, nodeName="dp") for i in range(4)]
    placer = _placer([node("dp", {GPU_SHARED: "4"})], [], running=running)
    assert (
        placer.place(_gpu_pods(1)[0]).reason
        == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.shared."
    )


def test_running_pods_count_against_cpu() -> None:
    placer = _placer([node("n1", {"cpu": "2"})], [], running=[pod("r", {"cpu": "1500m"}, nodeName="n1")])
    assert placer.place(pod("p", {"cpu": "1"})).reason == "0/1 nodes are available: 1 Insufficient cpu."


def test_finished_pods_do_not_hold_resources() -> None:
    done = pod("done", {"cpu": "2"}, nodeName="n1")
    done.status = PodStatus(phase="Succeeded")
    placer = _placer([node("n1", {"cpu": "2"})], [], running=[done])
    assert placer.place(pod("p", {"cpu": "1"})).node == "n1"


def test_capacity_gate_off_is_unschedulable_with_an_explanation() -> None:
    gates = GATES.with_overrides(DRAExtendedResourceCapacity=False)
    placer = _placer([node("n1")], [gpu_slice("n1", 1)], gates=gates)
    placement = placer.place(pod("p", {GPU_SHARED: 1}))
    assert placement.result == "unschedulable"
    assert "the DRAExtendedResourceCapacity feature is disabled" in placement.reason
    assert placement.claim is None


def test_fatal_allocation_error_makes_the_pod_error_with_the_first_node_message() -> None:
    gates = GATES.with_overrides(DRAConsumableCapacity=False)
    placer = _placer([node("n2"), node("n1")], [gpu_slice("n1", 1), gpu_slice("n2", 1)], gates=gates)
    placement = placer.place(pod("p", {GPU_SHARED: 1}))
    assert (placement.result, placement.node) == ("error", None)
    assert placement.reason == (
        "claim default/<extended-resources>, request container-0-request-0: has capacity requests, "
        "but the DRAConsumableCapacity feature is disabled"
    )


def test_pod_without_any_dra_resource_is_placed_by_cpu_and_memory() -> None:
    placer = _placer([node("n1", {"cpu": "2"}), node("n2", {"cpu": "4"})], [], strategy="spread")
    assert placer.place(pod("p", {"cpu": "1"})).node == "n2"


def test_pod_claim_is_allocated_with_the_pod() -> None:
    claim = ResourceClaim.model_validate(
        {
            "metadata": {"name": "mine", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com-shared-1",
                                "capacity": {"requests": {"shares": "2"}},
                            },
                        }
                    ]
                }
            },
        }
    )
    placer = _placer([node("n1")], [gpu_slice("n1", 1)])
    p = pod("p", {GPU_SHARED: 1}, resourceClaims=[{"name": "g", "resourceClaimName": "mine"}])
    placement = placer.place(p, [claim])
    placer.commit(placement)
    consumed = [a.to_api()["devices"]["results"][0]["consumedCapacity"] for a in placement.allocation]
    assert consumed == [{"shares": "2"}, {"shares": "1"}]
    assert placement.user_claims[0].status is not None


def test_allocated_claim_pins_the_pod_to_its_node() -> None:
    claim = ResourceClaim.model_validate(
        {
            "metadata": {"name": "shared", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com-shared-1"}}]
                }
            },
            "status": {
                "allocation": {
                    "devices": {"results": []},
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
                        ]
                    },
                }
            },
        }
    )
    placer = _placer([node("n1"), node("n2")], [], allocated=[claim])
    p = pod("p", resourceClaims=[{"name": "g", "resourceClaimName": "shared"}])
    placement = placer.place(p, [claim])
    assert placement.node == "n2"


# --- equivalence with the naive loop ------------------------------------------------------------------------


def _normalized(p: Placement) -> tuple[Any, ...]:
    results = []
    for a in p.allocation:
        doc = a.to_api()
        for r in (doc.get("devices") or {}).get("results") or []:
            r.pop("shareID", None)
        results.append(doc)
    return (p.pod.name, p.result, p.reason, p.node, results)


@st.composite
def _clusters(draw: st.DrawFn) -> tuple[list[Node], list[ResourceSlice], list[Pod]]:
    n_nodes = draw(st.integers(1, 4))
    nodes: list[Node] = []
    slices: list[ResourceSlice] = []
    for i in range(n_nodes):
        name = f"n{i}"
        kind = draw(st.sampled_from(["dra", "dra", "plugin", "tainted", "small"]))
        if kind == "plugin":
            nodes.append(node(name, {GPU_SHARED: str(draw(st.integers(1, 4)))}))
        elif kind == "tainted":
            nodes.append(node(name, taints=[{"key": "t", "effect": "NoSchedule"}]))
            slices.append(gpu_slice(name, draw(st.integers(1, 2)), draw(st.integers(1, 4))))
        elif kind == "small":
            nodes.append(node(name, {"cpu": "2", "pods": "3"}))
            slices.append(gpu_slice(name, draw(st.integers(1, 2)), draw(st.integers(1, 4))))
        else:
            nodes.append(node(name))
            slices.append(gpu_slice(name, draw(st.integers(1, 3)), draw(st.integers(1, 4))))
    if draw(st.booleans()):
        # A network-attached GPU every node sees: a commit on it changes every node's evaluation.
        shared = gpu_slice("fabric", 1, draw(st.integers(1, 4))).to_api()
        del shared["spec"]["nodeName"]
        shared["spec"]["allNodes"] = True
        slices.append(ResourceSlice.model_validate(shared))
    pods = []
    for j in range(draw(st.integers(1, 14))):
        requests: dict[str, Any] = {}
        if draw(st.booleans()):
            requests[GPU_SHARED] = draw(st.integers(1, 2))
        if draw(st.booleans()):
            requests["cpu"] = draw(st.sampled_from(["500m", "1"]))
        tolerate = draw(st.booleans())
        extra: dict[str, Any] = {"tolerations": [{"key": "t", "operator": "Exists"}]} if tolerate else {}
        pods.append(pod(f"p{j}", requests, **extra))
    return nodes, slices, pods


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_clusters(), st.sampled_from(["binpack", "spread"]))
def test_indexed_placement_equals_the_naive_loop(
    cluster: tuple[list[Node], list[ResourceSlice], list[Pod]], strategy: Strategy
) -> None:
    nodes, slices, pods = cluster
    fast = _run(_placer(nodes, slices, strategy=strategy), pods)
    naive = _run(_placer(nodes, slices, strategy=strategy, naive=True), pods)
    assert [_normalized(p) for p in fast] == [_normalized(p) for p in naive]


def test_generated_names_cut_long_prefixes_to_58_characters_as_the_api_server_does() -> None:
    name = generate_name("p" * 70 + "-extended-resources-")
    assert len(name) == 63
    assert name.startswith("p" * 58)
    assert set(name[58:]) <= set("bcdfghjklmnpqrstvwxz2456789")
