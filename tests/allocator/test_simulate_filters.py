"""`dra-capacity simulate` end to end on inputs that use the scheduler features beyond node fit: gated pods,
anti-affinity, unsupported fields, preemption, and a --node that nothing names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.simulate_cli import write_manifests
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from dra_capacity.cli import main
from localcluster.objects import make_claim


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["simulate", *argv])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else {}, captured.err


def _cluster(tmp_path: Path, nodes: int = 2) -> str:
    names = [f"n{i + 1}" for i in range(nodes)]
    return write_manifests(
        tmp_path, "cluster.yaml", gpu_class(), *[node(n) for n in names], *[gpu_slice(n, 1) for n in names]
    )


def _statefulset_pod(i: int) -> dict[str, Any]:
    raw = pod(f"rdma-{i}", {GPU_SHARED: 1}).to_api()
    raw["metadata"]["labels"] = {"app": "rdma"}
    term = {"labelSelector": {"matchLabels": {"app": "rdma"}}, "topologyKey": "kubernetes.io/hostname"}
    raw["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return raw


def test_gated_pods_are_reported_and_the_rest_placed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SchedulingGates: the gated pod is `gated` and holds nothing; the ungated pod after it is bound."""
    gated = pod("gated", {GPU_SHARED: 4}, schedulingGates=[{"name": "example.com/quota"}])
    pods = write_manifests(tmp_path, "p.yaml", gated, pod("after", {GPU_SHARED: 4}))
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), node("n1"), gpu_slice("n1", 4, shares=1))
    code, out, _ = _run(capsys, "-f", cluster, "-f", pods)
    first, second = out["pods"]
    assert code == 0
    assert (first["result"], first["reason"], first["node"], first["claim"]) == (
        "gated",
        "waiting for scheduling gates: [example.com/quota]",
        None,
        None,
    )
    assert second["result"] == "bound"


def test_required_anti_affinity_keeps_replicas_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """InterPodAffinity: a StatefulSet with required hostname anti-affinity gets one pod per node."""
    pods = write_manifests(tmp_path, "p.yaml", *[_statefulset_pod(i) for i in range(3)])
    _, out, _ = _run(capsys, "-f", _cluster(tmp_path, 2), "-f", pods)
    assert [p["node"] for p in out["pods"]] == ["n1", "n2", None]
    assert out["pods"][2]["reason"] == (
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    )


def test_node_flag_still_counts_pods_on_other_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--node limits where pods go, not what the inter-pod filters see: upstream counts every node's pods."""
    running = _statefulset_pod(0)
    running["spec"]["nodeName"] = "n1"
    running["metadata"]["name"] = "rdma-running"
    pods = write_manifests(tmp_path, "p.yaml", running, _statefulset_pod(1))
    _, out, _ = _run(capsys, "--node", "n1", "-f", _cluster(tmp_path, 2), "-f", pods)
    assert out["pods"][0]["result"] == "unschedulable"


def test_unsupported_pods_are_reported_not_placed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    disk = pod("db", {GPU_SHARED: 1}, volumes=[{"name": "data", "gcePersistentDisk": {"pdName": "d"}}])
    pods = write_manifests(tmp_path, "p.yaml", disk)
    _, out, _ = _run(capsys, "-f", _cluster(tmp_path, 1), "-f", pods)
    (entry,) = out["pods"]
    assert entry["result"] == "unsupported" and entry["node"] is None
    assert entry["reason"].startswith("not simulated: spec.volumes[0].gcePersistentDisk (VolumeRestrictions")


def test_a_pod_whose_claim_is_missing_is_unschedulable_with_upstreams_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """VolumeRestrictions' PreFilter: the claim must exist (volumerestrictions/volume_restrictions.go)."""
    pvc = pod("db", {GPU_SHARED: 1}, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}])
    pods = write_manifests(tmp_path, "p.yaml", pvc)
    _, out, _ = _run(capsys, "-f", _cluster(tmp_path, 1), "-f", pods)
    (entry,) = out["pods"]
    assert entry["result"] == "unschedulable"
    assert entry["reason"] == '0/1 nodes are available: persistentvolumeclaim "d" not found.'


def test_unschedulable_pod_with_nothing_to_preempt_says_why_as_postfilter_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write_manifests(tmp_path, "p.yaml", pod("big", {"cpu": "100"}, priority=1000))
    _, out, _ = _run(capsys, "-f", _cluster(tmp_path, 1), "-f", pods)
    assert out["pods"][0]["reason"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def _claim(name: str) -> dict[str, Any]:
    return make_claim(name).request("gpu", "gpu.nvidia.com-shared-1").obj()


def test_a_node_flag_nothing_names_warns_with_close_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bare-node contract holds (exit 0, a result), but a typo no longer passes silently."""
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), gpu_slice("worker-1", 1))
    claims = write_manifests(tmp_path, "claims.yaml", _claim("a"))
    code, out, err = _run(capsys, "--node", "worker-l", "-f", cluster, "-f", claims)
    assert code == 0 and out["node"] == "worker-l" and out["result"] == "unschedulable"
    assert err == (
        "warning: --node worker-l: no Node and no ResourceSlice names it; simulating a bare node of that "
        "name, which sees only slices for all nodes or selected by node labels; did you mean 'worker-1'?\n"
    )


def test_a_node_flag_a_slice_names_is_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write_manifests(tmp_path, "c.yaml", gpu_class(), gpu_slice("worker-1", 1))
    claims = write_manifests(tmp_path, "claims.yaml", _claim("a"))
    code, out, err = _run(capsys, "--node", "worker-1", "-f", cluster, "-f", claims)
    assert code == 0 and out["result"] == "allocated" and err == ""
