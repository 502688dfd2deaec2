"""ResourceSlice create validation read as kube-apiserver 1.37 writes it: cases ported from upstream's
validation_resourceslice_test.go, and texts measured against kube-apiserver v1.37.2 (tests/differential)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from resourceapi.gates import FeatureGates
from resourceapi.validation.objects import validate_create
from resourceapi.validation.slice import validate_resource_slice

GATES = FeatureGates.defaults()
DEVICE_PATH = "spec.devices[1]"
UNION = "must specify one of: `int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`"


def good_slice(devices: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "slice"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [
                {
                    "name": f"dev-{i}",
                    "attributes": {"model": {"string": "a100"}},
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


def errors(obj: dict[str, Any], gates: FeatureGates = GATES) -> list[str]:
    return [str(e) for e in validate_resource_slice(obj, gates)]


def with_gates(**extra: bool) -> FeatureGates:
    """The default gates plus gates dra-capacity does not model (resourceapi/gates.py rejects their names)."""
    return FeatureGates(tuple(sorted({**GATES.as_dict(), **extra}.items())))


def test_a_good_slice_is_accepted_and_registered_for_simulate() -> None:
    assert errors(good_slice()) == []
    assert validate_create("ResourceSlice", good_slice()) == []


def test_metadata_name_format_is_handwritten_and_reported_first() -> None:
    s = good_slice()
    s["metadata"]["name"] = "Bad_Name"
    s["spec"]["pool"]["resourceSliceCount"] = 0
    got = errors(s)
    assert got[0].startswith('metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    assert got[1] == "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"


def test_generate_name_is_judged_as_a_prefix_and_as_the_name_it_generates() -> None:
    s = good_slice()
    s["metadata"] = {"generateName": "A"}
    got = errors(s)
    assert len(got) == 2 and all(
        e.startswith('metadata.generateName: Invalid value: "A": a lowercase') for e in got
    )
    s["metadata"] = {"generateName": "gpu-"}  # a trailing dash is masked; the generated name is valid
    assert errors(s) == []
    s["metadata"] = {}
    assert errors(s) == ["metadata.name: Required value: name or generateName is required"]


@pytest.mark.parametrize(
    ("change", "want"),
    [
        (
            {"nodeName": "node-1", "allNodes": True},
            [
                'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, '
                "`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"
            ],
        ),
        (
            {"nodeName": None},
            [
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                "`perDeviceNodeSelection` is required"
            ],
        ),
        (
            {"nodeName": "", "allNodes": True},
            ['spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string'],
        ),
        (
            {"nodeName": None, "allNodes": False, "perDeviceNodeSelection": False},
            [
                "spec.allNodes: Invalid value: false: must be either unset or set to true",
                "spec.perDeviceNodeSelection: Invalid value: false: must be either unset or set to true",
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                "`perDeviceNodeSelection` is required",
            ],
        ),
        (
            {"nodeName": None, "nodeSelector": {"nodeSelectorTerms": []}},
            [
                "spec.nodeSelector.nodeSelectorTerms: Required value: must have at least one node "
                "selector term",
                "spec.nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node "
                "selector term",
            ],
        ),
        (
            {
                "nodeName": None,
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["-1"]}]},
                        {"matchFields": [{"key": "spec.nodeName", "operator": "Exists"}]},
                    ]
                },
            },
            [
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "
                '"-1": a '
                "valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                "'.', and "
                "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                "'12345', "
                "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.nodeSelector.nodeSelectorTerms[1].matchFields[0].operator: Invalid value: "
                '"Exists": not a '
                "valid selector operator",
                "spec.nodeSelector.nodeSelectorTerms[1].matchFields[0].key: Invalid value: "
                '"spec.nodeName": not a '
                "valid field selector key",
                "spec.nodeSelector.nodeSelectorTerms: Invalid value: "
                '[{"MatchExpressions":[{"Key":"a","Operator":'
                '"In","Values":["-1"]}],"MatchFields":null},{"MatchExpressions":null,"MatchFields":[{"Key":'
                '"spec.nodeName","Operator":"Exists","Values":null}]}]: must have exactly one node '
                "selector term",
            ],
        ),
    ],
)
def test_node_selection_is_exactly_one_of_four(change: dict[str, Any], want: list[str]) -> None:
    s = good_slice()
    for key, value in change.items():
        if value is None:
            s["spec"].pop(key, None)
        else:
            s["spec"][key] = value
    assert errors(s) == want


def test_pool_and_driver() -> None:
    s = good_slice()
    s["spec"]["driver"] = ""
    s["spec"]["pool"] = {"name": "a//b", "generation": -1}
    assert errors(s) == [
        "spec.driver: Required value",
        'spec.pool.name: Invalid value: "": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
        "[a-z0-9])?)*')",
        "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
    ]


def test_devices_xor_shared_counters_and_duplicate_device_names() -> None:
    s = good_slice()
    s["spec"]["sharedCounters"] = [{"name": "set", "counters": {"mem": {"value": "1"}}}]
    s["spec"]["devices"][1]["name"] = "dev-0"
    assert errors(s) == [
        'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
        'spec.devices[1]: Duplicate value: "dev-0"',
    ]


def test_the_device_limit_is_64_with_taints_or_counter_consumption_else_128() -> None:
    s = good_slice(129)
    assert errors(s) == ["spec.devices: Too many: 129: must have at most 128 items"]
    s = good_slice(65)
    s["spec"]["devices"][3]["taints"] = [{"key": "t", "effect": "NoSchedule"}]
    assert errors(s) == ["spec.devices: Too many: 65: must have at most 64 items"]
    s["spec"]["devices"].pop()
    assert errors(s) == []


def test_attribute_keys_values_and_the_union_which_is_declarative() -> None:
    s = good_slice()
    s["spec"]["devices"][1]["attributes"] = {
        "Bad-Name": {"version": "v1.0.0"},
        "/x": {"int": 1, "bool": True},
        "x" * 100: {},
        "long": {"string": "x" * 65},
    }
    got = errors(s)
    key = "x" * 100
    cut = "x" * 47 + "..." + "x" * 46
    assert got == [
        f'{DEVICE_PATH}.attributes: Invalid value: "": the domain must not be empty',
        f'{DEVICE_PATH}.attributes: Invalid value: "Bad-Name": a valid C identifier must start with '
        "alphabetic "
        "character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or "
        "'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
        f'{DEVICE_PATH}.attributes[Bad-Name].version: Invalid value: "v1.0.0": must be a string '
        "compatible with "
        "semver.org spec 2.0.0",
        f"{DEVICE_PATH}.attributes[long].string: Too long: may not be more than 64 bytes",
        f"{DEVICE_PATH}.attributes: Too long: may not be more than 32 bytes",
        # the key is shown cut short, so the declarative union (at the whole key) does not supersede this one
        f'{DEVICE_PATH}.attributes[{cut}]: Invalid value: "": exactly one value must be specified',
        f'{DEVICE_PATH}.attributes[/x]: Invalid value: "{{int, bool}}": must specify exactly one of: `int`, '
        "`bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`",
        f'{DEVICE_PATH}.attributes[{key}]: Invalid value: "": {UNION}',
    ]


def test_list_attributes_are_dropped_while_their_gate_is_off() -> None:
    s = good_slice()
    s["spec"]["devices"][1]["attributes"] = {"versions": {"versions": ["1.0.0"]}}
    assert errors(s) == [f'{DEVICE_PATH}.attributes[versions]: Invalid value: "": {UNION}']
    assert errors(s, GATES.with_overrides(DRAListTypeAttributes=True)) == []
    s["spec"]["devices"][1]["attributes"] = {"v": {"versions": [], "strings": ["x" * 65]}}
    assert errors(s, GATES.with_overrides(DRAListTypeAttributes=True)) == [
        f"{DEVICE_PATH}.attributes[v].strings[0]: Too long: may not be more than 64 bytes",
        f"{DEVICE_PATH}.attributes[v].versions: Invalid value: []: must not be empty if specified",
    ]


def test_attributes_and_capacities_together_at_most_32() -> None:
    s = good_slice()
    s["spec"]["devices"][1]["attributes"] = {f"a{i}": {"int": i} for i in range(32)}
    assert errors(s) == [
        f"{DEVICE_PATH}: Invalid value: 33: the total number of attributes and capacities must not exceed 32"
    ]


def policy_slice(policy: dict[str, Any], value: str = "1Gi", multiple: bool = True) -> dict[str, Any]:
    s = good_slice()
    device = s["spec"]["devices"][1]
    device["capacity"] = {"cap": {"value": value, "requestPolicy": policy}}
    if multiple:
        device["allowMultipleAllocations"] = True
    return s


CAP = f"{DEVICE_PATH}.capacity[cap].requestPolicy"


@pytest.mark.parametrize(
    ("policy", "value", "want"),
    [
        (
            {"default": "10Mi", "validRange": {"min": "1Mi", "max": "100Mi", "step": "0"}},
            "1Gi",
            [f'{CAP}.validRange.step: Invalid value: "0": must be greater than zero'],
        ),
        (
            {"default": "10Mi", "validRange": {"min": "1Mi", "max": "100Mi", "step": "-1Mi"}},
            "1Gi",
            [f'{CAP}.validRange.step: Invalid value: "-1Mi": must be greater than zero'],
        ),
        (
            {"default": "1", "validValues": ["5", "10", "100"]},
            "-1",
            [
                f'{CAP}.validValues[0]: Invalid value: "5": option is larger than capacity value: -1',
                f'{CAP}.validValues[1]: Invalid value: "10": option is larger than capacity value: -1',
                f'{CAP}.validValues[2]: Invalid value: "100": option is larger than capacity value: -1',
                f'{CAP}.validValues: Invalid value: "1": default value is not valid according to the '
                "requestPolicy",
            ],
        ),
        (
            {"default": "5", "validValues": ["5"], "validRange": {"min": "10"}},
            "100",
            [
                f'{CAP}: Forbidden: exactly one policy can be specified, cannot specify "validValues" and '
                '"validRange" at the same time'
            ],
        ),
        (
            {"default": "1.05", "validRange": {"min": "1.1"}},
            "100",
            [f'{CAP}.validRange.default: Invalid value: "1050m": default is less than min: 1100m'],
        ),
        (  # 9.9 rounds up to 10 in integer mode: a duplicate
            {"default": "10", "validValues": ["9.9", "10", "100"]},
            "100",
            [f'{CAP}.validValues[1]: Duplicate value: "10"'],
        ),
        (
            {"validRange": {"min": "1"}},
            "100",
            [f"{CAP}.default: Required value: required when validRange is defined"],
        ),
        (
            {"default": "1", "validRange": {"max": "2"}},
            "100",
            [f"{CAP}.validRange.min: Required value: required when validRange is defined"],
        ),
        (  # measured: the step check is guarded by the int64 range of every bound
            {"default": "1", "validRange": {"min": "-1E-3", "step": "9223372036854775807"}},
            "3250P",
            [
                f'{CAP}.validRange.step: Invalid value: "9223372036854775807": one step '
                "9223372036854775806999e-3 "
                "is larger than capacity value: 3250P",
                f'{CAP}.validRange.min: Invalid value: "-1E-3": must be greater than or equal to 0',
            ],
        ),
        (
            {"default": "3", "validRange": {"min": "1", "max": "8", "step": "2"}},
            "8",
            [
                f'{CAP}.validRange.step: Invalid value: "8": value is not a multiple of a given step '
                "(2) from (1)",
            ],
        ),
        (  # measured: texts as written where Go keeps them, no suffix past E, int64 wrap-around
            {"default": "1", "validValues": ["1", "123456789012345678901", "123456789012345678901", "2000E"]},
            "+1",
            [
                f'{CAP}.validValues[1]: Invalid value: "123456789012345678901": option is larger than '
                "capacity "
                "value: +1",
                f'{CAP}.validValues[2]: Invalid value: "123456789012345678901": option is larger than '
                "capacity "
                "value: +1",
                f'{CAP}.validValues[3]: Invalid value: "2": option is larger than capacity value: +1',
                f'{CAP}.validValues[2]: Duplicate value: "-5670419503621182411"',
            ],
        ),
    ],
)
def test_request_policies(policy: dict[str, Any], value: str, want: list[str]) -> None:
    assert errors(policy_slice(policy, value)) == want


def test_a_request_policy_needs_multiple_allocations_and_is_dropped_without_consumable_capacity() -> None:
    s = policy_slice({"default": "1Mi", "validRange": {"min": "1Mi"}}, multiple=False)
    assert errors(s) == [f"{CAP}: Forbidden: allowMultipleAllocations must be true"]
    assert errors(s, GATES.with_overrides(DRAConsumableCapacity=False)) == []


def test_fractional_ranges_need_milli_values_with_the_fractional_gate() -> None:
    big = "9223372036854775807"
    s = policy_slice({"default": big, "validRange": {"min": "0", "step": "1m", "max": big}}, big)
    assert errors(s) == []
    assert errors(s, GATES.with_overrides(DRAFractionalCapacityRange=True)) == [
        f'{CAP}.validRange.default: Invalid value: "{big}": value cannot be represented as a milli value',
        f'{CAP}.validRange.max: Invalid value: "{big}": value cannot be represented as a milli value',
    ]


def test_taints_handwritten_before_declarative_effects() -> None:
    s = good_slice()
    s["spec"]["devices"][0]["taints"] = [{"key": "bad key", "effect": "PreferNoSchedule"}, {"key": "t"}]
    s["spec"]["devices"][1]["name"] = "Dev"
    assert errors(s) == [
        'spec.devices[0].taints[0].key: Invalid value: "bad key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'spec.devices[1].name: Invalid value: "Dev": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
        "'my-name',  "
        "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'spec.devices[0].taints[0].effect: Unsupported value: "PreferNoSchedule": supported values: '
        '"NoExecute", "NoSchedule", "None"',
        "spec.devices[0].taints[1].effect: Required value",
    ]
    s = good_slice()
    s["spec"]["devices"][0]["taints"] = [{"key": "t", "effect": "NoSchedule"}] * 17
    assert errors(s) == ["spec.devices[0].taints: Too many: 17: must have at most 16 items"]
    assert errors(s, GATES.with_overrides(DRADeviceTaints=False)) == []


def test_per_device_node_selection() -> None:
    s = good_slice()
    del s["spec"]["nodeName"]
    s["spec"]["perDeviceNodeSelection"] = True
    s["spec"]["devices"][0]["nodeName"] = ""
    s["spec"]["devices"][1].update({"nodeName": "node-1", "allNodes": True})
    assert errors(s) == [
        'spec.devices[0].nodeName: Invalid value: "": must not be empty',
        "spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is "
        "required "
        "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        'spec.devices[1]: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
        "`nodeSelector`, "
        "or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
    ]
    s = good_slice()
    s["spec"]["devices"][1]["allNodes"] = True
    assert errors(s) == [
        "spec.devices[1]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
    ]


def counters_slice(sets: list[dict[str, Any]]) -> dict[str, Any]:
    s = good_slice()
    del s["spec"]["devices"]
    s["spec"]["sharedCounters"] = sets
    return s


def test_shared_counters_names_and_counters_are_declarative() -> None:
    s = counters_slice(
        [
            {"name": "set", "counters": {"mem": {"value": "1Gi"}}},
            {"name": "set", "counters": {"Bad": {"value": "1000000P"}}},
            {"name": ""},
        ]
    )
    assert errors(s) == [
        'spec.sharedCounters[1]: Duplicate value: {"name":"set","counters":{"Bad":{"value":"1"}}}',
        'spec.sharedCounters[1].counters: Invalid value: "Bad": a lowercase RFC 1123 label must consist '
        "of lower "
        "case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
        "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        "spec.sharedCounters[2].name: Required value",
        "spec.sharedCounters[2].counters: Required value",
    ]


def test_counter_limits() -> None:
    assert errors(
        counters_slice([{"name": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(9)])
    ) == ["spec.sharedCounters: Too many: 9: must have at most 8 items"]
    many = {f"c{i}": {"value": "1"} for i in range(33)}
    assert errors(counters_slice([{"name": "s", "counters": many}])) == [
        "spec.sharedCounters[0].counters: Too many: 33: must have at most 32 items"
    ]
    name = "x" * 64
    assert errors(counters_slice([{"name": "s", "counters": {name: {"value": "1"}}}])) == [
        f'spec.sharedCounters[0].counters: Invalid value: "{name}": must be no more than 63 bytes'
    ]


def test_counter_consumption() -> None:
    s = good_slice()
    s["spec"]["devices"][1]["consumesCounters"] = [{"counterSet": "a", "counters": {"c": {"value": "1"}}}] * 3
    assert errors(s) == [f"{DEVICE_PATH}.consumesCounters: Too many: 3: must have at most 2 items"]
    s["spec"]["devices"][1]["consumesCounters"] = [
        {"counterSet": "a", "counters": {"c": {"value": "1"}}, "compatibilityGroups": ["dropped"]},
        {"counterSet": "a"},
    ]
    assert errors(s) == [
        f'{DEVICE_PATH}.consumesCounters[1]: Duplicate value: {{"counterSet":"a"}}',
        f"{DEVICE_PATH}.consumesCounters[1].counters: Required value",
    ]


def test_binding_conditions() -> None:
    s = good_slice()
    s["spec"]["devices"][1]["bindingFailureConditions"] = ["failed"]
    assert errors(s) == [
        f"{DEVICE_PATH}.bindingConditions: Invalid value: null: bindingConditions are required to use "
        "bindingFailureConditions"
    ]
    s["spec"]["devices"][1]["bindingConditions"] = ["a", "b", "c", "d", "failed"]
    assert errors(s) == [
        f'{DEVICE_PATH}.bindingFailureConditions[0]: Invalid value: "failed": bindingFailureConditions '
        "must not "
        "overlap with bindingConditions",
        f"{DEVICE_PATH}.bindingConditions: Too many: 5: must have at most 4 items",
    ]


def test_fields_of_disabled_features_are_dropped_before_validation() -> None:
    s = good_slice()
    s["spec"]["partitionTypeAttribute"] = "not a name"
    s["spec"]["skipNodeOperations"] = ["NodePrepareResources", "Bogus"]
    s["spec"]["devices"][1]["nodeAllocatableResources"] = {"bogus": {}}
    before = copy.deepcopy(s)
    assert errors(s) == []
    assert s == before  # the input is not modified


def test_node_allocatable_resources_when_their_gate_is_on() -> None:
    s = good_slice()
    s["spec"]["devices"][1]["nodeAllocatableResources"] = {
        "cpu": {"mapping": {"capacityKey": "cores", "deviceMultiplier": "-1"}},
        "gpu": {},
        "memory": {"overhead": {}},
    }
    assert errors(s, with_gates(DRANodeAllocatableResources=True)) == [
        f'{DEVICE_PATH}.nodeAllocatableResources[cpu].mapping.capacityKey: Not found: "cores"',
        f"{DEVICE_PATH}.nodeAllocatableResources[cpu].mapping.capacityMultiplier: Required value: "
        "capacityMultiplier is required when capacityKey is set",
        f'{DEVICE_PATH}.nodeAllocatableResources[cpu].mapping.deviceMultiplier: Invalid value: "-1": must be '
        "positive",
        f'{DEVICE_PATH}.nodeAllocatableResources[gpu]: Invalid value: "gpu": must be a node allocatable '
        "resource "
        "name",
        f"{DEVICE_PATH}.nodeAllocatableResources[gpu]: Required value: at least one of mapping or "
        "overhead must "
        "be set",
        f'{DEVICE_PATH}.nodeAllocatableResources[memory].overhead: Invalid value: "": at least one of '
        "perPod or "
        "perContainer must be set",
        f"{DEVICE_PATH}.nodeAllocatableResources[cpu].mapping: Invalid value: "
        f'"{{capacityKey, deviceMultiplier}}": '
        "must specify exactly one of: `capacityKey`, `deviceMultiplier`",
    ]


def test_partition_type_attribute_when_its_gate_is_on() -> None:
    gates = with_gates(DRAPartitionableDevicesType=True)
    s = good_slice()
    s["spec"]["partitionTypeAttribute"] = "gpu.example.com/type"
    assert errors(s, gates) == [
        'spec.partitionTypeAttribute: Invalid value: "gpu.example.com/type": may only be set on a slice '
        "which "
        "declares devices that consume counters"
    ]
    s["spec"]["devices"][0]["consumesCounters"] = [{"counterSet": "a", "counters": {"c": {"value": "1"}}}]
    s["spec"]["devices"][1]["consumesCounters"] = [{"counterSet": "a", "counters": {"c": {"value": "1"}}}]
    s["spec"]["devices"][0]["attributes"] = {"type": {"string": "1g"}}  # bare, in the driver's domain
    s["spec"]["devices"][1]["attributes"] = {"gpu.example.com/type": {"int": 1}}
    assert errors(s, gates) == [
        'spec.devices[1].attributes[gpu.example.com/type]: Invalid value: {"IntValue":1,"BoolValue":null,'
        '"StringValue":null,"VersionValue":null,"IntValues":null,"BoolValues":null,"StringValues":null,'
        '"VersionValues":null}: must be a string value because `partitionTypeAttribute` names this attribute'
    ]


def test_skip_node_operations_when_their_gate_is_on() -> None:
    s = good_slice()
    s["spec"]["skipNodeOperations"] = ["NodePrepareResources", "Bogus", "Bogus"]
    assert errors(s, with_gates(DRAOptionalNodeOperations=True)) == [
        'spec.skipNodeOperations: Invalid value: ["NodePrepareResources","Bogus","Bogus"]: '
        "NodePrepareResources "
        "cannot be skipped unless NodeUnprepareResources is also skipped",
        'spec.skipNodeOperations[2]: Duplicate value: "Bogus"',
        'spec.skipNodeOperations[1]: Unsupported value: "Bogus": supported values: "*", '
        '"NodePrepareResources", '
        '"NodeUnprepareResources"',
        'spec.skipNodeOperations[2]: Unsupported value: "Bogus": supported values: "*", '
        '"NodePrepareResources", '
        '"NodeUnprepareResources"',
    ]


def test_equal_handwritten_errors_are_reported_once() -> None:
    s = good_slice()
    s["metadata"]["labels"] = {"a": "x" * 64, "b": "x" * 64}
    assert errors(s) == [f'metadata.labels: Invalid value: "{"x" * 64}": must be no more than 63 bytes']


def test_owner_references_and_finalizers() -> None:
    s = good_slice()
    s["metadata"]["ownerReferences"] = [
        {"apiVersion": "a/b/c", "kind": "Node", "name": "n", "uid": "u", "controller": True},
        {"apiVersion": "v1", "kind": "Event", "name": "", "uid": "u", "controller": True},
        {
            "apiVersion": "v1",
            "kind": "Event",
            "name": "",
            "uid": "u",
            "controller": True,
        },  # dropped: a repeat
    ]
    s["metadata"]["finalizers"] = ["orphan", "foregroundDeletion", "custom"]
    refs = (
        '[{"apiVersion":"a/b/c","kind":"Node","name":"n","uid":"u","controller":true},'
        '{"apiVersion":"v1","kind":"Event","name":"","uid":"u","controller":true}]'
    )
    assert errors(s) == [
        'metadata.ownerReferences[0].apiVersion: Invalid value: "a/b/c": must be <group>/<version> or '
        "<version>",
        "metadata.ownerReferences[1].name: Required value: must not be empty",
        'metadata.ownerReferences[1]: Invalid value: {"apiVersion":"v1","kind":"Event","name":"","uid":"u",'
        '"controller":true}: /v1, Kind=Event is disallowed from being an owner',
        f"metadata.ownerReferences: Invalid value: {refs}: Only one reference can have Controller set to "
        'true. Found "true" in references for Node/n and Event/',
        'metadata.finalizers: Invalid value: ["orphan","foregroundDeletion","custom"]: finalizer orphan and '
        "foregroundDeletion cannot be both set",
        'metadata.finalizers[2]: Invalid value: "custom": name is neither a standard finalizer name nor is '
        "it fully qualified",
    ]
