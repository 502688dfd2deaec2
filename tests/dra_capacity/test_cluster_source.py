"""`simulate --kubeconfig`: the cluster read with paginated LISTs through the real `kubernetes` client,
against the kube-apiserver test double over HTTPS; nothing is ever written."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubeapi import KubeAPIServer

from dra_capacity.cli import main
from dra_capacity.cluster_source import read_cluster
from localcluster.objects import make_slice

GPU = "nvidia.com/gpu.shared"
DRIVER = "gpu.nvidia.com"


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu-shared"},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
            "extendedResourceName": GPU,
        },
    }


def node(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n{i:02d}", "labels": {"kubernetes.io/hostname": f"n{i:02d}"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def node_slice(i: int) -> dict[str, Any]:
    return make_slice(f"n{i:02d}", DRIVER).name(f"n{i:02d}-gpus").devices({"name": "gpu-0"}).obj()


def pod(name: str, node_name: str | None = None, gpus: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/app:1",
                "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
            }
        ]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def seed_cluster(api: KubeAPIServer, nodes: int) -> None:
    api.seed(device_class())
    for i in range(nodes):
        api.seed(node(i))
        api.seed(node_slice(i))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_cluster_is_read_in_pages_of_chunk_size(
    kube_api: KubeAPIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_cluster(kube_api, 25)
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump(pod("new")))
    kube_api.clear_requests()
    code, out, _ = run(
        capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "--chunk-size", "4", "-f", str(pods)
    )
    assert code == 0
    [entry] = json.loads(out)["pods"]
    assert (entry["name"], entry["result"]) == ("new", "bound")
    node_lists = kube_api.requests_for("list", "nodes")
    assert len(node_lists) == math.ceil(25 / 4)
    assert all(r.query.get("limit") == "4" for r in node_lists)
    assert "continue" not in node_lists[0].query and all("continue" in r.query for r in node_lists[1:])
    assert len(kube_api.requests_for("list", "resourceslices.resource.k8s.io")) == math.ceil(25 / 4)


def test_every_simulated_kind_is_listed_and_nothing_is_written(
    kube_api: KubeAPIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_cluster(kube_api, 2)
    kube_api.clear_requests()
    code, _, _ = run(capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "--pending")
    assert code == 0
    listed = {r.resource for r in kube_api.requests if r.verb == "list"}
    assert listed == {
        "nodes",
        "pods",
        "resourceslices.resource.k8s.io",
        "deviceclasses.resource.k8s.io",
        "resourceclaims.resource.k8s.io",
        "persistentvolumeclaims",
        "persistentvolumes",
        "storageclasses.storage.k8s.io",
        "csinodes.storage.k8s.io",
        "csidrivers.storage.k8s.io",
        "csistoragecapacities.storage.k8s.io",
    }
    assert {r.method for r in kube_api.requests} == {"GET"}


def test_files_add_the_pods_to_place_and_the_clusters_pending_pods_wait(
    kube_api: KubeAPIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_cluster(kube_api, 1)
    kube_api.seed(pod("running", "n00", gpus=0))
    kube_api.seed(pod("pending-in-cluster"))
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump(pod("from-file")))
    code, out, _ = run(capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "-f", str(pods))
    assert code == 0
    # without --pending, the cluster's own pending pod is not placed: only the file's pods are
    assert [(p["name"], p["result"], p["file"]) for p in json.loads(out)["pods"]] == [
        ("from-file", "bound", str(pods))
    ]


def test_pending_places_the_clusters_own_pending_pods(
    kube_api: KubeAPIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_cluster(kube_api, 1)
    kube_api.seed(pod("a"))
    kube_api.seed(pod("b"))
    code, out, _ = run(capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "--pending", "-o", "json")
    assert code == 0
    result = json.loads(out)
    # one whole device on the only node: the first pod gets it, the second does not fit
    assert [(p["name"], p["result"]) for p in result["pods"]] == [("a", "bound"), ("b", "unschedulable")]
    assert result["pods"][0]["file"] == "cluster:pods"
    assert (
        run(capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "--pending", "--fail-unschedulable")[0]
        == 1
    )


def test_a_forbidden_list_is_one_error_line_and_exit_2(
    kube_api: KubeAPIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_cluster(kube_api, 1)
    kube_api.faults.fail("list", "resourceslices.resource.k8s.io", 403)
    code, out, err = run(capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "--pending")
    assert (code, out) == (2, "")
    assert err.startswith("dra-capacity simulate: error: cannot list resourceslices: 403 Forbidden")
    assert len(err.splitlines()) == 1


def test_a_missing_kubeconfig_or_context_is_exit_2(
    kube_api: KubeAPIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--kubeconfig", str(tmp_path / "nope"), "--pending")
    assert (code, out) == (2, "") and err.startswith("dra-capacity simulate: error: ")
    code, out, err = run(
        capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "--context", "ghost", "--pending"
    )
    assert (code, out) == (2, "") and "ghost" in err


def test_progress_goes_to_the_given_stream_and_ends_with_a_newline(kube_api: KubeAPIServer) -> None:
    seed_cluster(kube_api, 3)
    progress = io.StringIO()
    docs = read_cluster(str(kube_api.kubeconfig_path), None, pending=True, page_size=2, progress=progress)
    assert sorted(d.kind for d in docs).count("Node") == 3
    assert progress.getvalue().startswith("\rreading the cluster: ")
    assert progress.getvalue().endswith(
        "3 nodes, 3 resourceslices, 1 deviceclasses, 0 resourceclaims, 0 persistentvolumeclaims, "
        "0 persistentvolumes, 0 storageclasses, 0 csinodes, 0 csidrivers, 0 csistoragecapacities, 0 pods\n"
    )


def test_no_progress_line_when_stderr_is_not_a_terminal(
    kube_api: KubeAPIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_cluster(kube_api, 1)
    _, _, err = run(capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "--pending")
    assert "reading the cluster" not in err


def test_without_kubeconfig_the_kubeconfig_variable_is_used_as_kubectl_does(
    kube_api: KubeAPIServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_cluster(kube_api, 1)
    kube_api.seed(pod("a"))
    monkeypatch.setenv("KUBECONFIG", str(kube_api.kubeconfig_path))
    code, out, _ = run(capsys, "--pending")
    assert code == 0 and [p["name"] for p in json.loads(out)["pods"]] == ["a"]
