"""The per-pod queueing hints, without a server: which plugin's hint an event asks, what the node pre-check
decides, and the slice rule that skips a republish which adds no room (issue 42's storm). Each skip has a
twin that must Queue, because skipping it would leave a pod waiting that could now fit."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from binder import hints
from binder.hints import ClusterEvent
from binder.names import CLAIM_ANNOTATION
from localcluster.objects import make_node, make_pod

DRA = hints.DYNAMIC_RESOURCES
FIT = hints.NODE_RESOURCES_FIT
AFFINITY = hints.NODE_AFFINITY
SPREAD = hints.POD_TOPOLOGY_SPREAD

POD = make_pod("p").uid("u1").spec(nodeSelector={"pool": "a"}).obj()
YES = lambda pod: pod is POD  # noqa: E731 - the event's node may host the pod (and it is asked about it)
NO = lambda pod: False  # noqa: E731 - it may not


def event(resource: str, action: str = hints.UPDATE) -> ClusterEvent:
    return ClusterEvent(resource, action, "test")


def worth(ev: ClusterEvent, plugins: set[str], old: Any = None, new: Any = None, pre: Any = None) -> bool:
    return hints.worth_requeuing(ev, frozenset(plugins), POD, old, new, pre)


def node(labels: dict[str, str]) -> Any:
    return make_node("n1").labels(labels).obj()


# --- isPodWorthRequeuing -----------------------------------------------------------------------------------


def test_no_rejector_a_wildcard_or_storage_event_or_no_pod_queues() -> None:
    assert worth(event(hints.RESOURCE_SLICE), set(), pre=NO)
    assert worth(event(hints.WILDCARD, hints.WILDCARD), {AFFINITY})
    assert worth(event(hints.STORAGE, hints.WILDCARD), {AFFINITY})
    assert hints.worth_requeuing(event(hints.RESOURCE_SLICE), frozenset({AFFINITY}), None, None, None, NO)


def test_a_plugin_the_table_does_not_know_queues() -> None:
    assert worth(event(hints.RESOURCE_SLICE), {AFFINITY, "SomeNewPlugin"}, pre=NO)


def test_an_event_no_plugin_registers_moves_nobody() -> None:
    assert not worth(event(hints.ASSIGNED_POD, hints.UPDATE), {DRA, FIT, SPREAD}, pre=YES)


def test_only_the_rejecting_plugins_hints_are_asked() -> None:
    slice_update = event(hints.RESOURCE_SLICE)
    assert not worth(slice_update, {AFFINITY}, pre=YES)  # NodeAffinity registers no slice event
    assert worth(slice_update, {AFFINITY, DRA}, pre=YES)
    assert not worth(slice_update, {DRA}, pre=NO)  # the slice's node excludes the pod
    assert worth(slice_update, {DRA}, pre=None)  # any node: a nodeSelector or allNodes slice


def test_a_node_event_queues_node_local_plugins_only_where_the_node_may_host_the_pod() -> None:
    added = event(hints.NODE, hints.ADD)
    for plugin in (DRA, FIT, hints.NODE_PORTS, hints.TAINT_TOLERATION, hints.NODE_UNSCHEDULABLE, AFFINITY):
        assert worth(added, {plugin}, None, node({"pool": "a"}), YES), plugin
        assert not worth(added, {plugin}, None, node({"pool": "b"}), NO), plugin


def test_node_affinity_skips_a_node_update_that_keeps_the_labels() -> None:
    updated = event(hints.NODE)
    same = node({"pool": "a"})
    assert not worth(updated, {AFFINITY}, same, copy.deepcopy(same), YES)
    assert worth(updated, {AFFINITY}, node({"pool": "b"}), same, YES)  # now labelled into the pool
    assert worth(updated, {FIT}, same, copy.deepcopy(same), YES)  # allocatable grew, labels kept


def test_a_node_deletion_helps_only_topology_plugins() -> None:
    deleted = event(hints.NODE, hints.DELETE)
    assert not worth(deleted, {AFFINITY, DRA, FIT}, node({}), None)
    assert worth(deleted, {SPREAD}, node({}), None)  # a domain gone raises the minimum count


def test_topology_plugins_queue_even_when_the_node_excludes_the_pod() -> None:
    # a skip would be wrong: a node relabelled out of a zone changes the skew on every other node
    assert worth(event(hints.NODE), {SPREAD}, node({"zone": "a"}), node({"zone": "b"}), NO)
    assert worth(event(hints.NODE), {hints.INTER_POD_AFFINITY}, node({}), node({"x": "y"}), NO)
    assert worth(event(hints.ASSIGNED_POD, hints.UPDATE_POD_LABEL), {SPREAD}, pre=NO)
    assert not worth(event(hints.ASSIGNED_POD, hints.UPDATE_POD_LABEL), {DRA, FIT}, pre=YES)


def test_a_pod_leaving_a_node_frees_node_resources_there_only() -> None:
    gone = event(hints.ASSIGNED_POD, hints.DELETE)
    assert worth(gone, {FIT}, pre=YES)
    assert not worth(gone, {FIT, hints.NODE_PORTS}, pre=NO)
    assert not worth(gone, {AFFINITY, hints.TAINT_TOLERATION}, pre=YES)


def test_a_pod_leaving_queues_dra_rejected_pods_anywhere() -> None:
    # a skip would be wrong: the DRA label also carries the volume reasons (a ReadWriteOncePod volume the
    # pod held is free on every node), and a bind in flight releases devices of any reach
    assert worth(event(hints.ASSIGNED_POD, hints.DELETE), {DRA}, pre=NO)
    assert worth(event(hints.ASSIGNED_POD, hints.ADD), {DRA}, pre=NO)
    assert not worth(event(hints.ASSIGNED_POD, hints.ADD), {FIT}, pre=YES)


def test_class_and_taint_rule_events_queue_dra_rejected_pods() -> None:
    for resource in (hints.DEVICE_CLASS, hints.DEVICE_TAINT_RULE):
        assert worth(event(resource), {DRA})
        assert not worth(event(resource), {AFFINITY, FIT})


# --- claims ------------------------------------------------------------------------------------------------

ALLOCATION = {
    "devices": {"results": [{"request": "r", "driver": "d", "pool": "n1", "device": "gpu-0"}]},
    "nodeSelector": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
    },
}


def claim(allocation: Any = None, owner: str | None = None) -> Any:
    meta: dict[str, Any] = {"name": "c", "namespace": "default", "uid": "c1"}
    if owner is not None:
        meta["annotations"] = {CLAIM_ANNOTATION: "true"}
        meta["ownerReferences"] = [{"kind": "Pod", "uid": owner, "controller": True, "name": "p"}]
    return {"metadata": meta, "status": {"allocation": allocation} if allocation else {}}


def test_a_freed_allocation_queues_pods_its_nodes_may_host() -> None:
    claims = event(hints.RESOURCE_CLAIM)
    assert worth(claims, {DRA}, claim(ALLOCATION), claim(), YES)  # deallocated
    assert not worth(claims, {DRA}, claim(ALLOCATION), claim(), NO)  # on a node the pod cannot use
    assert worth(event(hints.RESOURCE_CLAIM, hints.DELETE), {DRA}, claim(ALLOCATION), None, YES)
    assert not worth(claims, {FIT}, claim(ALLOCATION), claim(), YES)


def test_a_claim_that_frees_nothing_is_skipped_unless_it_is_the_pods_own() -> None:
    claims = event(hints.RESOURCE_CLAIM)
    kept = claim(ALLOCATION)
    assert not worth(claims, {DRA}, kept, copy.deepcopy(kept), YES)  # e.g. its reservations changed
    assert worth(event(hints.RESOURCE_CLAIM, hints.DELETE), {DRA}, claim(owner="u1"), None, NO)
    assert not worth(claims, {DRA}, claim(), claim(ALLOCATION), YES)  # allocated: consumes, frees nothing
    assert not worth(event(hints.RESOURCE_CLAIM, hints.ADD), {DRA}, None, claim(), YES)
    assert worth(event(hints.RESOURCE_CLAIM, hints.ADD), {DRA}, None, claim(owner="u1"), NO)
    assert not worth(event(hints.RESOURCE_CLAIM, hints.ADD), {DRA}, None, claim(owner="u2"), YES)


def test_freed_allocation() -> None:
    assert hints.freed_allocation(claim(ALLOCATION), claim()) == ALLOCATION
    assert hints.freed_allocation(claim(ALLOCATION), None) == ALLOCATION
    other = copy.deepcopy(ALLOCATION)
    other["devices"]["results"][0]["device"] = "gpu-1"
    assert hints.freed_allocation(claim(ALLOCATION), claim(other)) == ALLOCATION  # replaced
    assert hints.freed_allocation(claim(ALLOCATION), claim(copy.deepcopy(ALLOCATION))) is None
    assert hints.freed_allocation(claim(), claim(ALLOCATION)) is None
    assert hints.freed_allocation(None, claim(ALLOCATION)) is None


def test_selector_node_names_only_for_a_pinned_node_list() -> None:
    assert hints.selector_node_names(ALLOCATION["nodeSelector"]) == ["n1"]
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}
    assert hints.selector_node_names({"nodeSelectorTerms": [term]}) == ["n1", "n2"]
    for selector in (
        None,
        {},
        {"nodeSelectorTerms": [term, term]},
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
        {"nodeSelectorTerms": [{**term, "matchExpressions": [{"key": "z", "operator": "Exists"}]}]},
        {"nodeSelectorTerms": [{"matchFields": [{**term["matchFields"][0], "operator": "NotIn"}]}]},
        {"nodeSelectorTerms": [{"matchFields": [{"key": "other", "operator": "In", "values": ["n1"]}]}]},
        {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In"}]}]},
        {"nodeSelectorTerms": [{"matchFields": [term["matchFields"][0], term["matchFields"][0]]}]},
        {"nodeSelectorTerms": ["x"]},
        {"nodeSelectorTerms": [{"matchFields": ["x"]}]},
        "x",
    ):
        assert hints.selector_node_names(selector) is None, selector


def test_slice_node_names_and_action_of() -> None:
    assert hints.slice_node_names({"spec": {"nodeName": "n1"}}) == ["n1"]
    assert hints.slice_node_names({"spec": {"allNodes": True}}) is None
    assert hints.slice_node_names(None) is None
    actions = [hints.action_of(None, 1), hints.action_of(1, 1), hints.action_of(1, None)]
    assert actions == ["Add", "Update", "Delete"]


# --- the slice rule ----------------------------------------------------------------------------------------


class View:
    """The snapshot as the slice rule reads it: the devices named full, the pool's slice count."""

    def __init__(self, full: set[str], slices: int = 1) -> None:
        self.full, self.slices = full, slices
        self.asked: set[str] = set()
        self.pools: list[tuple[str, str]] = []

    def device_full(self, driver: str, pool: str, device: str) -> bool:
        assert (driver, pool) == ("d", "n1")
        self.asked.add(device)
        return device in self.full

    def pool_slices(self, driver: str, pool: str) -> int:
        self.pools.append((driver, pool))
        return self.slices


def gpu(name: str, version: str = "1", shares: str = "8", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "allowMultipleAllocations": True,
        "attributes": {"driverVersion": {"string": version}},
        "capacity": {"shares": {"value": shares}},
        **extra,
    }


def slice_obj(*devices: dict[str, Any], generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "s"},
        "spec": {
            "driver": "d",
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": generation, "resourceSliceCount": 1},
            "devices": list(devices),
            **spec,
        },
    }


OLD = slice_obj(gpu("gpu-0"), gpu("gpu-1"))


def helps(new: dict[str, Any], view: View | None = None, old: dict[str, Any] = OLD) -> bool:
    return hints.slice_update_may_help(old, new, view or View({"gpu-0", "gpu-1"}))


def test_the_storm_a_changed_attribute_on_full_devices_adds_no_room() -> None:
    view = View({"gpu-0", "gpu-1"})
    assert not helps(slice_obj(gpu("gpu-0", "2"), gpu("gpu-1", "2"), generation=2), view)
    assert view.asked == {"gpu-0", "gpu-1"} and view.pools == [("d", "n1")]
    assert not helps(copy.deepcopy(OLD))  # the same spec
    assert not helps(slice_obj(gpu("gpu-0", "2", taints=[]), gpu("gpu-1")))  # taints, attributes: free


def test_a_changed_attribute_on_a_device_with_room_may_help() -> None:
    # a skip would be wrong: the new attribute may make the class's CEL selector match a device with room
    assert helps(slice_obj(gpu("gpu-0", "2"), gpu("gpu-1")), View({"gpu-1"}))
    assert not helps(slice_obj(gpu("gpu-0"), gpu("gpu-1", "2")), View({"gpu-1"}))  # the full one changed


@pytest.mark.parametrize(
    "new",
    [
        slice_obj(gpu("gpu-0"), gpu("gpu-1"), gpu("gpu-2")),  # a new device
        slice_obj(gpu("gpu-0", shares="16"), gpu("gpu-1")),  # more capacity on a full device
        slice_obj(gpu("gpu-0", consumesCounters=[]), gpu("gpu-1")),  # counter consumption changed
        slice_obj({**gpu("gpu-0"), "allowMultipleAllocations": False}, gpu("gpu-1")),
        slice_obj(gpu("gpu-0"), gpu("gpu-1"), nodeName="n2"),  # another node
        slice_obj(gpu("gpu-0"), gpu("gpu-1"), sharedCounters=[{"name": "c", "counters": {}}]),
        slice_obj(gpu("gpu-0"), gpu("gpu-0", "2")),  # a repeated name: the pool may become valid or not
    ],
    ids=["new-device", "capacity", "counters", "multi", "node", "shared-counters", "duplicate"],
)
def test_updates_that_may_add_room(new: dict[str, Any]) -> None:
    assert helps(new)


def test_a_new_generation_counts_only_for_a_pool_of_one_slice() -> None:
    bumped = slice_obj(gpu("gpu-0", "2"), gpu("gpu-1"), generation=2)
    assert not helps(bumped, View({"gpu-0", "gpu-1"}, slices=1))
    # a skip would be wrong: with other slices in the pool, the generation decides which slices count
    assert helps(bumped, View({"gpu-0", "gpu-1"}, slices=2))
    view = View({"gpu-0", "gpu-1"}, slices=2)
    assert not helps(slice_obj(gpu("gpu-0", "2"), gpu("gpu-1")), view)  # same generation: not asked
    assert view.pools == []
    pool_count = slice_obj(gpu("gpu-0"), gpu("gpu-1"))
    pool_count["spec"]["pool"]["resourceSliceCount"] = 2
    assert helps(pool_count)


def test_a_device_gone_helps_only_when_it_consumed_counters() -> None:
    assert not helps(slice_obj(gpu("gpu-0")))
    consumes = [{"counterSet": "c", "counters": {}}]
    counting = slice_obj(gpu("gpu-0"), gpu("gpu-1", consumesCounters=consumes))
    assert helps(slice_obj(gpu("gpu-0")), old=counting)
    assert not helps(slice_obj(gpu("gpu-1", consumesCounters=consumes)), old=counting)
