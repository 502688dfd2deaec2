"""`dra-capacity simulate`: the contract's modes, output shapes, flags, exit codes and bad-input errors."""

from __future__ import annotations

import errno
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.simulate_cli import POD_ENTRY_KEYS, run_simulate, write_manifests
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod, share_claim

from dra_capacity.cli import main


def _cluster(tmp_path: Path, nodes: int = 1, gpus: int = 1) -> str:
    names = [f"n{i + 1}" for i in range(nodes)]
    return write_manifests(
        tmp_path, "cluster.yaml", gpu_class(), *[node(n) for n in names], *[gpu_slice(n, gpus) for n in names]
    )


# --- pod mode -----------------------------------------------------------------------------------------------


def test_pod_mode_places_pending_pods_in_input_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write_manifests(tmp_path, "pods.yaml", *[pod(f"p{i}", {GPU_SHARED: 1}) for i in range(5)])
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", pods)
    doc = json.loads(out)
    assert code == 0 and doc["mode"] == "pods"
    assert [(p["name"], p["result"]) for p in doc["pods"]] == [(f"p{i}", "bound") for i in range(4)] + [
        ("p4", "unschedulable")
    ]
    assert doc["pods"][4]["reason"] == "0/1 nodes are available: 1 cannot allocate all claims."


def test_pod_mode_places_higher_priority_pods_first_then_input_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # room for 4 of the 5: the last pod in the input, but the highest priority, takes a share; the lowest
    # priority pod is left out, and among the equal ones the last in input order.
    specs: list[dict[str, Any]] = [{}, {"priority": -1}, {}, {}, {"priority": 100}]
    pending = [pod(f"p{i}", {GPU_SHARED: 1}, **spec) for i, spec in enumerate(specs)]
    code, out, _ = run_simulate(
        capsys, "-f", _cluster(tmp_path), "-f", write_manifests(tmp_path, "p.yaml", *pending)
    )
    assert code == 0
    assert [(p["name"], p["result"]) for p in json.loads(out)["pods"]] == [  # reported in input order
        ("p0", "bound"),
        ("p1", "unschedulable"),
        ("p2", "bound"),
        ("p3", "bound"),
        ("p4", "bound"),
    ]
    specs = [{}, {}, {}, {}, {"priority": 100}]
    pending = [pod(f"p{i}", {GPU_SHARED: 1}, **spec) for i, spec in enumerate(specs)]
    _, out, _ = run_simulate(
        capsys, "-f", _cluster(tmp_path), "-f", write_manifests(tmp_path, "q.yaml", *pending)
    )
    assert [p["name"] for p in json.loads(out)["pods"] if p["result"] == "unschedulable"] == ["p3"]


def test_pending_pods_being_deleted_are_not_placed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deleting = pod("gone", {GPU_SHARED: 1}).to_api()
    deleting["metadata"]["deletionTimestamp"] = "2026-11-29T08:00:00Z"
    pods = write_manifests(tmp_path, "pods.yaml", deleting, pod("kept", {GPU_SHARED: 1}))
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", pods)
    assert code == 0
    assert [p["name"] for p in json.loads(out)["pods"]] == ["kept"]


def test_pod_entry_has_the_contract_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = write_manifests(tmp_path, "pods.yaml", pod("train", {GPU_SHARED: 1}))
    _, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", pods)
    entry = json.loads(out)["pods"][0]
    assert set(entry) == {*POD_ENTRY_KEYS, "file", "document", "item"}
    assert (entry["file"], entry["document"], entry["item"]) == (pods, 1, None)
    (main,) = entry["containers"]
    (device,) = main["devices"]
    assert main["name"] == "main"
    assert device["claim"] == entry["claim"]["metadata"]["name"]
    assert device["request"] == "container-0-request-0"
    claim = entry["claim"]
    assert claim["metadata"]["generateName"] == "train-extended-resources-"
    assert claim["metadata"]["name"].startswith("train-extended-resources-")
    result = claim["status"]["allocation"]["devices"]["results"][0]
    assert set(result) == {
        "request",
        "driver",
        "pool",
        "device",
        "shareID",
        "consumedCapacity",
        "tolerations",
    }
    assert result["consumedCapacity"] == {"shares": "1"}
    assert entry["extendedResourceClaimStatus"] == {
        "requestMappings": [
            {"containerName": "main", "resourceName": GPU_SHARED, "requestName": "container-0-request-0"}
        ],
        "resourceClaimName": claim["metadata"]["name"],
    }


def test_running_pods_hold_their_node_resources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write_manifests(tmp_path, "c.yaml", node("n1", {"cpu": "2"}))
    pods = write_manifests(
        tmp_path, "p.yaml", pod("running", {"cpu": "2"}, nodeName="n1"), pod("new", {"cpu": "1"})
    )
    _, out, _ = run_simulate(capsys, "-f", cluster, "-f", pods)
    assert json.loads(out)["pods"] == [
        {
            "namespace": "default",
            "name": "new",
            "result": "unschedulable",
            "reason": "0/1 nodes are available: 1 Insufficient cpu.",
            "node": None,
            "claim": None,
            "extendedResourceClaimStatus": None,
            "file": pods,
            "document": 2,
            "item": None,
        }
    ]


def test_pods_and_no_node_exit_0_with_one_line_on_stderr_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write_manifests(tmp_path, "cluster.yaml", gpu_class(), gpu_slice("n1", 1))
    pods = write_manifests(tmp_path, "pods.yaml", *[pod(f"p{i}", {GPU_SHARED: 1}) for i in range(3)])
    code, out, err = run_simulate(capsys, "-f", cluster, "-f", pods, "-o", "table")
    assert code == 0 and out.count("unschedulable") == 6  # a row and a reason line per pod
    assert err.splitlines() == [
        "warning: the input has no Node, so none of the 3 pending pods can be placed (no nodes available to "
        "schedule pods); add the Nodes, for example from `kubectl get nodes -o yaml`"
    ]
    one = write_manifests(tmp_path, "one.yaml", pod("p", {GPU_SHARED: 1}))
    code, out, err = run_simulate(capsys, "-f", cluster, "-f", one)
    assert code == 0 and json.loads(out)["pods"][0]["reason"] == "no nodes available to schedule pods"
    assert err.startswith("warning: the input has no Node, so the pending pod cannot be placed")
    # a Node in the input: no such line, whatever the outcome
    code, _, err = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", pods)
    assert code == 0 and "no Node" not in err


def test_spread_strategy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = write_manifests(tmp_path, "pods.yaml", pod("a", {GPU_SHARED: 1}), pod("b", {GPU_SHARED: 1}))
    _, out, _ = run_simulate(capsys, "--strategy", "spread", "-f", _cluster(tmp_path, nodes=2), "-f", pods)
    assert [p["node"] for p in json.loads(out)["pods"]] == ["n1", "n2"]


def test_node_flag_limits_pod_mode_to_one_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = write_manifests(tmp_path, "pods.yaml", pod("a", {GPU_SHARED: 1}))
    _, out, _ = run_simulate(capsys, "--node", "n2", "-f", _cluster(tmp_path, nodes=2), "-f", pods)
    assert json.loads(out)["pods"][0]["node"] == "n2"


def test_node_flag_must_name_an_input_node_in_pod_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write_manifests(tmp_path, "pods.yaml", pod("a", {GPU_SHARED: 1}))
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--node", "ghost", "-f", _cluster(tmp_path), "-f", pods])
    assert exc.value.code == 2
    assert "--node ghost: pod mode needs a Node of that name in the input" in capsys.readouterr().err


def test_feature_gates_reach_the_simulation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = write_manifests(tmp_path, "pods.yaml", pod("a", {GPU_SHARED: 1}))
    code, out, _ = run_simulate(
        capsys, "--feature-gates", "DRAExtendedResourceCapacity=false", "-f", _cluster(tmp_path), "-f", pods
    )
    entry = json.loads(out)["pods"][0]
    assert code == 0 and entry["result"] == "unschedulable"
    assert "DRAExtendedResourceCapacity feature is disabled" in entry["reason"]


def test_feature_gates_reach_the_input_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A slice's list attributes need DRAListTypeAttributes, as the API server's validation does: with it off
    they are dropped and the attribute has no value; with it on the slice is accepted."""
    listed = gpu_slice("n1", 1).to_api()
    listed["spec"]["devices"][0]["attributes"] = {"models": {"strings": ["a100", "h100"]}}
    cluster = write_manifests(tmp_path, "cluster.yaml", gpu_class(), node("n1"), listed)
    pods = write_manifests(tmp_path, "pods.yaml", pod("a", {GPU_SHARED: 1}))
    code, out, err = run_simulate(capsys, "-f", cluster, "-f", pods)
    assert code == 2 and out == ""
    assert "spec.devices[0].attributes[models]: Invalid value" in err and "must specify one of" in err
    code, out, err = run_simulate(
        capsys, "--feature-gates", "DRAListTypeAttributes=true", "-f", cluster, "-f", pods
    )
    assert code == 0, err
    assert json.loads(out)["pods"][0]["result"] == "bound"


def test_kubernetes_version_sets_the_gate_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1.35's defaults have DRAExtendedResource off (warned as untested); 1.38 serves the pod."""
    pods = write_manifests(tmp_path, "pods.yaml", pod("a", {GPU_SHARED: 1}))
    code, out, err = run_simulate(
        capsys, "--kubernetes-version", "1.35", "-f", _cluster(tmp_path), "-f", pods
    )
    assert code == 0 and "dra-capacity simulate: warning: Kubernetes 1.35 is untested" in err
    assert json.loads(out)["pods"][0]["result"] != "bound"
    code, out, err = run_simulate(
        capsys, "--kubernetes-version", "1.38", "-f", _cluster(tmp_path), "-f", pods
    )
    assert code == 0 and "warning" not in err
    assert json.loads(out)["pods"][0]["result"] == "bound"


# --- claim mode ---------------------------------------------------------------------------------------------


def test_claim_mode_allocates_all_claims_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claims = write_manifests(
        tmp_path, "claims.yaml", share_claim("a", shares="3"), share_claim("b", shares="1")
    )
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", claims)
    doc = json.loads(out)
    assert code == 0
    assert (doc["mode"], doc["node"], doc["result"], doc["reason"]) == ("claims", "n1", "allocated", "")
    consumed = [c["allocation"]["devices"]["results"][0]["consumedCapacity"] for c in doc["claims"]]
    assert consumed == [{"shares": "3"}, {"shares": "1"}]


def test_claim_mode_is_all_or_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claims = write_manifests(
        tmp_path, "claims.yaml", share_claim("a", shares="3"), share_claim("b", shares="2")
    )
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", claims)
    doc = json.loads(out)
    assert code == 0 and doc["result"] == "unschedulable" and doc["reason"] == "cannot allocate all claims"
    assert [c["allocation"] for c in doc["claims"]] == [None, None]


def test_claim_mode_sees_committed_claims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    committed = share_claim(
        "old",
        shares="3",
        allocation={
            "devices": {
                "results": [
                    {
                        "request": "gpu",
                        "driver": "gpu.nvidia.com",
                        "pool": "n1",
                        "device": "gpu-0",
                        "shareID": "3f0c9a52-8d1e-4b7a-9c2f-6e5d4c3b2a19",
                        "consumedCapacity": {"shares": "3"},
                    }
                ]
            }
        },
    )
    claims = write_manifests(tmp_path, "claims.yaml", committed, share_claim("new", shares="2"))
    _, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", claims)
    doc = json.loads(out)
    assert doc["result"] == "unschedulable" and [c["name"] for c in doc["claims"]] == ["new"]


def test_claim_mode_on_a_bare_node_named_by_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), gpu_slice("n9", 1))
    claims = write_manifests(tmp_path, "claims.yaml", share_claim("a"))
    _, out, _ = run_simulate(capsys, "--node", "n9", "-f", cluster, "-f", claims)
    assert json.loads(out)["result"] == "allocated"


def test_claim_mode_with_several_nodes_needs_node_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claims = write_manifests(tmp_path, "claims.yaml", share_claim("a"))
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "-f", _cluster(tmp_path, nodes=2), "-f", claims])
    assert exc.value.code == 2
    assert "--node" in capsys.readouterr().err


def test_claim_mode_error_is_a_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claims = write_manifests(tmp_path, "claims.yaml", share_claim("a"))
    code, out, _ = run_simulate(
        capsys, "--feature-gates", "DRAConsumableCapacity=false", "-f", _cluster(tmp_path), "-f", claims
    )
    doc = json.loads(out)
    assert code == 0 and doc["result"] == "error"
    assert doc["reason"] == (
        "claim default/a, request gpu: has capacity requests, "
        "but the DRAConsumableCapacity feature is disabled"
    )


# --- table --------------------------------------------------------------------------------------------------


def test_table_has_a_row_per_share_and_a_capacity_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write_manifests(tmp_path, "pods.yaml", pod("a", {GPU_SHARED: 2}), pod("b", {GPU_SHARED: 1}))
    code, out, _ = run_simulate(capsys, "-o", "table", "-f", _cluster(tmp_path, gpus=2), "-f", pods)
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["POD", "RESULT", "NODE", "REQUEST", "DEVICE", "SHARE", "CONSUMED"]
    assert [ln.split()[0] for ln in lines[1:4]] == ["default/a", "default/a", "default/b"]
    summary = lines[lines.index("") + 1 :]
    assert [ln.split() for ln in summary] == [
        ["DEVICE", "CAPACITY", "USED", "TOTAL"],
        ["gpu.nvidia.com/n1/gpu-0", "shares", "2", "4"],
        ["gpu.nvidia.com/n1/gpu-1", "shares", "1", "4"],
    ]


def test_table_explains_unschedulable_pods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = write_manifests(tmp_path, "pods.yaml", pod("big", {GPU_SHARED: 2}))
    _, out, _ = run_simulate(capsys, "-o", "table", "-f", _cluster(tmp_path, gpus=1), "-f", pods)
    assert "default/big: unschedulable: 0/1 nodes are available: 1 cannot allocate all claims." in out


# --- bad input ----------------------------------------------------------------------------------------------


def _bad(tmp_path: Path, capsys: pytest.CaptureFixture[str], *objs: Any, text: str | None = None) -> str:
    path = tmp_path / "bad.yaml"
    if text is not None:
        path.write_text(text)
    else:
        write_manifests(tmp_path, "bad.yaml", *objs)
    code, out, err = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", str(path))
    assert code == 2 and out == ""
    return err.strip()


def test_other_kinds_are_skipped_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster export holds many kinds: simulate skips what it does not read, as `validate` does."""
    extra = write_manifests(
        tmp_path, "x.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    )
    code, out, err = run_simulate(
        capsys, "-f", _cluster(tmp_path), "-f", extra, "-f", write_manifests(tmp_path, "p.yaml", pod("p"))
    )
    assert code == 0 and json.loads(out)["pods"][0]["result"] == "bound"
    assert err == (
        f"{extra}: document 1: skipping ConfigMap 'x': simulate reads DeviceClass, ResourceSlice, "
        "DeviceTaintRule, ResourceClaim, Node, Pod, Namespace, ResourceClaimTemplate, Deployment, "
        "ReplicaSet, StatefulSet, Job, PodDisruptionBudget, PersistentVolumeClaim, PersistentVolume, "
        "StorageClass, CSINode, CSIDriver, CSIStorageCapacity\n"
    )


def test_claim_naming_an_unknown_class_is_a_per_claim_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cluster can hold a claim whose DeviceClass is gone: the DynamicResources PreFilter makes its pod
    unschedulable with `request <r>: device class <c> does not exist`; the other pods are placed."""
    claims = write_manifests(tmp_path, "c.yaml", share_claim("a", cls="nope"))
    pods = write_manifests(
        tmp_path,
        "p.yaml",
        pod("uses-a", resourceClaims=[{"name": "g", "resourceClaimName": "a"}]),
        pod("plain", {GPU_SHARED: 1}),
    )
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", claims, "-f", pods)
    first, second = json.loads(out)["pods"]
    assert code == 0
    assert (first["result"], first["reason"]) == (
        "unschedulable",
        "0/1 nodes are available: request gpu: device class nope does not exist.",
    )
    assert second["result"] == "bound"


def test_claim_mode_with_an_unknown_class_is_unschedulable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claims = write_manifests(tmp_path, "c.yaml", share_claim("a", cls="nope"))
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", claims)
    doc = json.loads(out)
    assert code == 0 and doc["result"] == "unschedulable"
    assert doc["reason"] == "request gpu: device class nope does not exist"


def test_pod_naming_a_missing_claim_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _bad(tmp_path, capsys, pod("p", resourceClaims=[{"name": "g", "resourceClaimName": "ghost"}]))
    assert 'document 1: Pod "default/p": spec.resourceClaims[0].resourceClaimName: Not found: "ghost"' in err


def test_pod_naming_a_missing_template_without_its_generated_claim_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pod could never get its claim: the controller reports the template missing, the pod never runs."""
    err = _bad(tmp_path, capsys, pod("p", resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t"}]))
    assert err.endswith(
        'Pod "default/p": spec.resourceClaims[0].resourceClaimTemplateName: Not found: "t" (no '
        "ResourceClaimTemplate of that name in namespace default, and status.resourceClaimStatuses has no "
        'entry "g")'
    )


def test_pod_claim_entry_naming_neither_claim_nor_template_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _bad(tmp_path, capsys, pod("p", resourceClaims=[{"name": "g"}]))
    assert err.endswith(
        'Pod "default/p": spec.resourceClaims[0]: Invalid value: "g": must specify one of: '
        "`resourceClaimName`, `resourceClaimTemplateName`"
    )


def _template_pod(name: str, generated: str | None) -> dict[str, Any]:
    """A pending pod as `kubectl get` prints it once the resourceclaim controller made its claim."""
    raw = pod(name, resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t"}]).to_api()
    raw["status"] = {
        "phase": "Pending",
        "resourceClaimStatuses": [{"name": "g", "resourceClaimName": generated}],
    }
    return raw


def test_pod_claim_from_a_template_is_the_one_its_status_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write_manifests(tmp_path, "p.yaml", _template_pod("p", "p-g-x7k2p"), share_claim("p-g-x7k2p"))
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", pods)
    (entry,) = json.loads(out)["pods"]
    assert code == 0 and entry["result"] == "bound"
    assert [c["name"] for c in entry["claims"]] == ["p-g-x7k2p"]
    assert entry["claims"][0]["allocation"]["devices"]["results"][0]["request"] == "gpu"


def test_pod_template_entry_whose_status_names_no_claim_needs_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write_manifests(tmp_path, "p.yaml", _template_pod("p", None))
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", pods)
    (entry,) = json.loads(out)["pods"]
    assert code == 0 and entry["result"] == "bound" and "claims" not in entry


def test_pod_template_claim_missing_from_the_input_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _bad(tmp_path, capsys, _template_pod("p", "p-g-x7k2p"))
    assert (
        'Pod "default/p": spec.resourceClaims[0].resourceClaimTemplateName: Not found: "p-g-x7k2p" '
        "(no ResourceClaim of that name in namespace default)" in err
    )


def test_running_pod_claims_need_not_be_in_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    running = pod("r", nodeName="n1", resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t"}])
    pods = write_manifests(tmp_path, "p.yaml", running, pod("new", {GPU_SHARED: 1}))
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", pods)
    assert code == 0 and [p["result"] for p in json.loads(out)["pods"]] == ["bound"]


@pytest.mark.parametrize(
    ("resources", "field", "message"),
    [
        (
            {"limits": {GPU_SHARED: "500m"}},
            f"spec.containers[0].resources.limits[{GPU_SHARED}]",
            'Invalid value: "500m": must be an integer',
        ),
        (
            {"requests": {GPU_SHARED: "1e30"}, "limits": {GPU_SHARED: "1e30"}},
            f"spec.containers[0].resources.limits[{GPU_SHARED}]",
            'Invalid value: "1e30": must be an integer',
        ),
        (
            {"requests": {"deviceclass.resource.kubernetes.io/gpu": "1.5"}},
            "spec.containers[0].resources.requests[deviceclass.resource.kubernetes.io/gpu]",
            'Invalid value: "1500m": must be an integer',
        ),
        (
            {"limits": {GPU_SHARED: "-1"}},
            f"spec.containers[0].resources.limits[{GPU_SHARED}]",
            'Invalid value: "-1": must be greater than or equal to 0',
        ),
        (
            {"requests": {"cpu": "-500m"}},
            "spec.containers[0].resources.requests[cpu]",
            'Invalid value: "-500m": must be greater than or equal to 0',
        ),
    ],
    ids=["fractional-limit", "beyond-int64", "fractional-implicit-name", "negative-count", "negative-cpu"],
)
def test_pod_quantities_the_api_server_would_refuse_are_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], resources: dict[str, Any], field: str, message: str
) -> None:
    raw = pod("p").to_api()
    raw["spec"]["containers"][0]["resources"] = resources
    assert _bad(tmp_path, capsys, raw).endswith(f'bad.yaml: document 1: Pod "default/p": {field}: {message}')


def test_init_container_quantities_are_checked_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = pod("p", init=[{"name": "i", "resources": {"limits": {GPU_SHARED: "0.5"}}}]).to_api()
    err = _bad(tmp_path, capsys, raw)
    assert err.endswith(
        f'spec.initContainers[0].resources.limits[{GPU_SHARED}]: Invalid value: "500m": must be an integer'
    )


def test_empty_input_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.yaml").write_text("# nothing here\n---\n")
    code, out, err = run_simulate(capsys, "-f", str(tmp_path / "empty.yaml"))
    assert (code, out) == (2, "")
    assert err.strip().endswith("empty.yaml: no objects found (empty input)")


def test_an_empty_file_beside_others_is_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.yaml").write_text("")
    code, _, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", str(tmp_path / "empty.yaml"))
    assert code == 0


def test_an_empty_directory_is_input_without_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_simulate(capsys, "-f", str(tmp_path))
    assert (code, out) == (2, "") and err.strip().endswith(f"{tmp_path}: no objects found (empty input)")


def test_binary_file_is_rejected_naming_the_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "blob.yaml").write_bytes(b"kind: \x97\x00")
    code, out, err = run_simulate(capsys, "-f", str(tmp_path / "blob.yaml"))
    assert (code, out) == (2, "")
    assert "blob.yaml: cannot read: not UTF-8 or UTF-16 text (byte 0x97 at offset 6)" in err


def test_malformed_quantity_is_rejected_with_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = pod("p").to_api()
    raw["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "two"}}
    err = _bad(tmp_path, capsys, raw)
    assert 'bad.yaml: document 1: Pod "default/p": spec.containers[0].resources.requests[cpu]: ' in err
    assert "quantities must match the regular expression" in err


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        (
            {"metadata": {"name": "p", "labels": {"gpu": True}}},
            'metadata.labels[gpu]: Invalid value: "boolean": must be of type string',
        ),
        ({"spec": "x"}, 'spec: Invalid value: "string": must be of type object'),
        ({"spec": {"containers": None}}, "spec.containers: Required value"),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "two"}}}]}},
            'spec.containers[0].resources.limits[cpu]: Invalid value: "two": quantities must match the '
            "regular expression",
        ),
    ],
    ids=["label-not-a-string", "spec-not-an-object", "containers-null", "bad-quantity-echoes-the-value"],
)
def test_malformed_fields_are_reported_in_the_api_servers_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], patch: dict[str, Any], expected: str
) -> None:
    raw = {**pod("p").to_api(), **patch}
    assert f'bad.yaml: document 1: Pod "default/p": {expected}' in _bad(tmp_path, capsys, raw)


def test_duplicate_device_name_within_a_slice_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ResourceSlice validation (validateResourceSliceSpec): device names are unique within a slice; upstream
    reports the repeat at the device (`spec.devices[1]`), not at its name."""
    dup = gpu_slice("n1", 2).to_api()
    dup["metadata"]["name"] = "dup"
    dup["spec"]["devices"][1]["name"] = "gpu-0"
    err = _bad(tmp_path, capsys, dup)
    assert err.endswith(
        'bad.yaml: document 1: ResourceSlice "dup": spec.devices[1]: Duplicate value: "gpu-0"'
    )


def test_duplicate_device_name_across_slices_of_a_pool_makes_the_pool_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Across slices the API server cannot check; the allocator's GatherPools marks the pool invalid
    (`duplicate device name`), so allocation fails on that node with `invalid resource pools were
    encountered`, as upstream."""
    first = gpu_slice("n1", 1).to_api()
    first["spec"]["pool"]["resourceSliceCount"] = 2
    second = gpu_slice("n1", 1).to_api()
    second["metadata"]["name"] = "second-slice"
    second["spec"]["pool"]["resourceSliceCount"] = 2
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), node("n1"), first, second)
    code, out, _ = run_simulate(
        capsys, "-f", cluster, "-f", write_manifests(tmp_path, "p.yaml", pod("p", {GPU_SHARED: 1}))
    )
    (entry,) = json.loads(out)["pods"]
    assert code == 0 and entry["result"] == "unschedulable"
    assert "invalid resource pools were encountered" in entry["reason"]


def test_malformed_annotation_carrier_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dc = gpu_class("other", resource=None, shares=None, annotation='{"requests": {"shares": "x"}}')
    err = _bad(tmp_path, capsys, dc)
    assert (
        'DeviceClass "other": metadata.annotations[dra-capacity.io/extended-resource-capacity-requests]'
        in err
    )


def test_unsupported_api_version_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    obj = {**share_claim("a"), "apiVersion": "resource.k8s.io/v1beta1"}
    err = _bad(tmp_path, capsys, obj)
    assert "apiVersion 'resource.k8s.io/v1beta1' is not supported (use resource.k8s.io/v1)" in err


def test_duplicate_object_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _bad(tmp_path, capsys, node("n1"))
    assert 'bad.yaml: document 1: Node "n1": duplicate object (first defined at ' in err


def test_unparseable_file_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "bad.yaml: not valid YAML or JSON" in _bad(tmp_path, capsys, text="kind: [")


def test_missing_file_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_simulate(capsys, "-f", str(tmp_path / "nope.yaml"))
    assert code == 2 and out == "" and "nope.yaml: cannot read" in err


def test_bad_feature_gate_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--feature-gates", "Nope=true", "-f", _cluster(tmp_path)])
    assert exc.value.code == 2
    assert "unrecognized feature gate: Nope" in capsys.readouterr().err


def test_help_names_the_modes_and_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "pod mode    the input has Pods without spec.nodeName" in out
    assert "  0  the simulation ran (unschedulable pods are a result)" in out
    assert "  1  with --fail-unschedulable: some pod or claim was not placed" in out


class FullDisk(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_an_output_write_error_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = _cluster(tmp_path)
    monkeypatch.setattr(sys, "stdout", FullDisk())
    assert main(["simulate", "-f", cluster]) == 2
    assert capsys.readouterr().err == (
        "dra-capacity simulate: error: cannot write output: No space left on device\n"
    )
