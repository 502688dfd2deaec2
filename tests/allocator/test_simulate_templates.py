"""`simulate` takes pods as users write them: ResourceClaimTemplates instantiated as kube-controller-manager's
resourceclaim controller does (pkg/controller/resourceclaim/controller.go), claims shared by name, and
workload objects standing for the pods their controllers would create."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from support.simulate_cli import write_manifests
from support.workloads import GPU_DRIVER, node, pod

from allocator.simulate.templates import POD_CLAIM_NAME_ANNOTATION, claim_from_template, claim_generate_name
from allocator.simulate.workload_pods import expand, safe_encode
from dra_capacity.cli import main
from resourceapi.api.core_v1 import Pod
from resourceapi.api.resource_v1 import ResourceClaimTemplate
from resourceapi.api.workloads_v1 import Deployment, Job, StatefulSet

GPU_CLASS = "gpu.nvidia.com"


def gpu_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": GPU_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
    }


def whole_gpus(node_name: str, count: int, memory: str = "80Gi") -> dict[str, Any]:
    """A node's slice of dedicated (not shareable) GPUs, as the NVIDIA driver publishes them."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"productName": {"string": "NVIDIA H100 80GB HBM3"}},
                    "capacity": {"memory": {"value": memory}},
                }
                for i in range(count)
            ],
        },
    }


def template(name: str = "single-gpu", selector: str | None = None, **meta: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"metadata": meta, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def shared_claim(name: str = "shared-gpu") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU_CLASS}}]}},
    }


def container(name: str, *claims: str) -> dict[str, Any]:
    return {"name": name, "image": "ubuntu", "resources": {"claims": [{"name": c} for c in claims]}}


def cluster(tmp_path: Path, nodes: int = 1, gpus: int = 4) -> str:
    names = [f"n{i + 1}" for i in range(nodes)]
    return write_manifests(
        tmp_path,
        "cluster.yaml",
        gpu_class(),
        *[node(n) for n in names],
        *[whole_gpus(n, gpus) for n in names],
    )


def simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["simulate", "--seed", "7", *argv])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else {}, captured.err


def deployment(replicas: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "trainer", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "trainer"}},
            "template": {"metadata": {"labels": {"app": "trainer"}}, "spec": spec},
        },
    }


# --- the resourceclaim controller's claims ------------------------------------------------------------------


def test_the_generated_claim_is_what_the_controller_creates() -> None:
    pod_ = Pod.model_validate({"metadata": {"name": "pod", "namespace": "ns", "uid": "u-1"}})
    tmpl = ResourceClaimTemplate.model_validate(template(labels={"team": "a"}, annotations={"note": "x"}))
    claim = claim_from_template(pod_, "gpu", tmpl, random.Random(1))
    meta = claim.metadata
    assert meta.generate_name == "pod-gpu-"
    assert meta.name.startswith("pod-gpu-") and len(meta.name) == len("pod-gpu-") + 5
    assert meta.namespace == "ns"
    assert meta.labels == {"team": "a"}
    assert meta.annotations == {"note": "x", POD_CLAIM_NAME_ANNOTATION: "gpu"}
    (owner,) = meta.owner_references or []
    assert (owner.api_version, owner.kind, owner.name, owner.uid) == ("v1", "Pod", "pod", "u-1")
    assert owner.controller is True and owner.block_owner_deletion is True
    assert claim.spec == tmpl.spec.spec


def test_a_long_generate_name_cuts_pod_and_entry_in_proportion() -> None:
    """handleClaim: both parts cut to len*57/len(generateName), with no trailing hyphen, so the entry's name
    survives a long pod name (the API server would cut only the end)."""
    pod_name, entry = "p" * 60, "e" * 20
    name = claim_generate_name(pod_name, entry)
    total = len(pod_name) + len(entry) + 2
    assert name == "p" * (60 * 57 // total) + "-" + "e" * (20 * 57 // total)
    assert claim_generate_name("short", "gpu") == "short-gpu-"


# --- the canonical three-container example ------------------------------------------------------------------


def test_three_containers_one_own_device_two_sharing_one_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """container0 gets its own GPU from a template; container1 and container2 share one pre-existing claim."""
    spec = {
        "containers": [
            container("container0", "gpu-own"),
            container("container1", "gpu-shared"),
            container("container2", "gpu-shared"),
        ],
        "resourceClaims": [
            {"name": "gpu-own", "resourceClaimTemplateName": "single-gpu"},
            {"name": "gpu-shared", "resourceClaimName": "shared-gpu"},
        ],
    }
    manifests = write_manifests(tmp_path, "app.yaml", template(), shared_claim(), pod("pod0", **spec))
    code, doc, _ = simulate(capsys, "-f", cluster(tmp_path), "-f", manifests)
    (entry,) = doc["pods"]
    assert code == 0 and entry["result"] == "bound"
    (status,) = entry["resourceClaimStatuses"]
    assert status["name"] == "gpu-own" and status["resourceClaimName"].startswith("pod0-gpu-own-")
    devices = {c["name"]: [(d["claim"], d["device"]) for d in c["devices"]] for c in entry["containers"]}
    own = devices["container0"]
    assert own == [(status["resourceClaimName"], own[0][1])]
    assert devices["container1"] == devices["container2"] == [("shared-gpu", devices["container1"][0][1])]
    assert own[0][1] != devices["container1"][0][1]
    claims = {c["name"]: c for c in entry["claims"]}
    assert [r["name"] for r in claims["shared-gpu"]["reservedFor"]] == ["pod0"]


def _one_gpu_from_the_template() -> dict[str, Any]:
    """A pod spec: container `main` uses claim `gpu`, made from template `single-gpu`."""
    return {
        "containers": [container("main", "gpu")],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
    }


# --- workloads ----------------------------------------------------------------------------------------------


def test_a_deployment_of_8_one_gpu_replicas_fills_two_nodes_of_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _one_gpu_from_the_template()
    manifests = write_manifests(tmp_path, "app.yaml", template(), deployment(8, spec))
    code, doc, _ = simulate(capsys, "-f", cluster(tmp_path, nodes=2), "-f", manifests)
    pods = doc["pods"]
    assert code == 0 and [p["result"] for p in pods] == ["bound"] * 8
    assert sorted(p["node"] for p in pods) == ["n1"] * 4 + ["n2"] * 4
    devices = [(p["node"], p["containers"][0]["devices"][0]["device"]) for p in pods]
    assert len(set(devices)) == 8  # every replica its own GPU
    prefix = pods[0]["name"].rsplit("-", 1)[0]
    assert prefix.startswith("trainer-") and all(p["name"].startswith(prefix + "-") for p in pods)


def test_the_ninth_replica_of_a_full_cluster_is_unschedulable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _one_gpu_from_the_template()
    manifests = write_manifests(tmp_path, "app.yaml", template(), deployment(9, spec))
    code, doc, _ = simulate(capsys, "-f", cluster(tmp_path, nodes=2), "-f", manifests)
    assert code == 0 and [p["result"] for p in doc["pods"]].count("bound") == 8
    last = doc["pods"][-1]
    assert (last["result"], last["reason"]) == (
        "unschedulable",
        "0/2 nodes are available: 2 cannot allocate all claims.",
    )


def test_a_template_no_device_can_satisfy_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = template(selector='device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("90Gi")) >= 0')
    spec = _one_gpu_from_the_template()
    manifests = write_manifests(tmp_path, "app.yaml", big, pod("p", **spec))
    code, doc, _ = simulate(capsys, "-f", cluster(tmp_path), "-f", manifests)
    (entry,) = doc["pods"]
    assert code == 0
    assert (entry["result"], entry["reason"]) == (
        "unschedulable",
        "0/1 nodes are available: 1 cannot allocate all claims.",
    )


def test_the_same_seed_gives_the_same_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _one_gpu_from_the_template()
    manifests = write_manifests(tmp_path, "app.yaml", template(), deployment(2, spec))
    _, first, _ = simulate(capsys, "-f", cluster(tmp_path), "-f", manifests)
    _, second, _ = simulate(capsys, "-f", cluster(tmp_path), "-f", manifests)
    names = [(p["name"], p["resourceClaimStatuses"][0]["resourceClaimName"]) for p in first["pods"]]
    assert names == [(p["name"], p["resourceClaimStatuses"][0]["resourceClaimName"]) for p in second["pods"]]


def test_statefulset_pods_are_named_by_ordinal() -> None:
    sts = StatefulSet.model_validate(
        {
            "metadata": {"name": "db", "namespace": "data"},
            "spec": {"replicas": 3, "ordinals": {"start": 5}, "template": {"spec": {"containers": []}}},
        }
    )
    pods = expand(sts, random.Random(0))
    assert [(p.name, p.namespace) for p in pods] == [("db-5", "data"), ("db-6", "data"), ("db-7", "data")]


@pytest.mark.parametrize(
    ("parallelism", "completions", "count"), [(None, None, 1), (4, None, 4), (4, 2, 2), (0, 3, 0)]
)
def test_a_job_runs_parallelism_pods_but_never_more_than_completions(
    parallelism: int | None, completions: int | None, count: int
) -> None:
    job = Job.model_validate(
        {
            "metadata": {"name": "train"},
            "spec": {"parallelism": parallelism, "completions": completions, "template": {"spec": {}}},
        }
    )
    pods = expand(job, random.Random(0))
    assert len(pods) == count
    assert all(p.name.startswith("train-") and len(p.name) == len("train-") + 5 for p in pods)


def test_indexed_job_pods_carry_their_completion_index() -> None:
    job = Job.model_validate(
        {"metadata": {"name": "j"}, "spec": {"parallelism": 2, "completionMode": "Indexed", "template": {}}}
    )
    pods = expand(job, random.Random(0))
    assert [p.name[: len("j-0-")] for p in pods] == ["j-0-", "j-1-"]
    assert [(p.metadata.annotations or {})["batch.kubernetes.io/job-completion-index"] for p in pods] == [
        "0",
        "1",
    ]


def test_deployment_pods_carry_the_pod_template_hash_of_their_replicaset() -> None:
    d = Deployment.model_validate(deployment(2, {"containers": []}))
    pods = expand(d, random.Random(3))
    hashes = {(p.metadata.labels or {})["pod-template-hash"] for p in pods}
    (h,) = hashes
    assert all(p.name.startswith(f"trainer-{h}-") for p in pods)
    assert all((p.metadata.labels or {})["app"] == "trainer" for p in pods)
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_safe_encode_maps_each_byte_onto_the_generator_alphabet() -> None:
    """apimachinery rand.SafeEncodeString: alphanums[int(b) % len(alphanums)]."""
    assert (
        safe_encode("09") == "bcdfghjklmnpqrstvwxz2456789"[48 % 27] + "bcdfghjklmnpqrstvwxz2456789"[57 % 27]
    )


# --- shared claims ------------------------------------------------------------------------------------------


def test_pods_sharing_a_claim_share_its_allocation_and_each_reserve_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = [
        pod(
            f"p{i}",
            containers=[container("c", "g")],
            resourceClaims=[{"name": "g", "resourceClaimName": "shared-gpu"}],
        )
        for i in range(3)
    ]
    manifests = write_manifests(tmp_path, "app.yaml", shared_claim(), *pods)
    code, doc, _ = simulate(capsys, "-f", cluster(tmp_path, nodes=2), "-f", manifests)
    entries = doc["pods"]
    assert code == 0 and [p["result"] for p in entries] == ["bound"] * 3
    assert len({p["node"] for p in entries}) == 1  # a later pod goes where the allocation is available
    allocations = {json.dumps(p["claims"][0]["allocation"], sort_keys=True) for p in entries}
    assert len(allocations) == 1
    assert [r["name"] for r in entries[-1]["claims"][0]["reservedFor"]] == ["p0", "p1", "p2"]


def test_a_claim_reserved_for_256_pods_takes_no_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ResourceClaimReservedForMaxSize: the DynamicResources PreFilter answers `resourceclaim in use`."""
    claim = shared_claim()
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": GPU_DRIVER, "pool": "n1", "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": f"r{i}", "uid": f"u{i}"} for i in range(256)],
    }
    late = pod(
        "late",
        containers=[container("c", "g")],
        resourceClaims=[{"name": "g", "resourceClaimName": "shared-gpu"}],
    )
    manifests = write_manifests(tmp_path, "app.yaml", claim, late)
    code, doc, _ = simulate(capsys, "-f", cluster(tmp_path), "-f", manifests)
    (entry,) = doc["pods"]
    assert code == 0
    assert (entry["result"], entry["reason"]) == (
        "unschedulable",
        "0/1 nodes are available: resourceclaim in use.",
    )


def test_an_export_with_the_generated_claims_is_read_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cluster export holds the claim the controller made and the pod's resourceClaimStatuses: no new
    claim is generated, and the output names no resourceClaimStatuses of its own."""
    raw = pod(
        "p",
        containers=[container("c", "gpu")],
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
    ).to_api()
    raw["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]}
    generated = shared_claim("p-gpu-abcde")
    manifests = write_manifests(tmp_path, "app.yaml", template(), generated, raw)
    code, doc, _ = simulate(capsys, "-f", cluster(tmp_path), "-f", manifests)
    (entry,) = doc["pods"]
    assert code == 0 and entry["result"] == "bound"
    assert "resourceClaimStatuses" not in entry
    assert [c["name"] for c in entry["claims"]] == ["p-gpu-abcde"]
