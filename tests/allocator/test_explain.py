"""`simulate --explain`'s diagnosis pass (allocator/scheduling/explain.py): why claims fit no device on a
node, per request, on slices shaped like the NVIDIA GPU driver's (driver `gpu.nvidia.com`; attributes
productName, architecture, driverVersion, uuid; capacity memory and shares)."""

from __future__ import annotations

from typing import Any

from allocator.scheduling.explain import NodeDiagnosis, explain_claims, group_by_reason
from allocator.structured.cluster import Cluster, NodeInfo
from localcluster.objects import make_slice
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceClaimStatus, ResourceSlice
from resourceapi.gates import FeatureGates

GATES = FeatureGates.defaults().with_overrides(DRADeviceTaints=True, DRAPartitionableDevices=True)
DRIVER = "gpu.nvidia.com"
NODE = NodeInfo("gpu-node-1", {"kubernetes.io/hostname": "gpu-node-1"})


def gpu(index: int, *, shareable: bool = True, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f"gpu-{index}",
        "attributes": {
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "architecture": {"string": "Hopper"},
            "driverVersion": {"version": "550.54.15"},
            "uuid": {"string": f"GPU-{index:08d}-0000-0000-0000-000000000000"},
        },
        "capacity": {"memory": {"value": "80Gi"}, "shares": {"value": "4"}},
    }
    if shareable:
        out["allowMultipleAllocations"] = True
    if taints:
        out["taints"] = taints
    return out


def node_slice(*devices: dict[str, Any], node: str = NODE.name, **extra: Any) -> ResourceSlice:
    slice_ = make_slice(node, DRIVER).devices(*(devices or map(gpu, range(8)))).spec(**extra)
    return ResourceSlice.model_validate(slice_.obj())


def device_class(*selectors: str, name: str = "gpu") -> DeviceClass:
    exprs = selectors or (f'device.driver == "{DRIVER}"',)
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]}}
    )


def claim(
    name: str = "train",
    capacity: dict[str, str] | None = None,
    *,
    count: int = 1,
    selectors: tuple[str, ...] = (),
    cls: str = "gpu",
    **exactly: Any,
) -> ResourceClaim:
    body: dict[str, Any] = {"deviceClassName": cls, "count": count, **exactly}
    if capacity is not None:
        body["capacity"] = {"requests": capacity}
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": body}]}},
        }
    )


def cluster(*slices: ResourceSlice, classes: tuple[DeviceClass, ...] = ()) -> Cluster:
    return Cluster(GATES, classes or (device_class(),), slices or (node_slice(),))


def fill(c: Cluster, *claims: ResourceClaim) -> None:
    """Allocate and commit each claim on the node, as earlier pods did."""
    for rc in claims:
        alloc = c.allocate(NODE, [rc])
        assert alloc.results is not None, alloc.message
        rc.status = ResourceClaimStatus(allocation=alloc.results[0])
        c.commit(rc, alloc.results[0])


def test_capacity_no_device_publishes_names_the_capacity_and_what_devices_advertise() -> None:
    reasons = explain_claims(cluster(), NODE, [claim(capacity={"shraes": "1"})])
    assert reasons == [
        'claim ml/train, request gpu: no device publishes capacity "shraes" '
        "(devices advertise: memory, shares)"
    ]


def test_amount_above_every_device_says_how_much_and_the_largest() -> None:
    reasons = explain_claims(cluster(), NODE, [claim(capacity={"memory": "90Gi"})])
    assert reasons == ["claim ml/train, request gpu: memory 90Gi > 80Gi on every matching device"]


def _asking_shares_of_devices_holding(asked: str, used: str) -> list[str]:
    """The reasons for a claim of `asked` shares when each of the 8 devices holds a claim of `used`."""
    c = cluster()
    fill(c, *(claim(f"old-{i}", {"shares": used}) for i in range(8)))
    return explain_claims(c, NODE, [claim(capacity={"shares": asked})])


def test_full_devices_say_used_of_total() -> None:
    reasons = _asking_shares_of_devices_holding("1", "4")
    assert reasons == [
        "claim ml/train, request gpu: request shares=1: all 8 matching devices full (4/4 shares used)"
    ]


def test_partly_full_devices_report_the_least_used_one() -> None:
    reasons = _asking_shares_of_devices_holding("2", "3")
    assert reasons == [
        "claim ml/train, request gpu: request shares=2: all 8 matching devices full (3/4 shares used)"
    ]


def test_class_selector_that_matches_nothing_is_named_by_its_number() -> None:
    cls = device_class(
        f'device.driver == "{DRIVER}"', 'device.attributes["gpu.nvidia.com"].architecture == "Blackwell"'
    )
    reasons = explain_claims(cluster(classes=(cls,)), NODE, [claim()])
    assert reasons == [
        "claim ml/train, request gpu: class gpu selector 2 matches no device on this node (8 devices)"
    ]


def test_request_selector_is_told_apart_from_class_selectors() -> None:
    selector = 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A100")'
    reasons = explain_claims(cluster(), NODE, [claim(selectors=(selector,))])
    assert reasons == [
        "claim ml/train, request gpu: request selector 1 matches no device on this node (8 devices)"
    ]


def test_selector_that_excludes_what_the_earlier_ones_match() -> None:
    cls = device_class(
        'device.attributes["gpu.nvidia.com"].uuid.startsWith("GPU-00000000")',
        'device.attributes["gpu.nvidia.com"].uuid.startsWith("GPU-00000001")',
    )
    reasons = explain_claims(cluster(classes=(cls,)), NODE, [claim()])
    assert reasons == [
        "claim ml/train, request gpu: class gpu selector 2 excludes the 1 devices its earlier selectors match"
    ]


def test_dedicated_devices_already_allocated() -> None:
    c = cluster(node_slice(gpu(0, shareable=False), gpu(1, shareable=False)))
    fill(c, claim("old-0"), claim("old-1"))
    reasons = explain_claims(c, NODE, [claim()])
    assert reasons == [
        "claim ml/train, request gpu: all 2 matching devices are already allocated (dedicated)"
    ]


def test_device_taint_not_tolerated_names_the_taint() -> None:
    taint = [{"key": "nvidia.com/ecc-errors", "value": "uncorrectable", "effect": "NoSchedule"}]
    c = cluster(node_slice(gpu(0, taints=taint), gpu(1, taints=taint)))
    reasons = explain_claims(c, NODE, [claim()])
    assert reasons == [
        "claim ml/train, request gpu: all 2 matching devices have a taint not tolerated "
        "(device taint nvidia.com/ecc-errors=uncorrectable:NoSchedule)"
    ]


def test_device_taint_tolerated_by_the_request_is_no_reason() -> None:
    taint = [{"key": "nvidia.com/ecc-errors", "value": "uncorrectable", "effect": "NoSchedule"}]
    c = cluster(node_slice(gpu(0, taints=taint)))
    tolerations = [{"key": "nvidia.com/ecc-errors", "operator": "Exists"}]
    rc = claim(tolerations=tolerations)
    assert c.allocate(NODE, [rc]).fits
    assert explain_claims(c, NODE, [claim(count=2, tolerations=tolerations)]) == [
        "claim ml/train, request gpu: needs 2 devices, 1 of 1 matching device available"
    ]


def test_counters_exhausted_on_partitionable_devices() -> None:
    def part(name: str, memory: str) -> dict[str, Any]:
        return {
            "name": name,
            "attributes": {"productName": {"string": "NVIDIA A100-SXM4-80GB MIG"}},
            "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}],
        }

    pool = {"name": NODE.name, "generation": 1, "resourceSliceCount": 2}
    counters = ResourceSlice.model_validate(
        {
            "metadata": {"name": "gpu-node-1-counters"},
            "spec": {
                "driver": DRIVER,
                "nodeName": NODE.name,
                "pool": pool,
                "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}],
            },
        }
    )
    devices = node_slice(part("gpu-0-whole", "80Gi"), part("gpu-0-mig-3g", "40Gi"), pool=pool)
    c = cluster(counters, devices)
    fill(c, claim("whole", selectors=('device.attributes["gpu.nvidia.com"].productName.endsWith("MIG")',)))
    reasons = explain_claims(c, NODE, [claim()])
    assert reasons == [
        "claim ml/train, request gpu: needs 1 device, 0 of 2 matching devices available (1 already allocated "
        "(dedicated); 1 with counters exhausted (counter set gpu-0: memory needs 40Gi, 0 left))"
    ]


def test_too_few_free_devices_for_the_count() -> None:
    c = cluster()
    fill(c, *(claim(f"old-{i}", {"shares": "4"}) for i in range(6)))
    reasons = explain_claims(c, NODE, [claim(capacity={"shares": "1"}, count=3)])
    assert reasons == [
        "claim ml/train, request gpu: needs 3 devices, 2 of 8 matching devices available "
        "(6 full (4/4 shares used))"
    ]


def test_requests_that_fit_alone_but_not_together() -> None:
    c = cluster(node_slice(gpu(0, shareable=False)))
    reasons = explain_claims(c, NODE, [claim("a"), claim("b")])
    assert len(reasons) == 1
    assert "no combination fits them together" in reasons[0]


def test_unknown_class_is_the_planning_error() -> None:
    reasons = explain_claims(cluster(), NODE, [claim(cls="nope")])
    assert reasons == [
        "claim ml/train, request gpu: could not retrieve device class nope: "
        'deviceclass.resource.k8s.io "nope" not found'
    ]


def test_no_devices_on_the_node() -> None:
    reasons = explain_claims(cluster(node_slice(node="gpu-node-2")), NODE, [claim()])
    assert reasons == ["claim ml/train, request gpu: no devices on this node"]


def test_diagnosis_leaves_the_allocation_unchanged() -> None:
    c = cluster()
    fill(c, *(claim(f"old-{i}", {"shares": "4"}) for i in range(7)))
    before = c.generation
    explain_claims(c, NODE, [claim(capacity={"shares": "1"}, count=2)])
    assert c.generation == before
    alloc = c.allocate(NODE, [claim(capacity={"shares": "1"})])
    assert alloc.results is not None
    assert alloc.results[0].devices is not None
    assert [r.device for r in alloc.results[0].devices.results or []] == ["gpu-7"]


def test_reasons_are_grouped_and_counted_across_nodes() -> None:
    lines = group_by_reason(
        [
            NodeDiagnosis("a", ("node taint x:NoSchedule not tolerated",)),
            NodeDiagnosis("b", ("memory 90Gi > 80Gi on every matching device",)),
            NodeDiagnosis("c", ("memory 90Gi > 80Gi on every matching device",)),
        ]
    )
    assert lines == [
        "on 2 nodes: memory 90Gi > 80Gi on every matching device (nodes: b, c)",
        "on 1 node: node taint x:NoSchedule not tolerated (nodes: a)",
    ]


def test_many_nodes_are_counted_and_only_a_few_named() -> None:
    lines = group_by_reason(NodeDiagnosis(f"n{i}", ("full",)) for i in range(5))
    assert lines == ["on 5 nodes: full (nodes: n0, n1, n2, +2 more)"]


def test_unrequested_capacity_without_default_is_named_as_taking_it_all() -> None:
    c = cluster()
    fill(c, *(claim(f"old-{i}", {"shares": "1"}) for i in range(8)))
    reasons = explain_claims(c, NODE, [claim(capacity={"shares": "1"})])
    assert reasons == [
        "claim ml/train, request gpu: request shares=1: all 8 matching devices full "
        "(80Gi/80Gi memory used; memory not requested, so each allocation takes 80Gi)"
    ]


def test_amount_the_request_policy_refuses_is_named() -> None:
    valid = {"value": "80Gi", "requestPolicy": {"validValues": ["10Gi", "20Gi", "40Gi"]}}
    device = gpu(0)
    device["capacity"]["memory"] = valid
    reasons = explain_claims(cluster(node_slice(device)), NODE, [claim(capacity={"memory": "50Gi"})])
    assert reasons == [
        "claim ml/train, request gpu: memory=50Gi is not allowed by the requestPolicy of any matching device"
    ]


def test_amount_above_the_device_is_reported_before_its_policy() -> None:
    ranged = {"value": "4", "requestPolicy": {"validRange": {"min": "1", "max": "4", "step": "1"}}}
    device = gpu(0)
    device["capacity"]["shares"] = ranged
    reasons = explain_claims(cluster(node_slice(device)), NODE, [claim(capacity={"shares": "5"})])
    assert reasons == ["claim ml/train, request gpu: shares 5 > 4 on every matching device"]
