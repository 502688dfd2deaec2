"""`dra-capacity simulate --explain`: the scheduler's summary line stays, and each pod or claim that did not
fit says why, per node and per request, in `-o json|yaml` (an added `explain` key) and under its line in
`-o table`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.simulate_cli import run_simulate, write_manifests
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from localcluster.objects import make_claim

SUMMARY = "0/2 nodes are available: 2 cannot allocate all claims."


def _cluster(tmp_path: Path, *nodes: Any, cls: Any = None, gpus: int = 1) -> str:
    nodes = nodes or (node("n1"), node("n2"))
    slices = [gpu_slice(n.name, gpus) for n in nodes]
    return write_manifests(tmp_path, "cluster.yaml", cls or gpu_class(), *nodes, *slices)


def _pods(tmp_path: Path, *pods: Any) -> str:
    return write_manifests(tmp_path, "pods.yaml", *pods)


def test_typo_in_the_class_capacity_is_named_on_every_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cls = gpu_class(shares=None)
    cls.spec.extended_resource_capacity_requests = gpu_class().spec.extended_resource_capacity_requests
    assert cls.spec.extended_resource_capacity_requests is not None
    requests = cls.spec.extended_resource_capacity_requests.requests or {}
    cls.spec.extended_resource_capacity_requests.requests = {"shraes": requests["shares"]}
    code, out, _ = run_simulate(
        capsys,
        "--explain",
        "-f",
        _cluster(tmp_path, cls=cls),
        "-f",
        _pods(tmp_path, pod("web", {GPU_SHARED: 1})),
    )
    entry = json.loads(out)["pods"][0]
    assert code == 0 and entry["result"] == "unschedulable" and entry["reason"] == SUMMARY
    assert entry["explain"] == [
        "on 2 nodes: claim default/<extended-resources>, request container-0-request-0: no device publishes "
        'capacity "shraes" (devices advertise: shares) (nodes: n1, n2)'
    ]


def test_full_gpus_say_shares_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = [pod(f"web-{i}", {GPU_SHARED: 1}) for i in range(9)]
    _, out, _ = run_simulate(capsys, "--explain", "-f", _cluster(tmp_path), "-f", _pods(tmp_path, *pods))
    entries = json.loads(out)["pods"]
    assert [e["result"] for e in entries] == ["bound"] * 8 + ["unschedulable"]
    assert all(e["explain"] == [] for e in entries[:8])
    assert entries[8]["explain"] == [
        "on 2 nodes: claim default/<extended-resources>, request container-0-request-0: request shares=1: "
        "the one matching device is full (4/4 shares used) (nodes: n1, n2)"
    ]


def test_node_taint_and_node_selector_are_said_per_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tainted = node("n1", taints=[{"key": "nvidia.com/gpu", "value": "maintenance", "effect": "NoSchedule"}])
    other = node("n2", labels={"kubernetes.io/hostname": "n2", "gpu": "h100"})
    p = pod("web", {GPU_SHARED: 1}, nodeSelector={"gpu": "a100"})
    _, out, _ = run_simulate(
        capsys, "--explain", "-f", _cluster(tmp_path, tainted, other), "-f", _pods(tmp_path, p)
    )
    entry = json.loads(out)["pods"][0]
    assert entry["reason"] == (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s)."
    )
    assert entry["explain"] == [
        "on 1 node: node selector mismatch (gpu=a100 not among the node's labels) (nodes: n2)",
        "on 1 node: node taint nvidia.com/gpu=maintenance:NoSchedule not tolerated (nodes: n1)",
    ]


def test_without_explain_the_output_has_no_explain_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = _pods(tmp_path, pod("big", {GPU_SHARED: 2}))
    _, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path), "-f", pods)
    entry = json.loads(out)["pods"][0]
    assert entry["reason"] == SUMMARY and "explain" not in entry


def test_explain_keeps_every_other_key_and_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = _pods(tmp_path, *(pod(f"web-{i}", {GPU_SHARED: 1}) for i in range(9)))
    cluster = _cluster(tmp_path)
    _, plain, _ = run_simulate(capsys, "--seed", "1", "-f", cluster, "-f", pods)
    _, explained, _ = run_simulate(capsys, "--seed", "1", "--explain", "-f", cluster, "-f", pods)

    def view(text: str) -> list[tuple[Any, ...]]:
        return [
            (sorted(k for k in p if k != "explain"), p["result"], p["reason"], p["node"])
            for p in json.loads(text)["pods"]
        ]

    assert view(explained) == view(plain)
    assert all("explain" in p for p in json.loads(explained)["pods"])


def test_table_prints_the_reasons_under_the_pod_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = _pods(tmp_path, pod("big", {GPU_SHARED: 2}))
    _, out, err = run_simulate(capsys, "--explain", "-o", "table", "-f", _cluster(tmp_path), "-f", pods)
    lines = out.splitlines()
    at = lines.index(f"default/big: unschedulable: {SUMMARY}")
    assert lines[at + 1] == (
        "  on 2 nodes: claim default/<extended-resources>, request container-0-request-0: needs 2 devices, "
        "1 of 1 matching device available (nodes: n1, n2)"
    )
    assert "on 2 nodes" not in err


def _claim(name: str, memory: str) -> dict[str, Any]:
    return (
        make_claim(name).namespace("ml").request("gpu", "gpu.nvidia.com-shared-1", {"memory": memory}).obj()
    )


def test_claim_mode_explains_a_capacity_the_devices_lack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = _cluster(tmp_path, node("n1"))
    claims = write_manifests(tmp_path, "claims.yaml", _claim("train", "90Gi"))
    _, out, _ = run_simulate(capsys, "--explain", "-f", cluster, "-f", claims)
    doc = json.loads(out)
    assert doc["result"] == "unschedulable" and doc["reason"] == "cannot allocate all claims"
    assert doc["explain"] == [
        'claim ml/train, request gpu: no device publishes capacity "memory" (devices advertise: shares)'
    ]


def test_claim_mode_allocated_has_an_empty_explain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = _cluster(tmp_path, node("n1"))
    claim = _claim("train", "1")
    claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"] = {"shares": "1"}
    _, out, _ = run_simulate(
        capsys, "--explain", "-f", cluster, "-f", write_manifests(tmp_path, "claims.yaml", claim)
    )
    doc = json.loads(out)
    assert doc["result"] == "allocated" and doc["explain"] == []


def test_equal_pods_are_diagnosed_again_after_the_state_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = [pod("big-0", {GPU_SHARED: 2}), *(pod(f"web-{i}", {GPU_SHARED: 1}) for i in range(4))]
    pods.append(pod("big-1", {GPU_SHARED: 2}))
    _, out, _ = run_simulate(
        capsys, "--explain", "-f", _cluster(tmp_path, node("n1")), "-f", _pods(tmp_path, *pods)
    )
    entries = json.loads(out)["pods"]
    prefix = "on 1 node: claim default/<extended-resources>, request container-0-request-0: "
    assert entries[0]["explain"] == [prefix + "needs 2 devices, 1 of 1 matching device available (nodes: n1)"]
    assert entries[5]["explain"] == [
        prefix + "request shares=1: the one matching device is full (4/4 shares used) (nodes: n1)"
    ]
