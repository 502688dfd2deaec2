"""Property tests of `Cluster` invariants over random devices, policies and pods (hypothesis).

Pods are placed one after another on one node (allocate, then commit). After every pod: no device's
consumed capacity exceeds its value, every share respects its device's policy, no dedicated device is held
twice; and the same input always gives the same output, share IDs aside.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.dra_objects import (
    DRIVER_A,
    NODE1,
    POOL1,
    SLICE1,
    capacity,
    claim,
    device_class,
    node,
    request,
    resource_slice,
)

from allocator.structured.cluster import Cluster
from resourceapi.api.resource_v1 import DeviceCapacity, DeviceRequestAllocationResult, ResourceClaim
from resourceapi.capacity import capacity_entry, consumed_amount, violates_policy
from resourceapi.gates import FeatureGates

POLICIES = st.one_of(
    st.none(),
    st.builds(lambda d: {"default": str(d)}, st.integers(1, 3)),
    st.builds(lambda d: {"default": str(d), "validValues": [str(d), str(d + 2)]}, st.integers(1, 2)),
    st.builds(
        lambda lo, step, hi: {
            "default": str(lo),
            "validRange": {"min": str(lo), "step": step, "max": str(hi)},
        },
        st.integers(1, 2),
        st.sampled_from(["1", "500m", "2"]),
        st.integers(3, 6),
    ),
)


@st.composite
def devices(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 4))):
        body: dict[str, Any] = {"name": f"dev-{i}"}
        if draw(st.booleans()):
            body["allowMultipleAllocations"] = True
        if draw(st.booleans()):
            cap: dict[str, Any] = {"value": str(draw(st.integers(2, 8)))}
            policy = draw(POLICIES)
            if policy is not None:
                cap["requestPolicy"] = policy
            body["capacity"] = {"shares": cap}
        out.append(body)
    return out


@st.composite
def pods(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Per pod, its requests (each: count, optional shares amount)."""
    result = []
    for _ in range(draw(st.integers(1, 6))):
        requests = []
        for j in range(draw(st.integers(1, 2))):
            body: dict[str, Any] = {"count": draw(st.integers(1, 2))}
            amount = draw(st.one_of(st.none(), st.sampled_from(["1", "2", "3", "1500m"])))
            if amount is not None:
                body["capacity"] = capacity(shares=amount)
            requests.append(request(f"req-{j}", **body))
        result.append(requests)
    return result


def place(devs: list[dict[str, Any]], pod_specs: list[list[dict[str, Any]]]) -> list[Any]:
    """Allocate and commit the pods one by one; check the invariants after each; return every outcome."""
    counter = iter(range(10**6))
    core = Cluster(
        FeatureGates.defaults(),
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *devs)],
        share_ids=lambda: f"share-{next(counter)}",
    )
    committed: list[tuple[ResourceClaim, DeviceRequestAllocationResult]] = []
    outputs: list[Any] = []
    for i, requests in enumerate(pod_specs):
        pod = claim(f"pod-{i}", *requests)
        outcome = core.allocate(node(), [pod])
        outputs.append((outcome.error, [r.to_api() for r in outcome.results] if outcome.results else None))
        if outcome.results is not None:
            core.commit(pod, outcome.results[0])
            devices_results = outcome.results[0].devices
            committed += [(pod, r) for r in (devices_results.results if devices_results else None) or []]
            check_invariants(devs, committed)
    return outputs


def check_invariants(
    devs: list[dict[str, Any]], committed: list[tuple[ResourceClaim, DeviceRequestAllocationResult]]
) -> None:
    by_name = {d["name"]: d for d in devs}
    dedicated = Counter(r.device for _, r in committed if r.share_id is None)
    shared_devices = {r.device for _, r in committed if r.share_id is not None}
    assert all(n == 1 for n in dedicated.values()), dedicated
    assert not set(dedicated) & shared_devices
    used: dict[str, Fraction] = {}
    for pod, r in committed:
        spec = by_name[r.device].get("capacity", {}).get("shares")
        if r.share_id is None or spec is None:
            continue
        entry = capacity_entry("shares", DeviceCapacity.model_validate(spec))
        consumed = (r.consumed_capacity or {})["shares"]
        assert not violates_policy(consumed, entry.policy)
        asked = next(q.exactly for q in pod.spec.devices.requests or [] if q.name == r.request)
        requests = asked.capacity.requests if asked and asked.capacity and asked.capacity.requests else {}
        wanted = requests.get("shares")
        assert consumed == consumed_amount(wanted, entry)
        if wanted is not None:
            assert consumed.value >= wanted.value
        used[r.device] = used.get(r.device, Fraction(0)) + consumed.value
        assert used[r.device] <= entry.value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(devices(), pods())
def test_placing_pods_keeps_every_invariant(
    devs: list[dict[str, Any]], pod_specs: list[list[dict[str, Any]]]
) -> None:
    place(devs, pod_specs)


@settings(max_examples=60, deadline=None)
@given(devices(), pods())
def test_equal_input_gives_equal_output(
    devs: list[dict[str, Any]], pod_specs: list[list[dict[str, Any]]]
) -> None:
    assert place(devs, pod_specs) == place(devs, pod_specs)


@st.composite
def constrained_problems(draw: st.DrawFn) -> dict[str, Any]:
    """A small node (one pool with a counter set) and one claim whose requests are constrained together."""
    n = draw(st.integers(1, 5))
    devs = [
        {
            "group": draw(st.sampled_from("abc")),
            "memory": draw(st.integers(0, 4)),
            "tainted": draw(st.booleans()),
        }
        for _ in range(n)
    ]
    return {
        "devices": devs,
        "total": draw(st.integers(1, 8)),
        "counts": draw(st.lists(st.integers(1, 2), min_size=1, max_size=3)),
        "tolerate": draw(st.lists(st.booleans(), min_size=3, max_size=3)),
        "constraint": draw(st.sampled_from([None, "matchAttribute", "distinctAttribute"])),
    }


def feasible(problem: dict[str, Any]) -> bool:
    """Brute force: disjoint device sets per request satisfying taints, counters and the constraint."""
    from itertools import combinations

    devs = problem["devices"]

    def search(i: int, used: frozenset[int]) -> bool:
        if i == len(problem["counts"]):
            chosen = [devs[j] for j in used]
            if sum(d["memory"] for d in chosen) > problem["total"]:
                return False
            groups = [d["group"] for d in chosen]
            if problem["constraint"] == "matchAttribute" and len(set(groups)) > 1:
                return False
            return not (problem["constraint"] == "distinctAttribute" and len(set(groups)) < len(groups))
        usable = [
            j
            for j in range(len(devs))
            if j not in used and (problem["tolerate"][i] or not devs[j]["tainted"])
        ]
        return any(search(i + 1, used | set(combo)) for combo in combinations(usable, problem["counts"][i]))

    return search(0, frozenset())


def outcome_slices(problem: dict[str, Any]) -> list[Any]:
    devices = []
    for j, d in enumerate(problem["devices"]):
        body: dict[str, Any] = {
            "name": f"dev-{j}",
            "attributes": {"group": {"string": d["group"]}},
            "consumesCounters": [{"counterSet": "cs", "counters": {"memory": {"value": str(d["memory"])}}}],
        }
        if d["tainted"]:
            body["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
        devices.append(body)
    return [
        resource_slice(
            SLICE1, NODE1, {"name": POOL1, "generation": 1, "resourceSliceCount": 2}, DRIVER_A, *devices
        ),
        resource_slice(
            "counters",
            NODE1,
            {"name": POOL1, "generation": 1, "resourceSliceCount": 2},
            DRIVER_A,
            counter_sets=[{"name": "cs", "counters": {"memory": {"value": str(problem["total"])}}}],
        ),
    ]


def problem_claim(problem: dict[str, Any]) -> ResourceClaim:
    toleration: Any = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    requests = [
        request(f"req-{i}", count=count, tolerations=toleration if problem["tolerate"][i] else None)
        for i, count in enumerate(problem["counts"])
    ]
    constraints = [{problem["constraint"]: f"{DRIVER_A}/group"}] if problem["constraint"] else None
    return claim("claim-0", *requests, constraints=constraints)


def allocate_problem(problem: dict[str, Any]) -> Any:
    core = Cluster(FeatureGates.defaults(), [device_class()], outcome_slices(problem))
    return core.allocate(node(), [problem_claim(problem)])


@settings(max_examples=300, deadline=None)
@given(constrained_problems())
def test_the_search_finds_a_solution_exactly_when_one_exists(problem: dict[str, Any]) -> None:
    outcome = allocate_problem(problem)
    assert outcome.error is None
    assert (outcome.results is not None) == feasible(problem)
    if outcome.results is not None:
        chosen = [int(r.device.split("-")[1]) for r in outcome.results[0].devices.results]
        assert len(chosen) == len(set(chosen)) == sum(problem["counts"])
        assert sum(problem["devices"][j]["memory"] for j in chosen) <= problem["total"]


def decide_problem(problem: dict[str, Any], prefilter: bool) -> Any:
    """`allocate_problem` through `Cluster.decide` (the placer's path), results built from the picks."""
    from allocator.structured.cluster import Verdict

    outcome = allocate_problem(problem)
    core = Cluster(FeatureGates.defaults(), [device_class()], outcome_slices(problem))
    decision = core.decide(node(), [problem_claim(problem)], prefilter=prefilter)
    results = core.results(decision.picks) if decision.picks is not None else None
    assert (decision.verdict is Verdict.FITS) == (results is not None)
    return (decision.verdict, decision.message, [r.to_api() for r in results] if results else None), outcome


@settings(max_examples=300, deadline=None)
@given(constrained_problems())
def test_the_prefiltered_decision_equals_the_full_allocation(problem: dict[str, Any]) -> None:
    """The placer's fast path (prefilter, then the search, results built afterwards) decides as `allocate`."""
    (verdict, message, results), outcome = decide_problem(problem, prefilter=True)
    assert (verdict, message) == (outcome.verdict, outcome.message)
    assert results == ([r.to_api() for r in outcome.results] if outcome.results else None)
