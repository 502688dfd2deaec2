"""DeviceTaintRules as kube-scheduler's ResourceSlice tracker applies them (resourceslice/tracker
`applyPatches`, v0.37.2): the selector by driver, pool and device name, the taint appended to each matched
device, the claim's tolerations, and the gates (DRADeviceTaintRules on by default only from 1.37)."""

from __future__ import annotations

from typing import Any

import pytest
from support.dra_objects import (
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    POOL2,
    SLICE1,
    SLICE2,
    claim,
    device,
    device_class,
    gates,
    request,
    resource_slice,
    run,
)

from allocator.structured.devicetaints import patch_slice, patch_slices, rules_apply
from localcluster.objects import make_taint_rule
from resourceapi.api.resource_v1 import DeviceTaintRule, ResourceSlice
from resourceapi.gates import DRA_DEVICE_TAINT_RULES, DRA_DEVICE_TAINTS, FeatureGates

UNHEALTHY = "example.com/unhealthy"


def rule(name: str = "r", **select: str | None) -> DeviceTaintRule:
    return DeviceTaintRule.model_validate(make_taint_rule(name).select(**select).obj())


def two_device_slice() -> ResourceSlice:
    return resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))


def taint_keys(s: ResourceSlice) -> dict[str, list[str]]:
    return {d.name: [t.key for t in d.taints or []] for d in s.spec.devices or []}


@pytest.mark.parametrize(
    ("select", "tainted"),
    [
        ({}, [DEVICE1, DEVICE2]),  # the empty selector matches all devices
        ({"driver": DRIVER_A}, [DEVICE1, DEVICE2]),
        ({"driver": DRIVER_B}, []),
        ({"pool": POOL1}, [DEVICE1, DEVICE2]),
        ({"pool": POOL2}, []),
        ({"device": DEVICE2}, [DEVICE2]),
        ({"driver": DRIVER_A, "pool": POOL1, "device": DEVICE1}, [DEVICE1]),
        ({"driver": DRIVER_A, "pool": POOL2, "device": DEVICE1}, []),
    ],
)
def test_the_selector_matches_every_set_field(select: dict[str, str], tainted: list[str]) -> None:
    patched = patch_slice(two_device_slice(), [rule(**select)])
    assert [name for name, keys in taint_keys(patched).items() if keys == [UNHEALTHY]] == tainted


def test_a_rule_without_a_selector_taints_nothing_and_the_input_is_never_modified() -> None:
    original = two_device_slice()
    none = DeviceTaintRule.model_validate(make_taint_rule("none").no_selector().obj())
    assert patch_slice(original, [none]) is original
    patched = patch_slice(original, [rule()])
    assert patched is not original
    assert taint_keys(original) == {DEVICE1: [], DEVICE2: []}


def test_rule_taints_follow_the_device_s_own_in_rule_order() -> None:
    own = resource_slice(
        SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[{"key": "own", "effect": "NoSchedule"}])
    )
    b = DeviceTaintRule.model_validate(make_taint_rule("b").taint("b-key").obj())
    a = DeviceTaintRule.model_validate(make_taint_rule("a").taint("a-key").obj())
    [patched] = patch_slices([own], [b, a], FeatureGates.defaults())
    assert taint_keys(patched) == {DEVICE1: ["own", "a-key", "b-key"]}


@pytest.mark.parametrize(
    ("release", "overrides", "applies"),
    [
        ("1.37", {}, True),
        ("1.38", {}, True),
        ("1.36", {}, False),  # beta, off by default
        ("1.36", {DRA_DEVICE_TAINT_RULES: True}, True),
        ("1.37", {DRA_DEVICE_TAINT_RULES: False}, False),
        ("1.37", {DRA_DEVICE_TAINTS: False}, False),  # the rules need the taints
    ],
)
def test_rules_apply_by_the_gates(release: str, overrides: dict[str, bool], applies: bool) -> None:
    g = FeatureGates.for_release(release, overrides)
    assert rules_apply(g) is applies
    [patched] = patch_slices([two_device_slice()], [rule()], g)
    assert bool(taint_keys(patched)[DEVICE1]) is applies


def _allocate(
    rules: list[DeviceTaintRule], tolerations: list[dict[str, Any]] | None = None, **g: bool
) -> Any:
    feature_gates = gates(**g)
    slices = patch_slices([two_device_slice()], rules, feature_gates)
    extra = {"tolerations": tolerations} if tolerations is not None else {}
    return run([claim("c", request("r", **extra))], [device_class()], slices, feature_gates=feature_gates)


def _devices(outcome: Any) -> list[str] | None:
    if outcome.results is None:
        return None
    return [r.device for res in outcome.results for r in res.devices.results]


def test_a_tainted_device_is_skipped_and_a_fully_tainted_node_does_not_fit() -> None:
    assert _devices(_allocate([rule(device=DEVICE1)])) == [DEVICE2]
    assert _devices(_allocate([rule()])) is None


@pytest.mark.parametrize(
    ("toleration", "allowed"),
    [
        ({"key": UNHEALTHY, "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),  # no key, Exists: every taint
        ({"key": UNHEALTHY, "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": UNHEALTHY, "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": UNHEALTHY, "operator": "Equal", "value": ""}, True),
        ({"key": UNHEALTHY, "operator": "Equal", "value": "x"}, False),
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_the_claim_s_tolerations_are_honoured(toleration: dict[str, Any], allowed: bool) -> None:
    outcome = _allocate([rule()], [toleration])
    assert (_devices(outcome) == [DEVICE1]) is allowed


def test_effect_none_blocks_nothing_and_no_execute_blocks_as_no_schedule_does() -> None:
    none = DeviceTaintRule.model_validate(make_taint_rule("n").taint(UNHEALTHY, "None").obj())
    assert _devices(_allocate([none])) == [DEVICE1]
    execute = DeviceTaintRule.model_validate(make_taint_rule("x").taint(UNHEALTHY, "NoExecute").obj())
    assert _devices(_allocate([execute])) is None


def test_with_the_rules_gate_off_a_rule_changes_nothing() -> None:
    assert _devices(_allocate([rule()], **{DRA_DEVICE_TAINT_RULES: False})) == [DEVICE1]


def test_a_second_slice_of_another_pool_is_not_touched() -> None:
    other = resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE1))
    patched = patch_slices([two_device_slice(), other], [rule(pool=POOL1)], FeatureGates.defaults())
    assert patched[1] is other
