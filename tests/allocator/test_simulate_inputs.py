"""simulate's input checks, as the API server checks the kinds simulate reads: structure (resourceapi's
field schema), ResourceSlice/ResourceClaim/Pod validation rules that change what simulate computes, and
unknown fields (warnings; errors under --strict)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
from support.simulate_cli import run_simulate, write_manifests
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from allocator.simulate.inputs import claim_status_errors
from localcluster.objects import make_claim, make_slice


def _base(tmp_path: Path) -> str:
    return write_manifests(tmp_path, "base.yaml", gpu_class(), node("n1"))


def _slice(**spec: Any) -> dict[str, Any]:
    raw = gpu_slice("n1", 2).to_api()
    raw["spec"].update(spec)
    return {**raw, "spec": {k: v for k, v in raw["spec"].items() if v is not None}}


Refuse = Callable[[dict[str, Any]], str]


@pytest.fixture
def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Refuse:
    """simulate's error for a cluster holding `obj`, which it must refuse as an input error."""
    return lambda obj: _refused(tmp_path, capsys, obj)


class OnePod(Protocol):
    def __call__(self, *objs: Any, strict: bool = False) -> tuple[int, str, str]: ...


@pytest.fixture
def one_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> OnePod:
    """simulate (`strict`: --strict) of pod `p` asking a share, on the class, node n1 and `objs` (c.yaml)."""

    def run(*objs: Any, strict: bool = False) -> tuple[int, str, str]:
        cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), node("n1"), *objs)
        pods = write_manifests(tmp_path, "p.yaml", pod("p", {GPU_SHARED: 1}))
        return run_simulate(capsys, *(["--strict"] if strict else []), "-f", cluster, "-f", pods)

    return run


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], obj: dict[str, Any]) -> str:
    bad = write_manifests(tmp_path, "bad.yaml", obj)
    code, out, err = run_simulate(
        capsys, "-f", _base(tmp_path), "-f", bad, "-f", write_manifests(tmp_path, "p.yaml", pod("p"))
    )
    assert code == 2 and out == ""
    return err.strip()


# --- ResourceSlice validation (pkg/apis/resource/validation/validation.go, validateResourceSliceSpec) ------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"nodeName": None},
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required",
        ),
        (
            {"allNodes": True},
            'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, '
            "`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
        ),
        (
            {"nodeName": None, "allNodes": False},
            "spec.allNodes: Invalid value: false: must be either unset or set to true",
        ),
        (
            {"sharedCounters": [{"name": "s", "counters": {"mem": {"value": "1"}}}]},
            'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
        ),
        (
            {"pool": {"name": "n1", "generation": 1, "resourceSliceCount": 0}},
            "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        ),
        ({"driver": None}, "spec.driver: Required value"),
    ],
    ids=[
        "no-node-selection",
        "two-node-selections",
        "allNodes-false",
        "counters-and-devices",
        "count-0",
        "driver",
    ],
)
def test_slices_the_api_server_refuses_are_input_errors(
    refused: Refuse, spec: dict[str, Any], expected: str
) -> None:
    err = refused(_slice(**spec))
    assert err.endswith(f'ResourceSlice "n1-gpu.nvidia.com": {expected}')


def test_per_device_node_selection_needs_a_choice_on_every_device(refused: Refuse) -> None:
    raw = _slice(nodeName=None, perDeviceNodeSelection=True)
    raw["spec"]["devices"][0]["nodeName"] = "n1"
    err = refused(raw)
    assert err.endswith(
        "spec.devices[1]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is "
        "required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
    )


def test_a_v1_slice_with_the_v1beta1_basic_wrapper_is_refused(refused: Refuse) -> None:
    """resource.k8s.io/v1 has no `basic`: the API server would drop (or, strict, refuse) it, leaving devices
    without attributes or capacity. simulate refuses it, saying why."""
    raw = _slice()
    device = raw["spec"]["devices"][0]
    raw["spec"]["devices"][0] = {"name": device["name"], "basic": {"capacity": device["capacity"]}}
    err = refused(raw)
    assert (
        'ResourceSlice "n1-gpu.nvidia.com": spec.devices[0].basic: unknown field: this is the v1beta1 shape'
        in err
    )


def test_a_counter_set_in_another_slice_of_the_pool_resolves(one_pod: OnePod) -> None:
    """Since 1.35 sharedCounters may sit in their own slice of the pool; the device's reference resolves
    across slices (GatherPools/buildPool), so the pod is bound."""
    counter_set = {"name": "gpu-mem", "counters": {"memory": {"value": "80Gi"}}}
    counters = make_slice("n1").name("counters").pool("n1", 2).counters([counter_set]).obj()
    devices = _slice(pool={"name": "n1", "generation": 1, "resourceSliceCount": 2})
    for d in devices["spec"]["devices"]:
        d["consumesCounters"] = [{"counterSet": "gpu-mem", "counters": {"memory": {"value": "40Gi"}}}]
    code, out, _ = one_pod(counters, devices)
    assert code == 0 and json.loads(out)["pods"][0]["result"] == "bound"


def test_a_counter_set_missing_from_the_pool_is_a_per_claim_outcome(one_pod: OnePod) -> None:
    """A reference no slice of the pool resolves makes the pool invalid (`counter set X not found`), an
    allocation outcome on that node, not an input error (another slice may be on its way)."""
    devices = _slice()
    for d in devices["spec"]["devices"]:
        d["consumesCounters"] = [{"counterSet": "gone", "counters": {"memory": {"value": "40Gi"}}}]
    code, out, _ = one_pod(devices)
    (entry,) = json.loads(out)["pods"]
    assert code == 0 and entry["result"] == "unschedulable"
    assert "invalid resource pools were encountered" in entry["reason"]


# --- ResourceClaim and Pod validation -----------------------------------------------------------------------


def _claim(**request: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", **request}]}},
    }


def _with_status(status: dict[str, Any]) -> dict[str, Any]:
    return {**_claim(exactly={"deviceClassName": "gpu"}), "status": status}


RESULT_NIC = {"request": "nic", "driver": "gpu.example.com", "pool": "p", "device": "d"}
CLAIM_REFUSALS = {
    "claim_request_needs_exactly_one_of_exactly_or_first_available": (
        _claim(),
        'ResourceClaim "default/c": spec.devices.requests[0]: Required value: exactly one of `exactly` or '
        "`firstAvailable` is required",
    ),
    "claim_exact_request_needs_a_class": (
        _claim(exactly={"count": 1}),
        'ResourceClaim "default/c": spec.devices.requests[0].exactly.deviceClassName: Required value',
    ),
    # the status is judged as a status update of the claim from unallocated: a reservation needs an allocation
    "a_claim_status_the_api_server_would_refuse_is_an_input_error": (
        _with_status({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}),
        'ResourceClaim "default/c": status.reservedFor: Forbidden: may not be specified when `allocated` is '
        "not set",
    ),
    "a_claim_status_naming_no_request_of_the_claim_is_an_input_error": (
        _with_status({"allocation": {"devices": {"results": [RESULT_NIC]}}}),
        'status.allocation.devices.results[0].request: Invalid value: "nic": must be the name of a request '
        "in the claim or the name of a request and a subrequest separated by '/'",
    ),
}


@pytest.mark.parametrize(("claim", "expected"), CLAIM_REFUSALS.values(), ids=CLAIM_REFUSALS)
def test_claims_the_api_server_refuses_are_input_errors(
    refused: Refuse, claim: dict[str, Any], expected: str
) -> None:
    assert refused(claim).endswith(expected)


def test_a_deleted_claims_reservations_are_committed_state(tmp_path: Path) -> None:
    # written before the deletion began: not "new entries while deletionTimestamp is set"
    claim = _claim(exactly={"deviceClassName": "gpu"})
    claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d"}
    claim["status"] = {
        "allocation": {"devices": {"results": [result]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}],
    }
    assert claim_status_errors(claim) == []


POD_REFUSALS = {
    "topology_spread_max_skew_must_be_positive": (
        None,
        {
            "topologySpreadConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        },
        'Pod "default/q": spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: '
        "must be greater than zero",
    ),
    "topology_spread_when_unsatisfiable_must_be_known": (
        None,
        {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Never"}]},
        'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Never": supported values: '
        '"DoNotSchedule", "ScheduleAnyway"',
    ),
    # Pod-level resources validation: pod-level requests >= the aggregate of container requests.
    "pod_level_requests_must_cover_the_containers": (
        {"cpu": "2"},
        {"resources": {"requests": {"cpu": "1"}}},
        'Pod "default/q": spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to '
        "aggregate container requests of 2",
    ),
}


@pytest.mark.parametrize(("requests", "spec", "expected"), POD_REFUSALS.values(), ids=POD_REFUSALS)
def test_pods_the_api_server_refuses_are_input_errors(
    refused: Refuse, requests: dict[str, str] | None, spec: dict[str, Any], expected: str
) -> None:
    assert refused(pod("q", requests, **spec).to_api()).endswith(expected)


def test_pod_level_resources_name_only_supported_resources(refused: Refuse) -> None:
    err = refused(pod("q", resources={"requests": {"nvidia.com/gpu": "1"}}).to_api())
    assert 'spec.resources.requests[nvidia.com/gpu]: Unsupported value: "nvidia.com/gpu"' in err


# --- unknown fields -----------------------------------------------------------------------------------------


def _typo_claim() -> dict[str, Any]:
    claim = _claim(
        exactly={"deviceClassName": "gpu.nvidia.com-shared-1", "selector": [{"cel": {"expression": "true"}}]}
    )
    return claim


def test_unknown_fields_are_warnings_with_file_document_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claims = write_manifests(tmp_path, "claims.yaml", _typo_claim())
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), node("n1"), gpu_slice("n1", 1))
    code, out, err = run_simulate(capsys, "-f", cluster, "-f", claims)
    assert code == 0 and json.loads(out)["result"] == "allocated"
    assert err == (
        f'{claims}: document 1: ResourceClaim "default/c": warning: unknown field '
        '"spec.devices.requests[0].exactly.selector"\n'
    )


def test_unknown_fields_are_errors_under_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claims = write_manifests(tmp_path, "claims.yaml", _typo_claim())
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), node("n1"), gpu_slice("n1", 1))
    code, out, err = run_simulate(capsys, "--strict", "-f", cluster, "-f", claims)
    assert code == 2 and out == ""
    assert err.strip().endswith(
        'ResourceClaim "default/c": strict decoding error: unknown field '
        '"spec.devices.requests[0].exactly.selector"'
    )


def test_the_kep_field_is_a_known_device_class_field(one_pod: OnePod) -> None:
    """extendedResourceCapacityRequests (KEP-6406) is newer than the generated schema; it is known."""
    code, _, err = one_pod(gpu_slice("n1", 1), strict=True)
    assert code == 0 and err == ""


def test_an_unknown_key_inside_the_kep_field_is_a_warning_and_a_strict_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The KEP-6406 field is a CapacityRequirements (only `requests`), checked like every other field."""
    dc = gpu_class().to_api()
    dc["spec"]["extendedResourceCapacityRequests"]["limits"] = {}
    cluster = write_manifests(tmp_path, "c.yaml", dc, node("n1"), gpu_slice("n1", 1))
    pods = write_manifests(tmp_path, "p.yaml", pod("p", {GPU_SHARED: 1}))
    code, _, err = run_simulate(capsys, "-f", cluster, "-f", pods)
    assert code == 0
    assert err == (
        f'{cluster}: document 1: DeviceClass "{dc["metadata"]["name"]}": warning: unknown field '
        '"spec.extendedResourceCapacityRequests.limits"\n'
    )
    code, out, err = run_simulate(capsys, "--strict", "-f", cluster, "-f", pods)
    assert code == 2 and out == ""
    assert err.strip().endswith(
        'strict decoding error: unknown field "spec.extendedResourceCapacityRequests.limits"'
    )


def test_strict_checks_only_the_kinds_simulate_reads(tmp_path: Path, one_pod: OnePod) -> None:
    """A kind simulate skips (here a ConfigMap) is noted as skipped, under --strict too: it reads none of its
    fields."""
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dataa": {}}
    code, _, err = one_pod(gpu_slice("n1", 1), config, strict=True)
    assert code == 0
    cluster = tmp_path / "c.yaml"
    assert err.startswith(f"{cluster}: document 4: skipping ConfigMap 'x': simulate reads ")


def test_kubectl_get_output_has_no_unknown_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pod as the API server serves it (status, managedFields, defaults) passes --strict."""
    raw = pod("p", {GPU_SHARED: 1}).to_api()
    raw["metadata"]["managedFields"] = [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {}},
        }
    ]
    raw["spec"].update(
        {
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "priority": 0,
        }
    )
    raw["status"] = {
        "phase": "Pending",
        "qosClass": "BestEffort",
        "conditions": [{"type": "PodScheduled", "status": "False"}],
    }
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), node("n1"), gpu_slice("n1", 1))
    code, _, err = run_simulate(
        capsys, "--strict", "-f", cluster, "-f", write_manifests(tmp_path, "p.yaml", raw)
    )
    assert code == 0 and err == ""


def test_a_pool_inconsistent_across_slices_is_an_outcome_not_an_input_error(one_pod: OnePod) -> None:
    """GatherPools: a pool that announces two slices but has one (a driver mid-update) is incomplete and
    not allocated from; the API server stores such slices, so simulate runs and reports the pod."""
    partial = _slice(pool={"name": "n1", "generation": 1, "resourceSliceCount": 2})
    code, out, _ = one_pod(partial)
    (entry,) = json.loads(out)["pods"]
    assert code == 0 and entry["result"] == "unschedulable"
    assert entry["reason"] == "0/1 nodes are available: 1 cannot allocate all claims."


def test_an_older_generation_of_a_pool_is_ignored(one_pod: OnePod) -> None:
    """GatherPools keeps the highest pool generation: an older slice left behind does not add devices."""
    old = _slice(pool={"name": "n1", "generation": 1, "resourceSliceCount": 1})
    old["metadata"]["name"] = "old"
    new = _slice(pool={"name": "n1", "generation": 2, "resourceSliceCount": 1})
    new["spec"]["devices"] = new["spec"]["devices"][:1]
    code, out, _ = one_pod(old, new)
    (entry,) = json.loads(out)["pods"]
    assert code == 0 and entry["result"] == "bound"
    assert entry["claim"]["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


# --- pods that repeat one spec (a ReplicaSet's): checked and validated once, reported per pod ------------


def _replica(name: str, **spec: Any) -> dict[str, Any]:
    raw = pod(name, {GPU_SHARED: 1}).to_api()
    raw["spec"].update(spec)
    return raw


def test_a_repeated_spec_warns_for_every_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = write_manifests(tmp_path, "p.yaml", _replica("a", nodeNmae="n1"), _replica("b", nodeNmae="n1"))
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), node("n1"), gpu_slice("n1", 2))
    code, out, err = run_simulate(capsys, "-f", cluster, "-f", pods)
    assert code == 0 and [p["result"] for p in json.loads(out)["pods"]] == ["bound", "bound"]
    assert err == (
        f'{pods}: document 1: Pod "default/a": warning: unknown field "spec.nodeNmae"\n'
        f'{pods}: document 2: Pod "default/b": warning: unknown field "spec.nodeNmae"\n'
    )


def test_a_repeated_spec_is_a_strict_error_for_its_first_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write_manifests(tmp_path, "p.yaml", _replica("a"), _replica("b", nodeNmae="n1"))
    code, out, err = run_simulate(capsys, "--strict", "-f", _base(tmp_path), "-f", pods)
    assert code == 2 and out == ""
    assert err.strip().endswith('Pod "default/b": strict decoding error: unknown field "spec.nodeNmae"')


def test_a_wrong_type_in_a_repeated_spec_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_manifests(tmp_path, "good.yaml", _replica("a"), _replica("b"))
    bad = write_manifests(tmp_path, "bad.yaml", _replica("c", nodeName=7), _replica("d", nodeName=7))
    code, out, err = run_simulate(capsys, "-f", _base(tmp_path), "-f", good, "-f", bad)
    assert code == 2 and out == ""
    assert err.strip().endswith(
        f'{bad}: document 1: Pod "default/c": spec.nodeName: Invalid value: "number": must be of type string'
    )


def test_pods_with_one_spec_share_its_model_and_keep_their_own_metadata(tmp_path: Path) -> None:
    from allocator.simulate import load_inputs
    from resourceapi.manifests.documents import Document

    docs = [Document("p.yaml", i + 1, _replica(n)) for i, n in enumerate(("a", "b"))]
    a, b = load_inputs(docs).pods
    assert a.spec is b.spec
    assert (a.name, b.name) == ("a", "b")
    assert a.spec.to_api() == _replica("a")["spec"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"int": "one"},
            'spec.devices[0].attributes[index].int: Invalid value: "string": must be of type integer',
        ),
        (
            {"bool": 1},
            'spec.devices[0].attributes[index].bool: Invalid value: "number": must be of type boolean',
        ),
        ("one", 'spec.devices[0].attributes[index]: Invalid value: "string": must be of type object'),
    ],
    ids=["int-as-string", "bool-as-number", "not-an-object"],
)
def test_a_device_attribute_of_the_wrong_type_is_an_input_error(
    refused: Refuse, value: Any, expected: str
) -> None:
    """The slice model keeps attributes as the API's own maps (resourceapi.api.resource_v1.AttributeMap):
    their
    types are the field schema's to check, as the API server's, before any model is built."""
    raw = _slice()
    raw["spec"]["devices"][0]["attributes"]["index"] = value
    err = refused(raw)
    assert err.endswith(f'ResourceSlice "n1-gpu.nvidia.com": {expected}')


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_json_number_that_reads_as_nan_or_infinity_is_not_taken_for_a_null(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], number: str
) -> None:
    # orjson writes NaN and the infinities as `null`, so a JSON text whose reader saw one keys its pods'
    # specs with the read-back check (resourceapi.manifests.documents.Document.finite): pod b is checked on
    # its own
    a, b = _replica("a", activeDeadlineSeconds=None), _replica("b", activeDeadlineSeconds=None)
    field = '"activeDeadlineSeconds": '
    pods = tmp_path / "p.json"
    pods.write_text(json.dumps(a) + "\n" + json.dumps(b).replace(field + "null", field + number))
    code, out, err = run_simulate(capsys, "-f", _base(tmp_path), "-f", str(pods))
    assert code == 2 and out == ""
    assert err.strip().endswith(
        f'{pods}: document 2: Pod "default/b": spec.activeDeadlineSeconds: Invalid value: "number": '
        "must be of type integer"
    )


def test_admin_access_needs_a_namespace_labeled_for_it_as_the_api_server_requires() -> None:
    from allocator.simulate import InputError, load_inputs
    from resourceapi.manifests.documents import Document

    claim = make_claim("c").namespace("ops").request("r", "gpu", adminAccess=True).obj()
    unlabeled = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}}
    with pytest.raises(InputError, match=r"spec.devices.requests\[0\].adminAccess: Forbidden: admin access"):
        load_inputs([Document("c.yaml", 1, claim), Document("c.yaml", 2, unlabeled)])
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ops", "labels": {"resource.kubernetes.io/admin-access": "true"}},
    }
    # the namespace may come after the claim in the input
    inputs = load_inputs([Document("c.yaml", 1, claim), Document("c.yaml", 2, namespace)])
    assert len(inputs.claims) == 1
    assert not [n for n in inputs.notes if "admin access" in n]


def test_admin_access_in_a_namespace_absent_from_the_input_is_a_warning_not_a_refusal() -> None:
    """`kubectl get ... -A -o yaml` exports no namespaces: simulate judges only what it is given."""
    from allocator.simulate import load_inputs
    from resourceapi.manifests.documents import Document

    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ops"},
        "spec": {
            "devices": {
                "requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "adminAccess": True}}]
            }
        },
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ops"},
        "spec": {"spec": claim["spec"]},
    }
    other = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "elsewhere"}}
    inputs = load_inputs(
        [Document("c.yaml", 1, claim), Document("c.yaml", 2, template), Document("c.yaml", 3, other)]
    )
    assert len(inputs.claims) == 1
    warnings = [n for n in inputs.notes if "admin access" in n]
    assert len(warnings) == 2
    assert 'namespace "ops" is not in the input' in warnings[0]
    assert "resource.kubernetes.io/admin-access: true" in warnings[0]
