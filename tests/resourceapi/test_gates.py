"""Feature gates parse like a Kubernetes component's `--feature-gates` and default to the product defaults."""

from __future__ import annotations

import pytest

from resourceapi.gates import (
    DRA_ADMIN_ACCESS,
    DRA_CONSUMABLE_CAPACITY,
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_EXTENDED_RESOURCE,
    DRA_EXTENDED_RESOURCE_CAPACITY,
    DRA_FRACTIONAL_CAPACITY_RANGE,
    DRA_LIST_TYPE_ATTRIBUTES,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
    KNOWN_GATES,
    PRODUCT_DEFAULTS,
    FeatureGates,
    GateError,
)
from resourceapi.releases import release_warnings

KNOWN_LIST = ", ".join(KNOWN_GATES)
LOCK_TAIL = "(its components refuse to start with it set otherwise)"


def test_known_gates_are_the_names_feature_gates_accepts() -> None:
    assert set(KNOWN_GATES) == {
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "DRAExtendedResource",
        "DRAExtendedResourceCapacity",
        "DRAPartitionableDevices",
        "DRAPrioritizedList",
        "DRAAdminAccess",
        "DRADeviceTaints",
        "DRADeviceTaintRules",
        "DRAListTypeAttributes",
        "DRAFractionalCapacityRange",
        "DRAResourceClaimDeviceStatus",
    }


def test_product_defaults_are_kubernetes_1_37_plus_extended_resource_capacity() -> None:
    assert PRODUCT_DEFAULTS == {
        "DRAAdminAccess": True,
        "DRAPrioritizedList": True,
        "DRADeviceTaints": True,
        "DRADeviceTaintRules": True,
        "DRAPartitionableDevices": True,
        "DRAConsumableCapacity": True,
        "DRAExtendedResource": True,
        "DRAListTypeAttributes": False,
        "DRAFractionalCapacityRange": False,
        "DRADeviceBindingConditions": True,
        "DRAResourceClaimDeviceStatus": True,
        "DRAExtendedResourceCapacity": True,
    }


@pytest.mark.parametrize("spec", [None, "", " ", ",,"])
def test_empty_spec_gives_product_defaults(spec: str | None) -> None:
    assert FeatureGates.parse(spec).as_dict() == PRODUCT_DEFAULTS


def test_defaults_equal_parse_of_nothing() -> None:
    assert FeatureGates.defaults() == FeatureGates.parse("")


def test_parse_overrides_named_gates_only() -> None:
    gates = FeatureGates.parse("DRAExtendedResource=false,DRAListTypeAttributes=true")
    assert gates.enabled(DRA_EXTENDED_RESOURCE) is False
    assert gates.enabled(DRA_LIST_TYPE_ATTRIBUTES) is True
    assert gates.enabled(DRA_CONSUMABLE_CAPACITY) is True


def test_parse_trims_spaces_around_names_and_values() -> None:
    assert FeatureGates.parse(" DRAConsumableCapacity = false , ").enabled(DRA_CONSUMABLE_CAPACITY) is False


def test_last_entry_for_a_gate_wins() -> None:
    gates = FeatureGates.parse("DRAAdminAccess=false,DRAAdminAccess=true")
    assert gates.enabled(DRA_ADMIN_ACCESS) is True


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        *[(v, True) for v in ("true", "True", "TRUE", "t", "T", "1")],
        *[(v, False) for v in ("false", "False", "FALSE", "f", "F", "0")],
    ],
)
def test_values_follow_go_parse_bool(value: str, expected: bool) -> None:
    assert FeatureGates.parse(f"DRAConsumableCapacity={value}").enabled(DRA_CONSUMABLE_CAPACITY) is expected


def test_unknown_gate_names_it_and_lists_known_gates() -> None:
    with pytest.raises(GateError) as exc:
        FeatureGates.parse("DRAAdminAccess=true,NoSuchGate=true")
    assert str(exc.value) == f"unrecognized feature gate: NoSuchGate (known gates: {KNOWN_LIST})"


@pytest.mark.parametrize("value", ["yes", "on", "tRuE", "", "2"])
def test_non_boolean_value_names_the_entry_and_lists_known_gates(value: str) -> None:
    with pytest.raises(GateError) as exc:
        FeatureGates.parse(f"DRAConsumableCapacity={value}")
    assert str(exc.value) == (
        f"invalid value of DRAConsumableCapacity={value}: must be true or false (known gates: {KNOWN_LIST})"
    )


def test_entry_without_equals_names_the_entry_and_lists_known_gates() -> None:
    with pytest.raises(GateError) as exc:
        FeatureGates.parse("DRAConsumableCapacity")
    assert "'DRAConsumableCapacity'" in str(exc.value)
    assert str(exc.value).endswith(f"(known gates: {KNOWN_LIST})")


def test_gate_names_are_case_sensitive() -> None:
    with pytest.raises(GateError):
        FeatureGates.parse("draconsumablecapacity=true")


def test_no_gate_is_locked() -> None:
    gates = FeatureGates.parse("DRAExtendedResource=false,DRAAdminAccess=false")
    assert (gates.enabled(DRA_EXTENDED_RESOURCE), gates.enabled(DRA_ADMIN_ACCESS)) == (False, False)


@pytest.mark.parametrize(
    ("release", "gate", "expected"),
    [
        ("1.34", DRA_CONSUMABLE_CAPACITY, False),
        ("1.35", DRA_EXTENDED_RESOURCE, False),
        ("1.36", DRA_CONSUMABLE_CAPACITY, True),
        ("1.37", DRA_EXTENDED_RESOURCE, True),
        ("1.37", DRA_FRACTIONAL_CAPACITY_RANGE, False),
        ("1.37", DRA_EXTENDED_RESOURCE_CAPACITY, False),  # KEP-6406 is in no release
        ("1.34", DRA_LIST_TYPE_ATTRIBUTES, False),  # unknown to the release: off
        # kube_features.go: DRADeviceBindingConditions alpha off 1.34, beta on 1.36, GA 1.38;
        # DRAResourceClaimDeviceStatus beta on 1.33, GA 1.37
        ("1.34", DRA_DEVICE_BINDING_CONDITIONS, False),
        ("1.35", DRA_DEVICE_BINDING_CONDITIONS, False),
        ("1.36", DRA_DEVICE_BINDING_CONDITIONS, True),
        ("1.37", DRA_DEVICE_BINDING_CONDITIONS, True),
        ("1.38", DRA_DEVICE_BINDING_CONDITIONS, True),
        ("1.34", DRA_RESOURCE_CLAIM_DEVICE_STATUS, True),
        ("1.36", DRA_RESOURCE_CLAIM_DEVICE_STATUS, True),
        ("1.38", DRA_RESOURCE_CLAIM_DEVICE_STATUS, True),
    ],
)
def test_release_defaults(release: str, gate: str, expected: bool) -> None:
    assert FeatureGates.for_release(release).enabled(gate) is expected


def test_unknown_release_is_an_error() -> None:
    with pytest.raises(GateError) as exc:
        FeatureGates.for_release("1.20")
    assert "known: 1.34, 1.35, 1.36, 1.37" in str(exc.value)


def test_with_overrides_changes_only_the_named_gate() -> None:
    base = FeatureGates.defaults()
    changed = base.with_overrides(DRAConsumableCapacity=False)
    assert changed.enabled(DRA_CONSUMABLE_CAPACITY) is False
    assert {k: v for k, v in changed.as_dict().items() if k != DRA_CONSUMABLE_CAPACITY} == {
        k: v for k, v in base.as_dict().items() if k != DRA_CONSUMABLE_CAPACITY
    }


def test_gates_are_hashable_and_equal_by_value() -> None:
    assert len({FeatureGates.defaults(), FeatureGates.parse("DRAAdminAccess=true")}) == 1


def test_str_round_trips_through_parse() -> None:
    gates = FeatureGates.parse("DRAExtendedResource=false")
    assert FeatureGates.parse(str(gates)) == gates


def test_enabled_on_an_unknown_name_raises_key_error() -> None:
    with pytest.raises(KeyError):
        FeatureGates.defaults().enabled("Nope")


@pytest.mark.parametrize(
    ("release", "spec", "warned"),
    [
        ("1.36", "DRADeviceBindingConditions=false,DRAResourceClaimDeviceStatus=false", []),
        ("1.37", "DRADeviceBindingConditions=false", []),
        ("1.37", "DRAResourceClaimDeviceStatus=false", [DRA_RESOURCE_CLAIM_DEVICE_STATUS]),
        ("1.38", "DRADeviceBindingConditions=false", [DRA_DEVICE_BINDING_CONDITIONS]),
        ("1.38", "DRAResourceClaimDeviceStatus=false", [DRA_RESOURCE_CLAIM_DEVICE_STATUS]),
    ],
)
def test_binding_condition_gates_are_locked_as_their_release_locks_them(
    release: str, spec: str, warned: list[str]
) -> None:
    """DRAResourceClaimDeviceStatus is locked on from 1.37, DRADeviceBindingConditions in 1.38
    (kube_features.go LockToDefault): set against the lock, a warning; the gate still takes the value."""
    gates = FeatureGates.parse(spec, release)
    warnings = [w for w in release_warnings(gates) if "locked" in w]
    assert warnings == [f"{g} is locked to true in Kubernetes {release} " + LOCK_TAIL for g in warned]
    assert not gates.enabled(spec.partition("=")[0])
