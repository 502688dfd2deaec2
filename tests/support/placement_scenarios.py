"""Placement scenarios run on the real control plane (kube-scheduler places the pods) and through
`dra-capacity simulate` on the same objects (tests/e2e/test_placement_vs_kube_scheduler.py).

Each scenario is isolated by its tag: its own nodes (label `diff-scenario=<tag>`, and every pod selects it),
driver `<tag>.example.com`, DeviceClasses `<tag>-...` and namespace `<tag>`. Pods are created one at a time,
each once the previous one is decided, so kube-scheduler sees them in the order `simulate` places them.
`unique` marks a scenario where only one placement is valid for every pod: there nodes and devices must agree
as well as outcomes. `expect` is either every release's outcome or, where releases differ, each release's
own (`Scenario.expected`): a release it does not name does not run the scenario, because kube-scheduler's
outcome there is not the one stated (or not determined at all). A scenario whose releases differ, run on the
older one, is the negative control showing that it discriminates. The shapes follow upstream's scheduler_perf
DRA templates (test/integration/scheduler_perf/dra/templates/*.yaml, named in `source`) and the project's own
tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
LABEL = "diff-scenario"
KWOK = ("kwok.x-k8s.io/node", "fake")


@dataclass
class Scenario:
    tag: str
    title: str
    source: str
    nodes: list[Obj]
    objects: list[Obj]  # DeviceClasses, ResourceSlices, ResourceClaimTemplates, ResourceClaims
    pods: list[Obj]
    unique: bool = True
    # bound? per pod (what kube-scheduler must do, too): on every release, or keyed by release ("1.38")
    expect: list[bool] | dict[str, list[bool]] = field(default_factory=list)
    # claim name -> the status written once it exists: an allocation kube-scheduler did not make, which
    # `simulate` is given as it is served
    committed: dict[str, Obj] = field(default_factory=dict)
    observed: list[str] = field(default_factory=list)  # kube-scheduler's PodScheduled=False messages

    def expected(self, release: str) -> list[bool] | None:
        """The outcomes on `release`; None if the scenario states none there (it is not run)."""
        if isinstance(self.expect, dict):
            return self.expect.get(release)
        return self.expect


class Builder:
    """Names and objects of one scenario."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.driver = f"{tag}.example.com"
        self.count = 0

    def node(
        self,
        i: int,
        labels: dict[str, str] | None = None,
        taints: list[Obj] | None = None,
        extra: dict[str, str] | None = None,
    ) -> Obj:
        name = f"{self.tag}-node-{i}"
        resources = {"cpu": "32", "memory": "256Gi", "pods": "110", **(extra or {})}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {KWOK[0]: KWOK[1], "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {"kubernetes.io/hostname": name, "type": "kwok", LABEL: self.tag, **(labels or {})},
            },
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": dict(resources), "allocatable": dict(resources)},
        }

    def node_name(self, i: int) -> str:
        return f"{self.tag}-node-{i}"

    def device_class(self, suffix: str = "gpu", ext: str | None = None, cel: str | None = None) -> Obj:
        selectors = [{"cel": {"expression": f'device.driver == "{self.driver}"'}}]
        if cel:
            selectors.append({"cel": {"expression": cel}})
        spec: Obj = {"selectors": selectors}
        if ext:
            spec["extendedResourceName"] = ext
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": f"{self.tag}-{suffix}"},
            "spec": spec,
        }

    def cls(self, suffix: str = "gpu") -> str:
        return f"{self.tag}-{suffix}"

    def slice(
        self,
        node: int | None,
        devices: list[Obj],
        *,
        pool: str | None = None,
        name: str | None = None,
        count: int = 1,
        counters: list[Obj] | None = None,
        node_selector: Obj | None = None,
        all_nodes: bool = False,
    ) -> Obj:
        spec: Obj = {
            "driver": self.driver,
            "pool": {"name": pool or f"pool-{node}", "generation": 1, "resourceSliceCount": count},
        }
        if node is not None:
            spec["nodeName"] = self.node_name(node)
        elif node_selector is not None:
            spec["nodeSelector"] = node_selector
        elif all_nodes:
            spec["allNodes"] = True
        if devices:
            spec["devices"] = devices
        if counters:
            spec["sharedCounters"] = counters
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{self.tag}-{name or f'slice-{node}'}"},
            "spec": spec,
        }

    def template(self, name: str, requests: list[Obj], constraints: list[Obj] | None = None) -> Obj:
        devices: Obj = {"requests": requests}
        if constraints:
            devices["constraints"] = constraints
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": self.tag},
            "spec": {"spec": {"devices": devices}},
        }

    def claim(self, name: str, requests: list[Obj], constraints: list[Obj] | None = None) -> Obj:
        devices: Obj = {"requests": requests}
        if constraints:
            devices["constraints"] = constraints
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": self.tag},
            "spec": {"devices": devices},
        }

    def pod(
        self,
        *,
        templates: list[str] = (),  # type: ignore[assignment]
        claims: list[str] = (),  # type: ignore[assignment]
        limits: dict[str, str] | None = None,
        tolerations: list[Obj] | None = None,
        affinity: Obj | None = None,
    ) -> Obj:
        name = f"p{self.count:02d}"
        self.count += 1
        container: Obj = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
        spec: Obj = {
            "containers": [container],
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {LABEL: self.tag},
        }
        refs = [{"name": f"t{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)]
        refs += [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
        if refs:
            spec["resourceClaims"] = refs
            container["resources"] = {"claims": [{"name": r["name"]} for r in refs]}
        if limits:
            container.setdefault("resources", {})["limits"] = limits
        if tolerations:
            spec["tolerations"] = tolerations
        if affinity:
            spec["affinity"] = affinity
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.tag},
            "spec": spec,
        }


def attrs(**values: Any) -> Obj:
    out: Obj = {}
    for k, v in values.items():
        key = k.replace("__", "/").replace("_", ".") if "__" in k else k
        if isinstance(v, bool):
            out[key] = {"bool": v}
        elif isinstance(v, int):
            out[key] = {"int": v}
        else:
            out[key] = {"string": str(v)}
    return out


def device(
    name: str,
    attributes: Obj | None = None,
    capacity: Obj | None = None,
    *,
    multi: bool = False,
    consumes: list[Obj] | None = None,
    taints: list[Obj] | None = None,
) -> Obj:
    d: Obj = {"name": name}
    if attributes:
        d["attributes"] = attributes
    if capacity:
        d["capacity"] = capacity
    if multi:
        d["allowMultipleAllocations"] = True
    if consumes:
        d["consumesCounters"] = consumes
    if taints:
        d["taints"] = taints
    return d


def exactly(cls: str, name: str = "req-0", count: int | None = None, **extra: Any) -> Obj:
    spec: Obj = {"deviceClassName": cls, **extra}
    if count is not None:
        spec["count"] = count
    return {"name": name, "exactly": spec}


def gpus(n: int, prefix: str = "gpu", **attributes: Any) -> list[Obj]:
    return [device(f"{prefix}-{i}", attrs(index=i, **attributes)) for i in range(n)]


# ---- the scenarios -----------------------------------------------------------------------------------------


def claim_template_basic() -> Scenario:
    b = Builder("d01")
    return Scenario(
        b.tag,
        "a claim template asking for one device; two devices, three pods",
        "templates/resourceclaimtemplate.yaml, resourceslice-basic-devices.yaml",
        [b.node(0)],
        [b.device_class(), b.slice(0, gpus(2)), b.template("one", [exactly(b.cls())])],
        [b.pod(templates=["one"]) for _ in range(3)],
        unique=False,
        expect=[True, True, False],
    )


def shared_claim() -> Scenario:
    b = Builder("d02")
    return Scenario(
        b.tag,
        "one ResourceClaim shared by two pods, one device",
        "templates/pod-with-claim-ref.yaml, resourceclaim.yaml",
        [b.node(0)],
        [b.device_class(), b.slice(0, gpus(1)), b.claim("shared", [exactly(b.cls())])],
        [b.pod(claims=["shared"]), b.pod(claims=["shared"])],
        expect=[True, True],
    )


def match_attribute_two_devices() -> Scenario:
    b = Builder("d03")
    n0 = [device(f"gpu-{i}", attrs(**{"dra.example.com/slice": i})) for i in range(2)]
    n1 = [device(f"gpu-{i}", attrs(**{"dra.example.com/slice": 7})) for i in range(2)]
    return Scenario(
        b.tag,
        "two devices with matchAttribute: only the node whose devices share the attribute fits",
        "templates/resourceclaimtemplate-for-two-devices.yaml",
        [b.node(0), b.node(1)],
        [
            b.device_class(),
            b.slice(0, n0),
            b.slice(1, n1),
            b.template(
                "two",
                [exactly(b.cls(), count=2)],
                [{"requests": ["req-0"], "matchAttribute": "dra.example.com/slice"}],
            ),
        ],
        [b.pod(templates=["two"]), b.pod(templates=["two"])],
        expect=[True, False],
    )


def cel_selector() -> Scenario:
    b = Builder("d04")
    devices = [
        device("small", attrs(model="a10"), {"memory": {"value": "24Gi"}}),
        device("big", attrs(model="a100"), {"memory": {"value": "80Gi"}}),
    ]
    sel = [{"cel": {"expression": f'device.capacity["{b.driver}"].memory.compareTo(quantity("40Gi")) >= 0'}}]
    return Scenario(
        b.tag,
        "a CEL selector on capacity picks the one big device",
        "templates/resourceclaimtemplate-with-selector.yaml",
        [b.node(0)],
        [b.device_class(), b.slice(0, devices), b.template("big", [exactly(b.cls(), selectors=sel)])],
        [b.pod(templates=["big"]), b.pod(templates=["big"])],
        expect=[True, False],
    )


def missing_class() -> Scenario:
    b = Builder("d05")
    return Scenario(
        b.tag,
        "a claim naming a DeviceClass that does not exist",
        "templates/deviceclass-no-devices.yaml (no such class)",
        [b.node(0)],
        [b.device_class(), b.slice(0, gpus(1)), b.template("none", [exactly("d05-no-such-class")])],
        [b.pod(templates=["none"])],
        expect=[False],
    )


def first_available_skips_missing_class() -> Scenario:
    b = Builder("d06")
    req = {
        "name": "req-0",
        "firstAvailable": [
            {"name": "sub-0", "deviceClassName": "d06-no-such-class"},
            {"name": "sub-1", "deviceClassName": b.cls()},
        ],
    }
    return Scenario(
        b.tag,
        "prioritized list: a subrequest naming a missing class makes the claim unschedulable, although the "
        "next one could be satisfied (the allocator looks every class up before it searches)",
        "templates/resourceclaimtemplate-first-available.yaml",
        [b.node(0)],
        [b.device_class(), b.slice(0, gpus(1)), b.template("fa", [req])],
        [b.pod(templates=["fa"]), b.pod(templates=["fa"])],
        expect=[False, False],
    )


def first_available_skips_a_class_without_devices() -> Scenario:
    b = Builder("d25")
    req = {
        "name": "req-0",
        "firstAvailable": [
            {"name": "sub-0", "deviceClassName": b.cls("none")},
            {"name": "sub-1", "deviceClassName": b.cls()},
        ],
    }
    return Scenario(
        b.tag,
        "prioritized list: the first subrequest's class matches no device, the second one is used",
        "templates/deviceclass-no-devices.yaml, resourceclaimtemplate-first-available.yaml",
        [b.node(0)],
        [
            b.device_class(),
            b.device_class("none", cel="false"),
            b.slice(0, gpus(1)),
            b.template("fa", [req]),
        ],
        [b.pod(templates=["fa"]), b.pod(templates=["fa"])],
        expect=[True, False],
    )


def first_available_falls_back_to_smaller() -> Scenario:
    b = Builder("d07")
    req = {
        "name": "req-0",
        "firstAvailable": [
            {"name": "two", "deviceClassName": b.cls(), "count": 2},
            {"name": "one", "deviceClassName": b.cls(), "count": 1},
        ],
    }
    return Scenario(
        b.tag,
        "prioritized list: two devices preferred, one accepted; three devices, three pods",
        "templates/resourceclaimtemplate-first-available.yaml (counts)",
        [b.node(0)],
        [b.device_class(), b.slice(0, gpus(3)), b.template("fa", [req])],
        [b.pod(templates=["fa"]) for _ in range(3)],
        unique=False,
        expect=[True, True, False],
    )


def extended_resource_explicit() -> Scenario:
    b = Builder("d08")
    return Scenario(
        b.tag,
        "KEP-5004: extendedResourceName, a pod asking for 2 of 2 devices, then one more",
        "templates/deviceclass-extended-resource.yaml, pod-with-extended-resource.yaml",
        [b.node(0)],
        [b.device_class(ext="d08.example.com/gpu"), b.slice(0, gpus(2))],
        [b.pod(limits={"d08.example.com/gpu": "2"}), b.pod(limits={"d08.example.com/gpu": "1"})],
        expect=[True, False],
    )


def extended_resource_implicit() -> Scenario:
    b = Builder("d09")
    name = f"deviceclass.resource.kubernetes.io/{b.cls()}"
    return Scenario(
        b.tag,
        "KEP-5004: the implicit deviceclass.resource.kubernetes.io/<class> name",
        "templates/deviceclass-implicit-extended-resource.yaml, "
        "pod-with-implicit-extended-resource-mod25.yaml",
        [b.node(0)],
        [b.device_class(), b.slice(0, gpus(1))],
        [b.pod(limits={name: "1"}), b.pod(limits={name: "1"})],
        expect=[True, False],
    )


def extended_resource_device_plugin_node() -> Scenario:
    b = Builder("d10")
    res = "d10.example.com/gpu"
    return Scenario(
        b.tag,
        "KEP-5004: one node serves the name by device plugin (allocatable), the other by DRA",
        "templates/pod-with-extended-resource.yaml, node-with-dra-test-driver.yaml",
        [b.node(0, extra={res: "1"}), b.node(1)],
        [b.device_class(ext=res), b.slice(1, gpus(1))],
        [b.pod(limits={res: "1"}) for _ in range(3)],
        unique=False,
        expect=[True, True, False],
    )


def consumable_capacity() -> Scenario:
    b = Builder("d11")
    dev = device(
        "shared",
        capacity={
            "memory": {"value": "80Gi", "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi"}}}
        },
        multi=True,
    )
    return Scenario(
        b.tag,
        "consumable capacity: 30Gi of an 80Gi shareable device, three pods",
        "templates/resourceslice-consumablecapacity.yaml, resourceclaimtemplate-consumablecapacity.yaml",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, [dev]),
            b.template("mem", [exactly(b.cls(), capacity={"requests": {"memory": "30Gi"}})]),
        ],
        [b.pod(templates=["mem"]) for _ in range(3)],
        expect=[True, True, False],
    )


def consumable_capacity_step() -> Scenario:
    b = Builder("d12")
    policy = {"default": "16Gi", "validRange": {"min": "16Gi", "step": "16Gi"}}
    dev = device("shared", capacity={"memory": {"value": "40Gi", "requestPolicy": policy}}, multi=True)
    return Scenario(
        b.tag,
        "consumable capacity: 10Gi rounded up to the 16Gi step, 40Gi fits two",
        "templates/resourceslice-consumablecapacity.yaml (requestPolicy)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, [dev]),
            b.template("mem", [exactly(b.cls(), capacity={"requests": {"memory": "10Gi"}})]),
        ],
        [b.pod(templates=["mem"]) for _ in range(3)],
        expect=[True, True, False],
    )


def consumable_capacity_two_requests() -> Scenario:
    b = Builder("d13")
    dev = device(
        "shared",
        capacity={
            "memory": {"value": "80Gi", "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi"}}}
        },
        multi=True,
    )
    mem = {"requests": {"memory": "10Gi"}}
    return Scenario(
        b.tag,
        "consumable capacity: two 10Gi requests per claim on one 80Gi device, five pods",
        "templates/resourceclaimtemplate-consumablecapacity.yaml (req-0, req-1)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, [dev]),
            b.template(
                "two", [exactly(b.cls(), "req-0", capacity=mem), exactly(b.cls(), "req-1", capacity=mem)]
            ),
        ],
        [b.pod(templates=["two"]) for _ in range(5)],
        expect=[True, True, True, True, False],
    )


def _partitionable(b: Builder) -> list[Obj]:
    counters = [{"name": "gpu-0-counters", "counters": {"memory": {"value": "8Gi"}}}]

    def part(name: str, mem: str) -> Obj:
        return device(
            name,
            attrs(size=mem),
            {"memory": {"value": mem}},
            consumes=[{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": mem}}}],
        )

    return [
        b.slice(0, [], name="counters", pool="pool-0", count=2, counters=counters),
        b.slice(0, [part("whole", "8Gi"), part("half-0", "4Gi"), part("half-1", "4Gi")], count=2),
    ]


def partitionable_whole_then_half() -> Scenario:
    b = Builder("d14")
    sel = [{"cel": {"expression": f'device.attributes["{b.driver}"].size == "8Gi"'}}]
    return Scenario(
        b.tag,
        "partitionable devices: the whole GPU takes the counter set, a half no longer fits",
        "templates/resourceslice-partitionable-countersets.yaml, resourceslice-partitionable-devices.yaml",
        [b.node(0)],
        [
            b.device_class(),
            *_partitionable(b),
            b.template("whole", [exactly(b.cls(), selectors=sel)]),
            b.template("any", [exactly(b.cls())]),
        ],
        [b.pod(templates=["whole"]), b.pod(templates=["any"])],
        expect=[True, False],
    )


def partitionable_halves_then_whole() -> Scenario:
    b = Builder("d15")
    half = [{"cel": {"expression": f'device.attributes["{b.driver}"].size == "4Gi"'}}]
    whole = [{"cel": {"expression": f'device.attributes["{b.driver}"].size == "8Gi"'}}]
    return Scenario(
        b.tag,
        "partitionable devices: two halves fit, then the whole GPU does not",
        "templates/resourceslice-partitionable-countersets.yaml, resourceclaim-partitionable.yaml",
        [b.node(0)],
        [
            b.device_class(),
            *_partitionable(b),
            b.template("half", [exactly(b.cls(), selectors=half)]),
            b.template("whole", [exactly(b.cls(), selectors=whole)]),
        ],
        [b.pod(templates=["half"]), b.pod(templates=["half"]), b.pod(templates=["whole"])],
        unique=False,
        expect=[True, True, False],
    )


def distinct_attribute() -> Scenario:
    b = Builder("d16")
    cap = {"shares": {"value": "2", "requestPolicy": {"default": "1", "validRange": {"min": "1"}}}}
    devices = [device(f"gpu-{i}", attrs(uuid=f"u{i}"), cap, multi=True) for i in range(2)]
    return Scenario(
        b.tag,
        "distinctAttribute: two requests of one claim on different shareable devices",
        "project table: tests/allocator (consumable capacity constraints)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, devices),
            b.template(
                "apart",
                [exactly(b.cls(), "a"), exactly(b.cls(), "b")],
                [{"requests": ["a", "b"], "distinctAttribute": f"{b.driver}/uuid"}],
            ),
        ],
        [b.pod(templates=["apart"]) for _ in range(3)],
        expect=[True, True, False],
    )


def node_taint() -> Scenario:
    b = Builder("d17")
    taint = [{"key": "example.com/dedicated", "value": "x", "effect": "NoSchedule"}]
    tol = [{"key": "example.com/dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    return Scenario(
        b.tag,
        "node taint: the untolerating pod goes to the untainted node, the tolerating one to the other",
        "project table: allocator/scheduling predicates (TaintToleration)",
        [b.node(0, taints=taint), b.node(1)],
        [b.device_class(), b.slice(0, gpus(1)), b.slice(1, gpus(1)), b.template("one", [exactly(b.cls())])],
        [b.pod(templates=["one"]), b.pod(templates=["one"]), b.pod(templates=["one"], tolerations=tol)],
        expect=[True, False, True],
    )


def node_affinity() -> Scenario:
    b = Builder("d18")
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    return Scenario(
        b.tag,
        "required node affinity: only the zone-b node, whose single device then runs out",
        "project table: allocator/scheduling predicates (NodeAffinity)",
        [b.node(0, labels={"zone": "a"}), b.node(1, labels={"zone": "b"})],
        [b.device_class(), b.slice(0, gpus(1)), b.slice(1, gpus(1)), b.template("one", [exactly(b.cls())])],
        [b.pod(templates=["one"], affinity=aff), b.pod(templates=["one"], affinity=aff)],
        expect=[True, False],
    )


def device_taints() -> Scenario:
    b = Builder("d19")
    taint = [{"key": "example.com/taint", "value": "bad", "effect": "NoSchedule"}]
    devices = [device("gpu-0", attrs(index=0), taints=taint), device("gpu-1", attrs(index=1))]
    tol = [{"key": "example.com/taint", "operator": "Exists"}]
    return Scenario(
        b.tag,
        "device taints: the tainted device is skipped, then only a tolerating request gets it",
        "templates/resourceclaimtemplate-toleration.yaml (devicetaints)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, devices),
            b.template("plain", [exactly(b.cls())]),
            b.template("tolerant", [exactly(b.cls(), tolerations=tol)]),
        ],
        [b.pod(templates=["plain"]), b.pod(templates=["plain"]), b.pod(templates=["tolerant"])],
        expect=[True, False, True],
    )


def allocation_mode_all() -> Scenario:
    b = Builder("d20")
    return Scenario(
        b.tag,
        "allocationMode All: every matching device of the node, then nothing is left",
        "templates/resourceclaimtemplate.yaml (allocationMode: All)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, gpus(3)),
            b.template("all", [exactly(b.cls(), allocationMode="All")]),
            b.template("one", [exactly(b.cls())]),
        ],
        [b.pod(templates=["all"]), b.pod(templates=["one"])],
        expect=[True, False],
    )


def network_attached_slice() -> Scenario:
    b = Builder("d21")
    selector = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
    }
    return Scenario(
        b.tag,
        "a slice with a nodeSelector: its device is reachable only from the labelled node",
        "templates/resourceslice-partitionable.yaml (nodeSelector slices)",
        [b.node(0), b.node(1, labels={"rack": "r1"})],
        [
            b.device_class(),
            b.slice(None, gpus(1, prefix="fabric"), pool="fabric", name="fabric", node_selector=selector),
            b.template("one", [exactly(b.cls())]),
        ],
        [b.pod(templates=["one"]), b.pod(templates=["one"])],
        expect=[True, False],
    )


def extended_resource_on_shareable_device() -> Scenario:
    b = Builder("d22")
    res = "d22.example.com/gpu"
    cap = {
        "shares": {"value": "2", "requestPolicy": {"default": "1", "validRange": {"min": "1", "max": "2"}}}
    }
    return Scenario(
        b.tag,
        "KEP-5004 on a shareable device: each synthesized request takes the requestPolicy default (1 of 2)",
        "project table: localcluster.objects.gpu_slice (NVIDIA-shaped, shares) with a class without capacity",
        [b.node(0)],
        [b.device_class(ext=res), b.slice(0, [device("gpu-0", attrs(index=0), cap, multi=True)])],
        [b.pod(limits={res: "1"}) for _ in range(3)],
        expect=[True, True, False],
    )


def project_gpu_shares() -> Scenario:
    b = Builder("d23")
    cap = {
        "memory": {"value": "80Gi"},
        "shares": {
            "value": "4",
            "requestPolicy": {"default": "1", "validRange": {"min": "1", "max": "4", "step": "1"}},
        },
    }
    gpus_ = [
        device(f"gpu-{i}", attrs(productName="NVIDIA A100-SXM4-80GB", index=i), cap, multi=True)
        for i in range(2)
    ]
    one = {"requests": {"shares": "3"}}
    return Scenario(
        b.tag,
        "the project's NVIDIA-shaped slice (2 GPUs x 4 shares): claims of 3 shares, two fit, the third not",
        "project table: localcluster/objects.py gpu_slice",
        [b.node(0)],
        [b.device_class(), b.slice(0, gpus_), b.template("three", [exactly(b.cls(), capacity=one)])],
        [b.pod(templates=["three"]) for _ in range(3)],
        unique=False,
        expect=[True, True, False],
    )


def two_claims_one_pod() -> Scenario:
    b = Builder("d24")
    return Scenario(
        b.tag,
        "a pod with two claim templates needs two devices on one node; one node has one, the other two",
        "templates/pod-with-many-claim-templates.yaml, another-resourceclaimtemplate.yaml",
        [b.node(0), b.node(1)],
        [
            b.device_class(),
            b.slice(0, gpus(1)),
            b.slice(1, gpus(2)),
            b.template("one", [exactly(b.cls())]),
            b.template("another", [exactly(b.cls())]),
        ],
        [b.pod(templates=["one", "another"]), b.pod(templates=["one", "another"])],
        expect=[True, False],
    )


# ---- the allocator's differences by release (resourceapi/releases.py `Allocation`; issue 39) ---------------

SHARE_ID = "00000000-0000-4000-8000-000000000001"


def _holder_status(b: Builder, device_name: str, pool: str = "pool-0", **result: Any) -> Obj:
    """A status allocating one share of `device_name` on node 0 to request req-0 (no pod reserves it)."""
    here = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [b.node_name(0)]}]}
    share = {"request": "req-0", "driver": b.driver, "pool": pool, "device": device_name, "shareID": SHARE_ID}
    return {
        "allocation": {
            "devices": {"results": [{**share, **result}]},
            "nodeSelector": {"nodeSelectorTerms": [here]},
        }
    }


def live_share_blocks_exclusive(tag: str = "d26") -> Scenario:
    b = Builder(tag)
    return Scenario(
        b.tag,
        "a device that no longer allows multiple allocations still holds a live share: 1.38 does not "
        "allocate it exclusively (kubernetes/kubernetes#140798), 1.37 does (a double allocation)",
        "project table: tests/allocator/test_search_shares.py (live share, exclusive request)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, gpus(1)),
            b.claim("holder", [exactly(b.cls())]),
            b.template("one", [exactly(b.cls())]),
        ],
        [b.pod(templates=["one"])],
        expect={"1.37": [True], "1.38": [False]},
        committed={"holder": _holder_status(b, "gpu-0")},
    )


def all_mode_incomplete_pool_fails_the_node(tag: str = "d27") -> Scenario:
    b = Builder(tag)
    return Scenario(
        b.tag,
        "allocationMode All, node 0's pool incomplete (one of two slices): 1.38 fails that node only and "
        "uses node 1, 1.37 fails the pod",
        "project table: tests/allocator/test_release_allocation.py (All on an incomplete pool)",
        [b.node(0), b.node(1)],
        [
            b.device_class(),
            b.slice(0, gpus(1), count=2),
            b.slice(1, gpus(2)),
            b.template("all", [exactly(b.cls(), allocationMode="All")]),
        ],
        [b.pod(templates=["all"])],
        expect={"1.37": [False], "1.38": [True]},
    )


def negative_consumed_capacity_is_summed(tag: str = "d28") -> Scenario:
    b = Builder(tag)
    policy = {"default": "1", "validRange": {"min": "1"}}
    dev = device("shared", capacity={"memory": {"value": "8", "requestPolicy": policy}}, multi=True)
    return Scenario(
        b.tag,
        "a committed claim consuming -2 of an 8 memory device: 1.37 sums it, so 9 fits (1.38's PreFilter "
        "would fail the pod, but its API server refuses to store the status: "
        "test_a_negative_consumed_capacity_is_refused_from_1_38)",
        "project table: tests/allocator/test_release_allocation.py (committed negative consumedCapacity)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, [dev]),
            b.claim("holder", [exactly(b.cls(), capacity={"requests": {"memory": "1"}})]),
            b.template("mem", [exactly(b.cls(), capacity={"requests": {"memory": "9"}})]),
        ],
        [b.pod(templates=["mem"])],
        expect={"1.37": [True]},
        committed={"holder": _holder_status(b, "shared", consumedCapacity={"memory": "-2"})},
    )


def _versioned(b: Builder) -> Obj:
    versions = ("1.0.0+build.1", "1.0.0+build.2")  # equal in semver (build metadata), unequal as strings
    devices = [device(f"gpu-{i}", {"firmware": {"version": v}}) for i, v in enumerate(versions)]
    return b.slice(0, devices)


def match_attribute_semver(tag: str = "d29") -> Scenario:
    b = Builder(tag)
    return Scenario(
        b.tag,
        "matchAttribute on versions 1.0.0+build.1 and 1.0.0+build.2: equal in semver on 1.38, unequal "
        "strings on 1.37",
        "project table: tests/allocator/test_release_allocation.py (semver constraints)",
        [b.node(0)],
        [
            b.device_class(),
            _versioned(b),
            b.template(
                "two",
                [exactly(b.cls(), count=2)],
                [{"requests": ["req-0"], "matchAttribute": f"{b.driver}/firmware"}],
            ),
        ],
        [b.pod(templates=["two"])],
        expect={"1.37": [False], "1.38": [True]},
    )


def distinct_attribute_semver(tag: str = "d30") -> Scenario:
    b = Builder(tag)
    return Scenario(
        b.tag,
        "distinctAttribute on versions 1.0.0+build.1 and 1.0.0+build.2: the same version on 1.38, distinct "
        "strings on 1.37",
        "project table: tests/allocator/test_release_allocation.py (semver constraints)",
        [b.node(0)],
        [
            b.device_class(),
            _versioned(b),
            b.template(
                "two",
                [exactly(b.cls(), count=2)],
                [{"requests": ["req-0"], "distinctAttribute": f"{b.driver}/firmware"}],
            ),
        ],
        [b.pod(templates=["two"])],
        expect={"1.37": [True], "1.38": [False]},
    )


def qualified_attribute_wins(tag: str = "d31") -> Scenario:
    b = Builder(tag)
    both = {"model": {"string": "short"}, f"{b.driver}/model": {"string": "qualified"}}

    def model_is(value: str) -> list[Obj]:
        return [{"cel": {"expression": f'device.attributes["{b.driver}"].model == "{value}"'}}]

    return Scenario(
        b.tag,
        "one attribute published as `model` and as `<driver>/model`: 1.38's CEL sees the qualified one (on "
        "1.37 Go's map order decides, so no outcome is stated there)",
        "project table: tests/allocator/test_release_allocation.py (qualified spelling)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, [device("gpu-0", both)]),
            b.template("short", [exactly(b.cls(), selectors=model_is("short"))]),
            b.template("qualified", [exactly(b.cls(), selectors=model_is("qualified"))]),
        ],
        [b.pod(templates=["short"]), b.pod(templates=["qualified"])],
        expect={"1.38": [False, True]},
    )


def qualified_capacity_wins(tag: str = "d32") -> Scenario:
    b = Builder(tag)
    both = {f"{b.driver}/memory": {"value": "8"}, "memory": {"value": "2"}}
    return Scenario(
        b.tag,
        "one capacity published as `memory: 2` and as `<driver>/memory: 8`: 1.38 counts 8, two claims of 4 "
        "fit and a third not (1.37 keeps two capacities and dra-capacity normalizes the names, a listed "
        "divergence, so no 1.37 outcome is stated)",
        "project table: tests/allocator/test_release_allocation.py (qualified capacity)",
        [b.node(0)],
        [
            b.device_class(),
            b.slice(0, [device("shared", capacity=both, multi=True)]),
            b.template("four", [exactly(b.cls(), capacity={"requests": {"memory": "4"}})]),
        ],
        [b.pod(templates=["four"]) for _ in range(3)],
        expect={"1.38": [True, True, False]},
    )


def live_share_blocks_an_extended_resource(tag: str = "d33") -> Scenario:
    b = Builder(tag)
    res = f"{b.driver}/gpu"
    return Scenario(
        b.tag,
        "d26 through KEP-5004: the extended-resource claim of the pod cannot have the device whose live "
        "share remains (1.38), and has it on 1.37",
        "project table: tests/allocator/test_search_shares.py (live share), "
        "templates/pod-with-extended-resource.yaml",
        [b.node(0)],
        [b.device_class(ext=res), b.slice(0, gpus(1)), b.claim("holder", [exactly(b.cls())])],
        [b.pod(limits={res: "1"})],
        expect={"1.37": [True], "1.38": [False]},
        committed={"holder": _holder_status(b, "gpu-0")},
    )


def qualified_attribute_wins_in_a_class(tag: str = "d34") -> Scenario:
    b = Builder(tag)
    both = {"model": {"string": "short"}, f"{b.driver}/model": {"string": "qualified"}}
    short = b.device_class(
        "short", ext=f"{b.driver}/short", cel=f'device.attributes["{b.driver}"].model == "short"'
    )
    qualified = b.device_class(
        "qualified", ext=f"{b.driver}/qualified", cel=f'device.attributes["{b.driver}"].model == "qualified"'
    )
    return Scenario(
        b.tag,
        "d31 through KEP-5004: a DeviceClass selecting the short spelling matches nothing on 1.38, one "
        "selecting the qualified spelling matches the device",
        "project table: tests/allocator/test_release_allocation.py (qualified spelling), "
        "templates/deviceclass-extended-resource.yaml",
        [b.node(0)],
        [short, qualified, b.slice(0, [device("gpu-0", both)])],
        [b.pod(limits={f"{b.driver}/short": "1"}), b.pod(limits={f"{b.driver}/qualified": "1"})],
        expect={"1.38": [False, True]},
    )


SCENARIOS: list[Callable[[], Scenario]] = [
    claim_template_basic,
    shared_claim,
    match_attribute_two_devices,
    cel_selector,
    missing_class,
    first_available_skips_missing_class,
    first_available_skips_a_class_without_devices,
    first_available_falls_back_to_smaller,
    extended_resource_explicit,
    extended_resource_implicit,
    extended_resource_device_plugin_node,
    consumable_capacity,
    consumable_capacity_step,
    consumable_capacity_two_requests,
    partitionable_whole_then_half,
    partitionable_halves_then_whole,
    distinct_attribute,
    node_taint,
    node_affinity,
    device_taints,
    allocation_mode_all,
    network_attached_slice,
    extended_resource_on_shareable_device,
    project_gpu_shares,
    two_claims_one_pod,
    live_share_blocks_exclusive,
    all_mode_incomplete_pool_fails_the_node,
    negative_consumed_capacity_is_summed,
    match_attribute_semver,
    distinct_attribute_semver,
    qualified_attribute_wins,
    qualified_capacity_wins,
    live_share_blocks_an_extended_resource,
    qualified_attribute_wins_in_a_class,
]
# The scenarios whose outcome depends on the release, each a (tag) -> Scenario (the binder's run rebuilds
# them under other tags: tests/e2e/test_placement_vs_kube_scheduler.py).
BY_RELEASE: list[Callable[[str], Scenario]] = [
    live_share_blocks_exclusive,
    all_mode_incomplete_pool_fails_the_node,
    negative_consumed_capacity_is_summed,
    match_attribute_semver,
    distinct_attribute_semver,
    qualified_attribute_wins,
    qualified_capacity_wins,
    live_share_blocks_an_extended_resource,
    qualified_attribute_wins_in_a_class,
]
