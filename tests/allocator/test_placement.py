"""Placer: predicates, allocation per feasible node, scoring, the choice and the scheduler-style summary."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.placing import GATES, _devices, _gpu_pods, _placer, _run
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from allocator.scheduling.placement import (
    Placement,
    PlacementResult,
    Strategy,
    fit_error_message,
    num_feasible_nodes_to_find,
)
from localcluster.objects import make_claim
from resourceapi.api.core_v1 import Node, Pod, PodStatus
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.machinery.names import generate_name


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
    assert [p.result for p in placed] == [PlacementResult.BOUND] * 4 + [PlacementResult.UNSCHEDULABLE]
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
        make_claim("mine").request("gpu", "gpu.nvidia.com-shared-1", {"shares": "2"}).obj()
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


# --- binpack keeps whole GPUs and nodes free; spread does the opposite --------------------------------------


def _shares_per_node(placed: list[Placement]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in placed:
        assert p.result is PlacementResult.BOUND and p.node is not None
        out[p.node] = out.get(p.node, 0) + len(_devices(p))
    return out


def test_binpack_fills_whole_nodes_and_leaves_the_others_untouched() -> None:
    k = 2
    names = [f"n{i}" for i in range(5)]
    placer = _placer([node(n) for n in names], [gpu_slice(n, 8, 4) for n in names])
    placed = _run(placer, _gpu_pods(4 * 8 * k))
    assert _shares_per_node(placed) == {"n0": 32, "n1": 32}


def test_spread_touches_every_node_before_a_second_share_anywhere() -> None:
    names = [f"n{i}" for i in range(5)]
    placer = _placer([node(n) for n in names], [gpu_slice(n, 8, 4) for n in names], strategy="spread")
    placed = _run(placer, _gpu_pods(5 * 8))
    assert _shares_per_node(placed) == dict.fromkeys(names, 8)
    assert {len({d for p in placed if p.node == n for d in _devices(p)}) for n in names} == {8}  # every GPU


def _held_share(node_name: str, device: str) -> ResourceClaim:
    """An allocated claim holding one share of `device` on `node_name`."""
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": f"held-{node_name}-{device}", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com-shared-1"}}]
                }
            },
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "request": "gpu",
                                "driver": "gpu.nvidia.com",
                                "pool": node_name,
                                "device": device,
                                "shareID": "0a1b2c3d-0000-4000-8000-000000000001",
                                "consumedCapacity": {"shares": "1"},
                            }
                        ]
                    }
                }
            },
        }
    )


def test_binpack_tops_up_a_partly_used_gpu_before_a_fresh_one() -> None:
    placer = _placer([node("n1")], [gpu_slice("n1", 2)], allocated=[_held_share("n1", "gpu-1")])
    assert [_devices(p) for p in _run(placer, _gpu_pods(4))] == [["n1/gpu-1"]] * 3 + [["n1/gpu-0"]]


def test_spread_opens_a_fresh_gpu_before_sharing_a_used_one() -> None:
    placer = _placer(
        [node("n1")], [gpu_slice("n1", 2)], allocated=[_held_share("n1", "gpu-1")], strategy="spread"
    )
    assert [_devices(p) for p in _run(placer, _gpu_pods(3))] == [["n1/gpu-0"], ["n1/gpu-0"], ["n1/gpu-1"]]


def test_worked_example_of_the_simulate_guide() -> None:
    """docs/simulate.md "Binpack and spread": 3 nodes x 2 GPUs x 4 shares, node-b/gpu-1 holds a share."""
    names = ["node-a", "node-b", "node-c"]
    want = {
        "binpack": ["b/1", "b/1", "b/1", "b/0", "b/0", "b/0", "b/0", "a/0", "a/0", "a/0"],
        "spread": ["a/0", "c/0", "a/1", "b/0", "c/1", "a/0", "b/0", "c/0", "a/1", "b/1"],
    }
    for strategy, expected in want.items():
        placer = _placer(
            [node(n) for n in names],
            [gpu_slice(n, 2, 4) for n in names],
            strategy=strategy,  # type: ignore[arg-type]
            allocated=[_held_share("node-b", "gpu-1")],
        )
        got = [
            d.replace("node-", "").replace("gpu-", "")
            for p in _run(placer, _gpu_pods(10))
            for d in _devices(p)
        ]
        assert got == expected, strategy


# --- kube-scheduler's node sampling -------------------------------------------------------------------------


def test_num_feasible_nodes_to_find_follows_kube_scheduler() -> None:
    cases = {(0, 50): 50, (10, 99): 99, (100, 100): 100, (10, 1000): 100, (30, 500): 150}
    cases |= {(0, 100): 100, (0, 2000): 680, (0, 5000): 500, (0, 6000): 300, (100, 2000): 2000}
    assert {k: num_feasible_nodes_to_find(*k) for k in cases} == cases


def test_sampled_search_starts_where_the_previous_pod_stopped() -> None:
    names = [f"n{i:03d}" for i in range(200)]
    placer = _placer([node(n) for n in names], [gpu_slice(n, 1) for n in names], percentage=50)
    placed = _run(placer, _gpu_pods(3))
    # 100 feasible nodes per pod: n000-n099, then n100-n199, then n000-n099 again (n000 is the fullest)
    assert [p.node for p in placed] == ["n000", "n100", "n000"]


def test_every_node_is_examined_by_default() -> None:
    names = [f"n{i:03d}" for i in range(200)]
    placer = _placer([node(n) for n in names], [gpu_slice(n, 1) for n in names])
    assert [p.node for p in _run(placer, _gpu_pods(3))] == ["n000"] * 3


def test_sampling_still_reports_every_node_when_nothing_fits() -> None:
    names = [f"n{i:03d}" for i in range(150)]
    placer = _placer([node(n) for n in names], [], percentage=0)
    placement = placer.place(_gpu_pods(1)[0])
    assert placement.reason == "0/150 nodes are available: 150 cannot allocate all claims."


def test_a_percentage_outside_0_to_100_is_refused() -> None:
    with pytest.raises(ValueError, match="between 0 and 100"):
        _placer([node("n1")], [], percentage=101)


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


# Pods with their own claims: prioritized lists, constraints, counters (partitionable devices), selectors that
# fail at runtime on some devices; several pods share a claim spec (one template), so the shape cache is used.
PART_DRIVER = "part.example.com"
PART_CLASS = "part"
CLAIM_SPECS: list[dict[str, Any]] = [
    {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com-shared-1"}}]},
    {
        "requests": [
            {
                "name": "g",
                "exactly": {
                    "deviceClassName": "gpu.nvidia.com-shared-1",
                    "count": 2,
                    "capacity": {"requests": {"shares": "2"}},
                },
            }
        ]
    },
    {
        "requests": [
            {
                "name": "g",
                "firstAvailable": [
                    {"name": "two-parts", "deviceClassName": PART_CLASS, "count": 2},
                    {"name": "share", "deviceClassName": "gpu.nvidia.com-shared-1"},
                ],
            }
        ]
    },
    {
        "requests": [
            {"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com-shared-1"}},
            {"name": "b", "exactly": {"deviceClassName": "gpu.nvidia.com-shared-1"}},
        ],
        "constraints": [{"distinctAttribute": "gpu.nvidia.com/uuid"}],
    },
    {
        "requests": [
            {"name": "a", "exactly": {"deviceClassName": PART_CLASS}},
            {"name": "b", "exactly": {"deviceClassName": PART_CLASS}},
        ],
        "constraints": [{"matchAttribute": f"{PART_DRIVER}/group"}],
    },
    {
        "requests": [
            {
                "name": "g",
                "exactly": {
                    "deviceClassName": PART_CLASS,
                    "selectors": [{"cel": {"expression": f'device.attributes["{PART_DRIVER}"].rare == 1'}}],
                },
            }
        ]
    },
]


def _part_slices(node_name: str, sizes: list[int], total: int, rare: bool) -> list[ResourceSlice]:
    """Dedicated devices sharing one counter set (published in a slice of its own, as the API wants): a
    device of size s consumes s of `total`."""
    devices: list[dict[str, Any]] = []
    for i, size in enumerate(sizes):
        attributes: dict[str, Any] = {"group": {"string": "ab"[i % 2]}}
        if rare and i == 0:
            attributes["rare"] = {"int": 1}
        devices.append(
            {
                "name": f"part-{i}",
                "attributes": attributes,
                "consumesCounters": [{"counterSet": "mem", "counters": {"mem": {"value": str(size)}}}],
            }
        )
    pool = {"name": f"{node_name}-parts", "generation": 1, "resourceSliceCount": 2}
    specs = [
        {"devices": devices},
        {"sharedCounters": [{"name": "mem", "counters": {"mem": {"value": str(total)}}}]},
    ]
    return [
        ResourceSlice.model_validate(
            {
                "metadata": {"name": f"{node_name}-{PART_DRIVER}-{i}"},
                "spec": {"driver": PART_DRIVER, "nodeName": node_name, "pool": pool, **spec},
            }
        )
        for i, spec in enumerate(specs)
    ]


def _part_class() -> DeviceClass:
    return DeviceClass.model_validate(
        {
            "metadata": {"name": PART_CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{PART_DRIVER}"'}}]},
        }
    )


ClaimWorld = tuple[list[Node], list[ResourceSlice], list[Pod], dict[str, list[ResourceClaim]]]


@st.composite
def _claim_clusters(draw: st.DrawFn, min_nodes: int = 1, max_nodes: int = 4) -> ClaimWorld:
    n_nodes = draw(st.integers(min_nodes, max_nodes))
    nodes: list[Node] = []
    slices: list[ResourceSlice] = []
    for i in range(n_nodes):
        name = f"n{i:03d}"
        kind = draw(st.sampled_from(["gpu", "part", "both", "tainted", "empty"]))
        nodes.append(node(name, taints=[{"key": "t", "effect": "NoSchedule"}] if kind == "tainted" else None))
        if kind in ("gpu", "both", "tainted"):
            slices.append(gpu_slice(name, draw(st.integers(1, 3)), draw(st.integers(1, 4))))
        if kind in ("part", "both"):
            sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
            slices += _part_slices(name, sizes, draw(st.integers(1, 5)), draw(st.booleans()))
    pods: list[Pod] = []
    claims: dict[str, list[ResourceClaim]] = {}
    for j in range(draw(st.integers(1, 12))):
        name = f"p{j}"
        spec = draw(st.sampled_from(range(len(CLAIM_SPECS))))
        tolerate = draw(st.booleans())
        extra: dict[str, Any] = {"tolerations": [{"key": "t", "operator": "Exists"}]} if tolerate else {}
        requests: dict[str, Any] = {GPU_SHARED: 1} if draw(st.booleans()) else {}
        pods.append(
            pod(name, requests, resourceClaims=[{"name": "c", "resourceClaimName": f"{name}-c"}], **extra)
        )
        claims[name] = [
            ResourceClaim.model_validate(
                {
                    "metadata": {"name": f"{name}-c", "namespace": "default"},
                    "spec": {"devices": CLAIM_SPECS[spec]},
                }
            )
        ]
    return nodes, slices, pods, claims


def _claim_run(world: ClaimWorld, strategy: Strategy, naive: bool, percentage: int = 100) -> list[Any]:
    nodes, slices, pods, claims = world
    placer = _placer(
        nodes,
        slices,
        classes=[gpu_class(), _part_class()],
        strategy=strategy,
        naive=naive,
        percentage=percentage,
    )
    fresh = {k: [c.model_copy(deep=True) for c in v] for k, v in claims.items()}
    return [_normalized(p) for p in _run(placer, pods, fresh)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_claim_clusters(), st.sampled_from(["binpack", "spread"]))
def test_indexed_placement_of_pods_with_claims_equals_the_naive_loop(
    world: ClaimWorld, strategy: Strategy
) -> None:
    assert _claim_run(world, strategy, naive=False) == _claim_run(world, strategy, naive=True)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(
    _claim_clusters(min_nodes=101, max_nodes=130),
    st.sampled_from([0, 1, 60]),
    st.sampled_from(["binpack", "spread"]),
)
def test_sampled_placement_equals_the_naive_loop_with_the_same_cutoff(
    world: ClaimWorld, percentage: int, strategy: Strategy
) -> None:
    assert _claim_run(world, strategy, False, percentage) == _claim_run(world, strategy, True, percentage)


def test_a_selector_error_on_some_node_names_this_pods_claim() -> None:
    """The shape's evaluations are shared by pods with equal claim specs; the message names each pod's own."""
    slices = _part_slices("n1", [1], 4, rare=False)  # no `rare` attribute: the selector fails at runtime
    claims = {
        name: [
            ResourceClaim.model_validate(
                {
                    "metadata": {"name": f"{name}-c", "namespace": "default"},
                    "spec": {"devices": CLAIM_SPECS[5]},
                }
            )
        ]
        for name in ("p0", "p1")
    }
    pods = [pod(n, resourceClaims=[{"name": "c", "resourceClaimName": f"{n}-c"}]) for n in ("p0", "p1")]
    placer = _placer([node("n1")], slices, classes=[gpu_class(), _part_class()])
    placed = _run(placer, pods, claims)
    assert [p.result for p in placed] == [PlacementResult.ERROR] * 2
    assert [p.reason.split(":")[0] for p in placed] == ["claim default/p0-c", "claim default/p1-c"]


def test_many_commits_on_a_device_every_node_sees_keep_placing_as_the_naive_loop() -> None:
    """Every commit makes every node stale (their heap entries too), so the heap is rebuilt now and then."""
    nodes = [node(n) for n in ("a", "b", "c")]
    slices = [_fabric(64), *(gpu_slice(n, 1, 2) for n in ("a", "b", "c"))]
    pods = _gpu_pods(70)
    fast = [_normalized(p) for p in _run(_placer(nodes, slices), pods)]
    naive = [_normalized(p) for p in _run(_placer(nodes, slices, naive=True), pods)]
    assert fast == naive
    assert [p[1] for p in fast].count(PlacementResult.BOUND) == 70
