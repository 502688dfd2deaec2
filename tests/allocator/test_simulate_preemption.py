"""simulate's preemption on shares: the victims the allocator's share count frees, reported in the JSON,
the table and --explain (allocator/scheduling/preemption.py; upstream DefaultPreemption)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.simulate_cli import write_manifests
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from dra_capacity.cli import main


def _simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["simulate", *argv])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.startswith("{") else {}, captured.out + captured.err


def _running(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cluster: str,
    low: list[tuple[str, int, int]],
    labels: dict[str, dict[str, str]] | None = None,
) -> str:
    """The low-priority pods (name, priority, shares) placed by a first run, written back as running pods
    holding their allocated extended-resource claims: the cluster a preemptor then meets."""
    pods = {name: pod(name, {GPU_SHARED: shares}, priority=prio) for name, prio, shares in low}
    pending = write_manifests(tmp_path, "low.yaml", *pods.values())
    _, out, _ = _simulate(capsys, "-f", cluster, "-f", pending)
    docs: list[Any] = []
    for i, entry in enumerate(out["pods"]):
        assert entry["result"] == "bound", entry
        raw = pods[entry["name"]].to_api()
        raw["spec"]["nodeName"] = entry["node"]
        raw["metadata"]["labels"] = (labels or {}).get(entry["name"], {})
        raw["status"] = {
            "phase": "Running",
            "startTime": f"2026-01-01T00:00:{i:02d}Z",
            "extendedResourceClaimStatus": entry["extendedResourceClaimStatus"],
        }
        docs.extend([raw, entry["claim"]])
    return write_manifests(tmp_path, "running.yaml", *docs)


def _cluster(tmp_path: Path, nodes: int = 1, gpus: int = 1, shares: int = 1) -> str:
    names = [f"n{i + 1}" for i in range(nodes)]
    slices = [gpu_slice(n, gpus, shares) for n in names]
    return write_manifests(tmp_path, "cluster.yaml", gpu_class(), *[node(n) for n in names], *slices)


def _devices(entry: dict[str, Any]) -> list[str]:
    return [r["device"] for r in entry["claim"]["status"]["allocation"]["devices"]["results"]]


def test_a_pod_needing_shares_on_two_gpus_evicts_one_holder_on_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two GPUs of 2 shares, each share held by one pod (a, b on one GPU; c, d on the other, by binpack).
    A pod needing one share on each of two GPUs fits only when a share is free on both: reprieving d, then
    c, then b, then a leaves c and a as victims, one per GPU (all its shares or none), where counting pods
    alone would evict the two lowest, a and b."""
    cluster = _cluster(tmp_path, gpus=2, shares=2)
    running = _running(tmp_path, capsys, cluster, [("a", 1, 1), ("b", 2, 1), ("c", 3, 1), ("d", 4, 1)])
    high = write_manifests(tmp_path, "high.yaml", pod("high", {GPU_SHARED: 2}, priority=1000))
    code, out, _ = _simulate(capsys, "-f", cluster, "-f", running, "-f", high)
    assert code == 0
    (entry,) = out["pods"]
    assert entry["result"] == "bound" and entry["node"] == "n1"
    assert entry["victims"] == [{"namespace": "default", "name": v} for v in ("c", "a")]
    assert sorted(_devices(entry)) == ["gpu-0", "gpu-1"]


def test_the_victims_freed_shares_are_counted_not_the_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control of the case above: when the preemptor needs one share, the lowest pod alone goes."""
    cluster = _cluster(tmp_path, gpus=2, shares=2)
    running = _running(tmp_path, capsys, cluster, [("a", 1, 1), ("b", 2, 1), ("c", 3, 1), ("d", 4, 1)])
    high = write_manifests(tmp_path, "high.yaml", pod("high", {GPU_SHARED: 1}, priority=1000))
    _, out, _ = _simulate(capsys, "-f", cluster, "-f", running, "-f", high)
    (entry,) = out["pods"]
    assert entry["victims"] == [{"namespace": "default", "name": "a"}]


def test_preemption_policy_never_waits_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = _cluster(tmp_path)
    running = _running(tmp_path, capsys, cluster, [("a", 1, 1)])
    high = pod("high", {GPU_SHARED: 1}, priority=1000, preemptionPolicy="Never")
    _, out, _ = _simulate(
        capsys, "-f", cluster, "-f", running, "-f", write_manifests(tmp_path, "h.yaml", high)
    )
    (entry,) = out["pods"]
    assert entry["result"] == "unschedulable" and "victims" not in entry
    assert entry["reason"].endswith(" preemption: not eligible due to preemptionPolicy=Never.")


def test_no_lower_priority_pod_means_no_preemption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The negative control: a pod of equal priority is never a victim."""
    cluster = _cluster(tmp_path)
    running = _running(tmp_path, capsys, cluster, [("a", 1000, 1)])
    high = write_manifests(tmp_path, "h.yaml", pod("high", {GPU_SHARED: 1}, priority=1000))
    _, out, _ = _simulate(capsys, "-f", cluster, "-f", running, "-f", high)
    (entry,) = out["pods"]
    assert entry["result"] == "unschedulable"
    assert entry["reason"].endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_the_node_with_the_lowest_priority_victim_is_picked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pickOneNodeForPreemption's second criterion, across two candidate nodes; --explain and the table say
    which pods go and why."""
    cluster = _cluster(tmp_path, nodes=2)
    running = _running(tmp_path, capsys, cluster, [("x", 20, 1), ("y", 10, 1)])
    high = write_manifests(tmp_path, "h.yaml", pod("high", {GPU_SHARED: 1}, priority=1000))
    _, out, _ = _simulate(capsys, "-f", cluster, "-f", running, "-f", high, "--explain")
    (entry,) = out["pods"]
    assert [v["name"] for v in entry["victims"]] == ["y"]
    (y_node,) = {p["node"] for p in [entry]}
    assert any("evicting default/y (priority 10)" in line for line in entry["explain"])
    assert any("candidates" in line for line in entry["explain"])
    _, _, table = _simulate(capsys, "-f", cluster, "-f", running, "-f", high, "-o", "table")
    assert f"default/high: bound on {y_node} by preempting default/y" in table


def test_a_pod_disruption_budget_from_the_input_steers_preemption_to_another_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pickOneNodeForPreemption's first criterion: the node whose victim violates no PDB wins, even with a
    higher-priority victim; without the PDB the lower-priority victim goes (the control)."""
    cluster = _cluster(tmp_path, nodes=2)
    running = _running(
        tmp_path, capsys, cluster, [("db", 10, 1), ("web", 20, 1)], labels={"db": {"app": "db"}}
    )
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": 0},
    }
    high = write_manifests(tmp_path, "h.yaml", pod("high", {GPU_SHARED: 1}, priority=1000))
    budgets = write_manifests(tmp_path, "pdb.yaml", pdb)
    _, out, _ = _simulate(capsys, "-f", cluster, "-f", running, "-f", high, "-f", budgets)
    assert [v["name"] for v in out["pods"][0]["victims"]] == ["web"]
    _, out, _ = _simulate(capsys, "-f", cluster, "-f", running, "-f", high)
    assert [v["name"] for v in out["pods"][0]["victims"]] == ["db"]


def test_cpu_freed_by_a_victim_counts_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NodeResourcesFit sees the victim's requests gone: a pod short of cpu evicts the lower-priority one."""
    lo = pod("lo", {"cpu": "3"}, priority=1, nodeName="n1").to_api()
    lo["status"] = {"phase": "Running"}
    cluster = write_manifests(tmp_path, "c.yaml", node("n1", {"cpu": "4"}), lo)
    high = write_manifests(tmp_path, "h.yaml", pod("high", {"cpu": "2"}, priority=100))
    _, out, _ = _simulate(capsys, "-f", cluster, "-f", high)
    (entry,) = out["pods"]
    assert entry["result"] == "bound" and entry["victims"] == [{"namespace": "default", "name": "lo"}]
