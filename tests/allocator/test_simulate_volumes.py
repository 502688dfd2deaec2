"""`dra-capacity simulate` with PVC pods: the volume plugins in the placement path (allocator/scheduling/
volumes.py wired into placement.py), and the PVs each placement takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.simulate_cli import write_manifests
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from dra_capacity.cli import main
from localcluster.objects import make_pv, make_pvc, make_storage_class, pvc_volume

LOCAL = "local"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    main(["simulate", *argv])
    return json.loads(capsys.readouterr().out)


def _cluster(tmp_path: Path, *extra: dict[str, Any]) -> str:
    nodes = ["n1", "n2", "n3"]
    return write_manifests(
        tmp_path,
        "cluster.yaml",
        gpu_class(),
        *[node(n) for n in nodes],
        *[gpu_slice(n, 1) for n in nodes],
        make_storage_class(LOCAL),
        *extra,
    )


def _pvc_pod(name: str, claim: str) -> dict[str, Any]:
    raw = pod(name, {GPU_SHARED: 1}).to_api()
    raw["spec"]["volumes"] = [pvc_volume("cache", claim)]
    return raw


def test_wait_for_first_consumer_pods_follow_their_local_pvs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two local PVs, on n3 and n2: each pod goes where a free PV is, and a third finds none."""
    storage = [
        make_pv("pv-n3").storage_class(LOCAL).local_to("n3").obj(),
        make_pv("pv-n2").storage_class(LOCAL).local_to("n2").obj(),
        *[make_pvc(f"cache-{i}").storage_class(LOCAL).obj() for i in range(3)],
    ]
    pods = write_manifests(tmp_path, "p.yaml", *[_pvc_pod(f"p{i}", f"cache-{i}") for i in range(3)])
    out = _run(capsys, "-f", _cluster(tmp_path, *storage), "-f", pods)
    assert [p["node"] for p in out["pods"]] == ["n2", "n3", None]
    assert out["pods"][2]["reason"] == (
        "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
    )


def test_pods_sharing_a_bound_claim_follow_its_pv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The second pod of a claim the first one bound sees it bound (the PV controller's part, settled)."""
    storage = [
        make_pv("pv-n1").storage_class(LOCAL).local_to("n1").access_modes("ReadWriteMany").obj(),
        make_pvc("shared").storage_class(LOCAL).access_modes("ReadWriteMany").obj(),
    ]
    pods = write_manifests(tmp_path, "p.yaml", _pvc_pod("a", "shared"), _pvc_pod("b", "shared"))
    out = _run(capsys, "-f", _cluster(tmp_path, *storage), "-f", pods)
    assert [p["node"] for p in out["pods"]] == ["n1", "n1"]


def test_an_unbound_immediate_claim_leaves_the_pod_unschedulable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = [
        make_storage_class("fast", "csi.example.com", "Immediate"),
        make_pvc("c").storage_class("fast").obj(),
    ]
    pods = write_manifests(tmp_path, "p.yaml", _pvc_pod("a", "c"))
    [entry] = _run(capsys, "-f", _cluster(tmp_path, *storage), "-f", pods)["pods"]
    assert entry["result"] == "unschedulable"
    assert entry["reason"] == "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."


def test_volume_reasons_come_before_dra_reasons(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """VolumeBinding filters before DynamicResources: a node without the PV says so even when its devices
    are full."""
    storage = [
        make_pv("pv-n1").storage_class(LOCAL).local_to("n1").obj(),
        make_pvc("c").storage_class(LOCAL).obj(),
    ]
    big = pod("big", {GPU_SHARED: 8}).to_api()
    big["spec"]["volumes"] = [pvc_volume("cache", "c")]
    pods = write_manifests(tmp_path, "p.yaml", big)
    [entry] = _run(capsys, "-f", _cluster(tmp_path, *storage), "-f", pods)["pods"]
    assert entry["reason"].startswith("0/3 nodes are available: ")
    assert "2 node(s) didn't find available persistent volumes to bind" in entry["reason"]


def test_the_storage_capacity_score_prefers_the_roomier_pv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """VolumeBinding's score with 1.37's default shape (upstream's "local volumes with close capacity are
    preferred"): 50Gi of a 200Gi PV scores 75, of a 100Gi PV 50, so n2 wins over the smaller name."""
    storage = [
        make_pv("pv-n1").storage_class(LOCAL).size("100Gi").local_to("n1").obj(),
        make_pv("pv-n2").storage_class(LOCAL).size("200Gi").local_to("n2").obj(),
        make_pvc("c").storage_class(LOCAL).size("50Gi").obj(),
    ]
    pods = write_manifests(tmp_path, "p.yaml", _pvc_pod("a", "c"))
    [entry] = _run(capsys, "-f", _cluster(tmp_path, *storage), "-f", pods)["pods"]
    assert entry["node"] == "n2"
