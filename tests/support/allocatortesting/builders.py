"""The vocabulary of upstream's shared allocator table (`allocatortesting/allocator_testing.go`'s helpers, as
ported here): names and builders of claims, classes, slices, devices and expected results, beyond the generic
ones in `support.dra_objects`. The theme modules star-import it, as upstream's rows use their package's names.
"""

from __future__ import annotations

from typing import Any

from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates
from support.allocatortesting.case import Case, features
from support.dra_objects import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    PER_DEVICE,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    SHARE,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    allocated,
    capacity,
    claim,
    device,
    device_class,
    expect,
    local,
    one_device_slice,
    opaque,
    pool,
    prioritized,
    request,
    resource_slice,
    result,
    selector,
    simple_claim,
    sub_request,
)

MULTI_CLASS = f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == true'


DEDICATED_CLASS = f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == false'


RANGE_2_2_4 = {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}


MATCH, DISTINCT = "matchAttribute", "distinctAttribute"


SLICE4 = "slice-4"


POOL4 = "pool-4"


DEVICE4 = "device-4"


CAP0, CAP1 = "capacity-0", "capacity-1"


SET1, SET2 = "counter-set-1", "counter-set-2"


OTHER_SHARE = "bbbbbbbb-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}


TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}


TOLERATE_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}


TOLERATE_NO_EXECUTE = {
    "operator": "Equal",
    "key": "taint-key",
    "value": "taint-value-2",
    "effect": "NoExecute",
}


def multi_class(name: str = CLASS_A) -> DeviceClass:
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": [selector(MULTI_CLASS)]}}
    )


def dedicated_class(name: str = CLASS_A) -> DeviceClass:
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": [selector(DEDICATED_CLASS)]}}
    )


def ranged(value: str) -> dict[str, Any]:
    """upstream withCapacityRequestPolicyRange: default 2, min 2, step 2, max 4."""
    return {"value": value, "requestPolicy": RANGE_2_2_4}


def valid_values(value: str, default: str, *extra: str) -> dict[str, Any]:
    return {"value": value, "requestPolicy": {"default": default, "validValues": [default, *extra]}}


def share(
    req: str, dev: str, consumed: dict[str, str] | None = None, pool_name: str = POOL1
) -> dict[str, Any]:
    out = result(req, DRIVER_A, pool_name, dev, shareID=SHARE)
    if consumed:
        out["consumedCapacity"] = consumed
    return out


def admin(req: str, dev: str) -> dict[str, Any]:
    return result(req, DRIVER_A, POOL1, dev, adminAccess=True)


def counter_set(name: str, **counters: str) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def consumes(set_name: str, **counters: str) -> list[dict[str, Any]]:
    return [{"counterSet": set_name, "counters": {k: {"value": v} for k, v in counters.items()}}]


def attrs(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, bool):
            out[key] = {"bool": value}
        elif isinstance(value, int):
            out[key] = {"int": value}
        elif isinstance(value, str) and value[:1] == "v" and value[1:2].isdigit():
            out[key] = {"version": value[1:]}
        else:
            out[key] = {"string": value}
    return out


def memory_selector(amount: str) -> dict[str, Any]:
    return selector(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{amount}")) >= 0')


def slice1(*devices: dict[str, Any], **kw: Any) -> ResourceSlice:
    """upstream slice(slice1, node1, pool1, driverA, devices...): the table's usual slice."""
    return resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *devices, **kw)


def on_node1(*results: dict[str, Any], config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """upstream allocationResult(localNodeSelector(node1), results...)."""
    return expect(local(NODE1), *results, config=config)


def in_pool1(name: str, slices: int, *devices: dict[str, Any], **kw: Any) -> ResourceSlice:
    """upstream slice(name, node1, pool1 of `slices` slices, driverA, devices...)."""
    return resource_slice(name, NODE1, pool(POOL1, slices), DRIVER_A, *devices, **kw)


def consuming(name: str, set_name: str, **counters: str) -> dict[str, Any]:
    """upstream device(name, nil, nil).withDeviceCounterConsumption(set_name: counters)."""
    return device(name, consumesCounters=consumes(set_name, **counters))


def memory_request(name: str, amount: str) -> dict[str, Any]:
    """A request of one device with at least `amount` of memory."""
    return request(name, selectors=[memory_selector(amount)])


def memory_sub(name: str, amount: str) -> dict[str, Any]:
    """A subrequest of one device with at least `amount` of memory."""
    return sub_request(name, selectors=[memory_selector(amount)])


def capacity_request(name: str, amount: str) -> dict[str, Any]:
    """upstream request(name, classA, 1).withCapacityRequest(amount): `amount` of capacity-0."""
    return request(name, capacity=cap_request(amount))


def match_attribute(attribute: str) -> dict[str, Any]:
    return {"matchAttribute": f"{DRIVER_A}/{attribute}"}


def distinct_attribute(attribute: str) -> dict[str, Any]:
    return {"distinctAttribute": f"{DRIVER_A}/{attribute}"}


def device_and_6gi_or_4gi() -> ResourceClaim:
    """claim-0: req-0 any device, req-1 one of 6Gi or else one of 4Gi (upstream's partitionable cases)."""
    return claim(CLAIM0, request(REQ0), prioritized(REQ1, memory_sub(SUB0, "6Gi"), memory_sub(SUB1, "4Gi")))


def per_device_slice(*devices: dict[str, Any]) -> ResourceSlice:
    """upstream slice(slice1, perDeviceNodeSelection, pool1, driverA, devices...)."""
    return resource_slice(SLICE1, PER_DEVICE, POOL1, DRIVER_A, *devices)


def two_classes() -> list[DeviceClass]:
    """Class A for driver A and class B for driver B, as upstream's tables pair them."""
    return [device_class(), device_class(CLASS_B, DRIVER_B)]


def one_device_per_driver() -> list[ResourceSlice]:
    """One slice of one device for each of drivers A and B, both on node 1 in pool 1."""
    return [
        one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A),
        one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B),
    ]


def one_result_per_driver() -> list[dict[str, Any]]:
    """The allocations of `one_device_per_driver`'s devices to request req-0 of two claims, A's first."""
    return [
        on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1)),
        on_node1(result(REQ0, DRIVER_B, POOL1, DEVICE1)),
    ]


def two_devices(*extra: dict[str, Any]) -> ResourceSlice:
    return slice1(device(DEVICE1), device(DEVICE2), *extra)


def n_devices(name: str, node_name: str, pool_name: str, driver: str, n: int) -> ResourceSlice:
    return resource_slice(name, node_name, pool_name, driver, *(device(f"device-{i}") for i in range(n)))


def numa_devices() -> ResourceSlice:
    return slice1(
        device(DEVICE1, attributes=attrs(numa=1)),
        device(DEVICE2, attributes=attrs(numa=2)),
    )


def prior(claim_name: str, *results: dict[str, Any]) -> ResourceClaim:
    """A claim allocated earlier (committed state)."""
    return allocated(simple_claim(claim_name), *results)


def admin_request(req: dict[str, Any]) -> dict[str, Any]:
    req["exactly"]["adminAccess"] = True
    return req


def strs(*v: str) -> dict[str, Any]:
    return {"strings": list(v)}


def one(v: str) -> dict[str, Any]:
    return {"string": v}


def versioned_memory(name: str, memory: str, version: str) -> dict[str, Any]:
    return device(name, {"memory": memory}, attributes={"driverVersion": {"version": version}})


def sub_constraint_case(scope: list[str], pool2_devices: list[dict[str, Any]], want_sub: str) -> Case:
    """upstream's prioritized-list-subrequests-with-constraints-ref-* cases."""
    return Case(
        [
            claim(
                CLAIM0,
                request(REQ0, selectors=[memory_selector("8Gi")]),
                prioritized(
                    REQ1,
                    sub_request(SUB0, selectors=[memory_selector("2Gi")]),
                    sub_request(SUB1, selectors=[memory_selector("1Gi")]),
                ),
                constraints=[{"requests": scope, "matchAttribute": f"{DRIVER_A}/driverVersion"}],
            )
        ],
        [device_class()],
        [
            slice1(versioned_memory(DEVICE1, "8Gi", "1.0.0")),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, *pool2_devices),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(f"{REQ1}/{SUB1}", DRIVER_A, POOL2, want_sub),
            )
        ],
    )


def two_sets(memory1: str, cpus1: str, cpus2: str, memory2: str) -> list[dict[str, Any]]:
    return consumes("counter-set-1", memory=memory1, cpus=cpus1) + consumes(
        "counter-set-2", cpus=cpus2, memory=memory2
    )


def shared_counter_pool(*device_slices: ResourceSlice) -> list[ResourceSlice]:
    """A 3-slice pool: the counter set (targeting node-1) plus the given device slices."""
    counters = resource_slice(
        SLICE1, NODE1, pool(POOL1, 3), DRIVER_A, counter_sets=[counter_set("counter-set-1", memory="8Gi")]
    )
    return [counters, *device_slices]


def memory_device(name: str, memory: str, counter_set_name: str = "counter-set-1") -> dict[str, Any]:
    return device(name, {"memory": memory}, consumesCounters=consumes(counter_set_name, memory=memory))


def s(value: str) -> dict[str, Any]:
    return {"string": value}


def b(value: bool) -> dict[str, Any]:
    return {"bool": value}


def sub(req: str, sub_name: str) -> str:
    return f"{req}/{sub_name}"


def cel(expression: str) -> dict[str, Any]:
    return selector(expression)


def attr_selector(attribute: str, value: str) -> dict[str, Any]:
    return cel(f'device.attributes["{DRIVER_A}"].{attribute} == "{value}"')


def cap_request(amount: str) -> dict[str, Any]:
    """upstream withCapacityRequest: the request's `capacity-0`."""
    return capacity(**{CAP0: amount})


def from_counters(name: str, *consumption: tuple[str, dict[str, str]], **extra: Any) -> dict[str, Any]:
    """upstream device(name, fromCounters, nil).withDeviceCounterConsumption(...): capacities = counters."""
    consumes_counters = [
        {"counterSet": set_name, "counters": {k: {"value": v} for k, v in counters.items()}}
        for set_name, counters in consumption
    ]
    caps = {k: v for _, counters in consumption for k, v in counters.items()}
    return device(name, caps, consumesCounters=consumes_counters, **extra)


def counter_device(name: str, *consumption: tuple[str, dict[str, str]], **extra: Any) -> dict[str, Any]:
    """upstream device(name, nil, ...).withDeviceCounterConsumption(...): counters without capacity."""
    consumes_counters = [
        {"counterSet": set_name, "counters": {k: {"value": v} for k, v in counters.items()}}
        for set_name, counters in consumption
    ]
    return device(name, consumesCounters=consumes_counters, **extra)


def class_with_selector(name: str, expression: str) -> DeviceClass:
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": [selector(expression)]}}
    )


def all_sub(name: str, cls: str = CLASS_A, **fields: Any) -> dict[str, Any]:
    """A subrequest with allocationMode All (upstream sets count 0 with it)."""
    out = sub_request(name, cls, **fields)
    out["allocationMode"] = "All"
    del out["count"]
    return out


def multi_host(first: str, second: str, *, second_complete: bool) -> list[Any]:
    """upstream's multi-host-resource-pool-* slices: generation 1 on `first`, generation 2 on `second`.

    Upstream gives both slices of one generation the same name; names are unique here (`Cluster` keys slices
    by name, as the API does), sorted in upstream's order.
    """
    slices = [
        resource_slice("slice-1a", first, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
        resource_slice("slice-1b", first, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
        resource_slice("slice-2a", second, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
    ]
    if second_complete:
        slices.append(resource_slice("slice-2b", second, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2)))
    return slices


def typed_devices(*types: str) -> Any:
    """A slice of devices device-1.. with a string attribute `type`."""
    return slice1(
        *(device(f"device-{i + 1}", attributes={"type": s(t)}) for i, t in enumerate(types)),
    )


def generation_devices(*generations: tuple[str, bool | None]) -> list[dict[str, Any]]:
    out = []
    for i, (gen, selected) in enumerate(generations):
        attributes: dict[str, Any] = {"generation": s(gen)}
        if selected is not None:
            attributes["selected"] = b(selected)
        out.append(device(f"device-{i + 1}", attributes=attributes))
    return out


GENERATION_SUBS = prioritized(
    REQ0,
    all_sub(SUB0, selectors=[attr_selector("generation", "v6")]),
    all_sub(SUB1, selectors=[attr_selector("generation", "v5")]),
)


ALL_OR_B = prioritized(REQ0, all_sub(SUB0), sub_request(SUB1, CLASS_B))


def combinations(*slices: Any) -> Case:
    """upstream's check-combinations-within-single-request-* cases: 5 of 4 devices, 16 recursions."""
    return Case(
        [claim(CLAIM0, request(REQ0, count=5))],
        [device_class()],
        list(slices),
        calls=16,
        feature_gates=features(),
    )


def list_case(
    kind: str,
    attribute: str,
    values: list[dict[str, Any]],
    count: int,
    want: list[str] | None,
    gates: FeatureGates,
    *,
    requests: int = 1,
    error: str | None = None,
) -> Case:
    """upstream's list-attributes-* cases: `requests` requests of `count` devices each under one `kind`
    constraint on `attribute`, against devices device-1.. whose `attribute` holds `values`."""
    devices = [device(f"device-{i + 1}", attributes={attribute: v}) for i, v in enumerate(values)]
    requested = (request(REQ0, count=count) for _ in range(requests))
    return Case(
        [claim(CLAIM0, *requested, constraints=[{kind: f"{DRIVER_A}/{attribute}"}])],
        [device_class()],
        [slice1(*devices)],
        want=None if want is None else [on_node1(*(result(REQ0, DRIVER_A, POOL1, d) for d in want))],
        error=error,
        feature_gates=gates,
    )


def from_class(driver: str, attribute: str, *requests: str) -> dict[str, Any]:
    """An expected config entry that came from the class: `opaque(driver, attribute)` for `requests`."""
    return _config_entry("FromClass", driver, attribute, requests)


def from_claim(driver: str, attribute: str, *requests: str) -> dict[str, Any]:
    """An expected config entry that came from the claim: `opaque(driver, attribute)` for `requests`."""
    return _config_entry("FromClaim", driver, attribute, requests)


def _config_entry(source: str, driver: str, attribute: str, requests: tuple[str, ...]) -> dict[str, Any]:
    entry: dict[str, Any] = {"source": source}
    if requests:
        entry["requests"] = list(requests)
    return entry | opaque(driver, attribute)


def two_shares_of_distinct_strings() -> ResourceClaim:
    """claim-0: two requests of capacity-0 "1" whose devices differ in `stringAttribute`."""
    return claim(
        CLAIM0,
        capacity_request(REQ0, "1"),
        capacity_request(REQ1, "1"),
        constraints=[distinct_attribute("stringAttribute")],
    )
